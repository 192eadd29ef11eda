"""Row scatters: out[o, idx[c], :] = src[o, c, :] (index_copy) or += (index_add), a
vector-core kernel that copies whole inner segments GM -> UB -> GM.

out is viewed as [O, D, I] (dense, already holding its initial values), the indices as C
integers, src as [O, C, I]: dense, or one element broadcast to every position (index_put of
a scalar). Each block takes a range of (o, c) units; it loads the indices once (read by the
scalar unit after an MTE2 -> S sync) and wraps negative ones as Python does.

index_add: each block takes a range of (o, c) units and stores with SetAtomicAdd, so
duplicate indices in one block or in several accumulate (atomic accumulation from many
blocks is legal on GM).

index_copy (and index_put without accumulate): the indices are data, so they may repeat, and
two blocks storing the same destination row plainly is a GM race on a 910B (which write lands
is up to the hardware). torch leaves duplicates "undefined", but its CPU kernel writes in
index order, so the last occurrence wins, and that is what the reference computes. So the
blocks split the *destination* rows instead (owner computes, as torch's own CPU
embedding_dense_backward splits num_weights): every block reads all the indices in order and
copies only the source rows whose destination it owns. Every destination row then has one
writer, whose MTE3 stores are in program order, so the last occurrence wins and no two
blocks touch the same bytes. The price is that every block looks at all C indices: a vector
filter picks out the block's candidates first (scatter_owner.py), so the scalar unit reads
C / 32 mask words and only its own indices.
"""

from __future__ import annotations

from dataclasses import dataclass

from sage.kernels.library.scatter_owner import filter_buffers, filter_lanes, owner_loop
from sage.kernels.library.source import DTYPE_SIZE, HEADER, dsl_dtype
from sage.kernels.target import Target

CHUNK_BYTES = 16384
MAX_INDICES = 16384
# SetAtomicAdd's types on Atlas A2 (Ascend C API reference, SetAtomicAdd): no 64-bit adds.
ATOMIC_ADD_DTYPES = {"float32", "float16", "bfloat16", "int32", "int16", "int8"}
FILL_DTYPES = {"float32", "float16", "bfloat16", "int32", "int16"}     # Duplicate's types


@dataclass(frozen=True)
class ScatterRowsSpec:
    name: str
    outer: int                 # O
    rows: int                  # D, the indexed axis of out
    inner: int                 # I, elements per copied segment
    count: int                 # C, indices
    dtype: str                 # src and out
    index_dtype: str           # int64 or int32
    accumulate: bool           # index_add (atomic) or index_copy
    src_broadcast: bool = False   # src is one element seen at every position
    out: str = "out"
    index: str = "idx"
    src: str = "src"
    out_offset: int = 0
    index_offset: int = 0
    src_offset: int = 0


def scatter_rows_args(spec: ScatterRowsSpec) -> list[str]:
    return [spec.out, spec.index, spec.src]


def _accumulate_loop(spec: ScatterRowsSpec, move: str, sliced: bool) -> str:
    """index_add: the block's (o, c) units, stores atomic; `move` copies src row t to GM offset dst.
    `sliced`: `ix` holds the block's own indices only (from t0)."""
    at = "t - self.t0" if sliced else f"t % {spec.count}"
    return f'''
        SetAtomicAdd()
        for t in range(self.t0, self.t1):
            o = t // {spec.count}
            r = ix.GetValue({at})
            if r < 0:
                r = r + {spec.rows}
            dst = {spec.out_offset} + (o * {spec.rows} + r) * {spec.inner}{move}
        SetAtomicNone()'''


def scatter_rows_source(spec: ScatterRowsSpec, target: Target, block_dim: int | None = None) -> str:
    if spec.accumulate and spec.dtype not in ATOMIC_ADD_DTYPES:
        raise ValueError(f"no atomic add of {spec.dtype} on Atlas A2 (types: {sorted(ATOMIC_ADD_DTYPES)})")
    if spec.src_broadcast and spec.dtype not in FILL_DTYPES:
        raise ValueError(f"a broadcast {spec.dtype} value (Duplicate fills {sorted(FILL_DTYPES)})")
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    dt, it = dsl_dtype(spec.dtype), dsl_dtype(spec.index_dtype)
    chunk = max(1, CHUNK_BYTES // es)
    if spec.src_broadcast:
        chunk = min(chunk, spec.inner)
    # index_add: units are (o, c) pairs; index_copy: (o, r) destination rows, each with one owner.
    units = spec.outer * (spec.count if spec.accumulate else spec.rows)
    blocks = max(1, min(block_dim or target.vector_cores, units))
    per = -(-units // blocks)
    blocks = -(-units // per)
    n = spec.name
    # index_add of one outer slice: a block reads only its own indices [t0, t1); else all of them.
    sliced = spec.accumulate and spec.outer == 1
    held = per if sliced else spec.count
    if held > MAX_INDICES:
        raise ValueError(f"{held} indices do not fit in UB at once (at most {MAX_INDICES})")
    lanes = 0 if spec.accumulate else filter_lanes(spec.count, spec.rows, spec.index_dtype)
    index_bytes = max(-(-held * ies // 32) * 32, lanes * 4)
    first, length = ("self.t0", f"(self.t1 - self.t0) * {ies}") if sliced else ("0", f"{spec.count * ies}")
    if spec.src_broadcast:
        # One value, filled once into a chunk of UB, stored to every destination segment.
        buffers = f'''
        self.fb = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.fb, ({chunk} * {es} + 31) // 32 * 32)
        self.vb = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.vb, 32)'''
        prologue = f'''
        one = self.vb.Get({dt})
        DataCopyPad(one, self.g_s[{spec.src_offset}], DataCopyExtParams(1, {es}, 0, 0, 0),
                    DataCopyPadExtParams(False, 0, 0, 0))
        SetFlag(HardEvent.MTE2_S, 1)
        WaitFlag(HardEvent.MTE2_S, 1)
        fill = self.fb.Get({dt})
        Duplicate(fill, one.GetValue(0), {chunk})
        SetFlag(HardEvent.V_MTE3, 0)
        WaitFlag(HardEvent.V_MTE3, 0)'''
        move = f'''
            for c in range(0, {spec.inner}, {chunk}):
                k = min({chunk}, {spec.inner} - c)
                DataCopyPad(self.g_o[dst + c], fill, DataCopyExtParams(1, k * {es}, 0, 0, 0))'''
    else:
        buffers = f'''
        self.q = TQueBind(TPosition.VECIN, TPosition.VECOUT, 2)
        self.pipe.InitBuffer(self.q, 2, ({chunk} * {es} + 31) // 32 * 32)'''
        prologue = ""
        move = f'''
            src = {spec.src_offset} + t * {spec.inner}
            for c in range(0, {spec.inner}, {chunk}):
                k = min({chunk}, {spec.inner} - c)
                y = self.q.AllocTensor({dt})
                DataCopyPad(y, self.g_s[src + c], DataCopyExtParams(1, k * {es}, 0, 0, 0),
                            DataCopyPadExtParams(False, 0, 0, 0))
                self.q.EnQue(y)
                y = self.q.DeQue({dt})
                DataCopyPad(self.g_o[dst + c], y, DataCopyExtParams(1, k * {es}, 0, 0, 0))
                self.q.FreeTensor(y)'''
    walk = _accumulate_loop(spec, move, sliced) if spec.accumulate else owner_loop(
        spec.rows, spec.count, spec.out_offset, spec.inner, spec.index_dtype, lanes, move)
    return f'''{HEADER}
class Kernel_{n}:
    def Init(self, out, idx, src):
        self.t0 = GetBlockIdx() * {per}
        self.t1 = min({units}, self.t0 + {per})
        self.g_o = GlobalTensor()
        self.g_o.SetGlobalBuffer(out)
        self.g_i = GlobalTensor()
        self.g_i.SetGlobalBuffer(idx)
        self.g_s = GlobalTensor()
        self.g_s.SetGlobalBuffer(src)
        self.pipe = TPipe()
        self.ib = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.ib, {index_bytes}){buffers}{filter_buffers(lanes)}

    def Process(self):
        if self.t0 >= self.t1:
            return
        ix = self.ib.Get({it})
        DataCopyPad(ix, self.g_i[{spec.index_offset} + {first}], DataCopyExtParams(1, {length}, 0, 0, 0),
                    DataCopyPadExtParams(False, 0, 0, 0))
        SetFlag(HardEvent.MTE2_S, 0)
        WaitFlag(HardEvent.MTE2_S, 0){prologue}{walk}


@kernel
def {n}_kernel(out, idx, src):
    op = Kernel_{n}()
    op.Init(out, idx, src)
    op.Process()


def {n}_launch(out, idx, src):
    {n}_kernel[{blocks}](out, idx, src)
'''
