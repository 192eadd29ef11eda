"""Row-wise sort and top-k along the last axis of a dense [O, N] tensor, with torch's int64
indices, on the vector unit's `Sort` / `TopK` (stable: equal keys keep their index order,
in both directions, as torch's stable sort).

`Sort`/`TopK` take half or float keys: float32 and float16 sort as they are, bfloat16
widens to float32 exactly; int32 sorts on float32 keys (exact order for |x| <= 2^24, see
`int_keys`) and its values are gathered back from the int32 row by index, so they are
always exact. Indices come as int32 and widen to int64 with one Cast.

- rows mode: a unit is R rows loaded in one copy (row pitch P, a multiple of 16 elements),
  one `Sort`/`TopK` per row.
- merge (a row too long for UB, a sort): sorted runs and MrgSort passes through a GM
  workspace (sort_merge.py).
- chunked top-k (a row too long for UB, k small): each chunk of the row gives its k best
  with global indices into a candidate list (each chunk's k padded to 32 B with the worst
  value), and one last `TopK` over the candidates picks the row's k; ties still resolve to
  the lower index, since candidates are in index order among equals.
"""

from __future__ import annotations

from dataclasses import dataclass

from sage.kernels.library.sort_merge import MERGE_BUDGET, merge_source, merge_window
from sage.kernels.library.source import DTYPE_SIZE, HEADER, bind_globals, dsl_dtype
from sage.kernels.target import Target

UB_BUDGET = 160 * 1024     # bytes of UB a unit's buffers may take (the rest: the pipe's slack)
MAX_ROWS = 64              # rows per unit in rows mode
CHUNK = 8192               # elements per chunk of a long row in chunked top-k
KEY = {"float32": "float32", "float16": "float16", "bfloat16": "float32", "int32": "float32"}


@dataclass(frozen=True)
class SortSpec:
    name: str
    rows: int                  # O
    length: int                # N
    k: int                     # N for a sort
    dtype: str                 # x and the values
    # descending sort / largest top-k: an int (0/1) so that a shape-generic trace passes it at
    # launch, as Ascend C's TopK takes isLargest as a runtime argument, not a template one
    # (https://www.hiascend.com/doc_center/source/zh/CANNCommunityEdition/910beta2/API/ascendcopapi/atlasascendc_api_07_0836.html):
    # level1/9_top_k's largest and smallest cases are then one kernel text
    descending: int
    topk: bool = False
    x: str = "x"
    values: str = "values"
    indices: str = "indices"
    x_offset: int = 0
    index_dtype: str = "int64"  # torch's; int32 for a temporary another kernel widens
    # GM workspace of a merge sort (rows too long for UB): each core's two rows of keys
    # (KEY dtype) and of int32 indices; empty when the plan needs none
    work_keys: str = ""
    work_index: str = ""
    # nothing reads the indices (torch.sort(x)[0]): a merge sort moves keys only (fewer GM
    # copies); the indices output is left unwritten
    values_only: bool = False


def sort_args(spec: SortSpec) -> list[str]:
    work = [spec.work_keys, spec.work_index] if spec.work_keys else []
    return [spec.x, spec.values, spec.indices] + work


def merge_workspace(spec: SortSpec, target: Target) -> int:
    """Elements of each merge-sort workspace buffer: two rows per core; 0 when the rows fit UB."""
    if sort_plan(spec)[0] != "merge":
        return 0
    return 2 * spec.length * max(1, min(spec.rows, target.vector_cores))


def _ceil(a: int, b: int) -> int:
    return -(-a // b) * b


def _out_pitch(spec: SortSpec, pitch: int) -> int:
    """Elements per row of the sorted outputs in UB: the row's pitch for a sort, k (to 16, a
    32 B block of every dtype) for a top-k, since `TopK` writes k values and indices. With
    pitch-wide out rows, public level2/7's fp32 rows of 1024 took 48 KB of UB each: its
    131,072 rows went 3 to a unit, 43,691 units of 3 copies, over the run's cap of distinct
    records (sage/npu/sim/caps.py)."""
    return _ceil(spec.k, 16) if spec.topk else pitch


def _row_bytes(spec: SortSpec, pitch: int, depth: int = 2) -> int:
    """UB bytes one row of a unit takes: input (`depth` buffers) and its widened keys at the
    row's pitch; values and indices out (`depth` buffers each), sorted widened keys, int32
    indices and (int32 values) their byte offsets at the out pitch."""
    es, ix = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    ks = DTYPE_SIZE[KEY[spec.dtype]] if KEY[spec.dtype] != spec.dtype else 0   # widened keys only
    offsets = 4 if spec.dtype == "int32" else 0                                 # int32 values' Gather
    return pitch * (depth * es + ks) + _out_pitch(spec, pitch) * (depth * (es + ix) + ks + 4 + offsets)


def sort_plan(spec: SortSpec, cores: int | None = None) -> tuple[str, int, int, int]:
    """("rows", rows per unit, pitch, queue depth), ("chunked", 1, chunk, 2) or ("merge", 1,
    merge window, 1); ValueError when none fits. With `cores`, a unit takes at most the rows
    that give every core two units (one's copies overlap the other's sort): the most UB holds
    left level1/09_top_k's fp32 [1024, 301] top-10 on 19 of 48 cores, 24 % slower."""
    pitch = _ceil(spec.length, 16)
    spread = -(-spec.rows // (2 * cores)) if cores else spec.rows

    def rows(depth: int) -> tuple[str, int, int, int] | None:
        per_row = _row_bytes(spec, pitch, depth)
        if per_row <= UB_BUDGET:
            return "rows", max(1, min(MAX_ROWS, UB_BUDGET // per_row, spread)), pitch, depth
        return None

    plan = rows(2)
    if plan is not None:
        return plan
    chunks_topk = spec.topk and spec.dtype != "int32"
    if chunks_topk:
        # a long row's top-k by double-buffered chunks before one row in a single buffer
        es, ks = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[KEY[spec.dtype]]
        chunks = -(-spec.length // CHUNK)
        kp = _ceil(spec.k, 16)
        last = spec.length - (chunks - 1) * CHUNK
        fits = CHUNK * (2 * es + ks) + chunks * kp * (ks + 4) + kp * (2 * es + 16 + 12 + ks) <= UB_BUDGET
        if fits and last >= spec.k:
            return "chunked", 1, CHUNK, 2
    plan = rows(1)
    if plan is not None:
        return plan
    if chunks_topk:
        raise ValueError(f"top-{spec.k} of rows of {spec.length}: the candidates do not fit in UB")
    if not spec.topk and spec.dtype != "int32":
        es, ks, ix = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[KEY[spec.dtype]], DTYPE_SIZE[spec.index_dtype]
        window = merge_window(es, ks, ix, KEY[spec.dtype] != spec.dtype, MERGE_BUDGET)
        if window is not None:
            return "merge", 1, window, 1
    raise ValueError(f"rows of {spec.length} {spec.dtype} do not fit in UB for a one-pass sort "
                     f"(at most {UB_BUDGET // _row_bytes(spec, 16, 1) * 16}), and a merge sort takes float keys")


def sort_source(spec: SortSpec, target: Target, block_dim: int | None = None) -> str:
    if spec.dtype not in KEY:
        raise ValueError(f"a {spec.dtype} sort (Sort takes half or float keys; float, int32 convert)")
    mode, rows, pitch, depth = sort_plan(spec, block_dim or target.vector_cores)
    if mode == "merge":
        if not spec.work_keys:
            raise ValueError(f"rows of {spec.length}: a merge sort needs a GM workspace (merge_workspace)")
        blocks, per = _split(spec.rows, target, block_dim)
        return merge_source(spec, KEY[spec.dtype], pitch, blocks, per)
    return (_rows_source if mode == "rows" else _chunked_source)(spec, target, block_dim, rows, pitch, depth)


def _header(spec: SortSpec, units: int, per: int, buffers: list[str], depth: int = 2) -> str:
    bufs = "\n".join("        " + b for b in buffers)
    return f'''{HEADER}
class Kernel_{spec.name}:
    def Init(self, x, values, indices):
        self.t0 = GetBlockIdx() * {per}
        self.t1 = min({units}, self.t0 + {per})
{bind_globals(x="x", v="values", i="indices")}
        self.pipe = TPipe()
        self.qi = TQue(TPosition.VECIN, {depth})
        self.qv = TQue(TPosition.VECOUT, {depth})
        self.qx = TQue(TPosition.VECOUT, {depth})
        self.bk = TBuf(TPosition.VECCALC)
        self.bs = TBuf(TPosition.VECCALC)
        self.bi = TBuf(TPosition.VECCALC)
        self.bc = TBuf(TPosition.VECCALC)
        self.bd = TBuf(TPosition.VECCALC)
{bufs}
'''


def _footer(spec: SortSpec, blocks: int) -> str:
    n = spec.name
    return f'''

@kernel
def {n}_kernel(x, values, indices):
    op = Kernel_{n}()
    op.Init(x, values, indices)
    op.Process()


def {n}_launch(x, values, indices):
    {n}_kernel[{blocks}](x, values, indices)
'''


def _split(units: int, target: Target, block_dim: int | None) -> tuple[int, int]:
    blocks = max(1, min(block_dim or target.vector_cores, units))
    per = -(-units // blocks)
    return -(-units // per), per


def _order_call(spec: SortSpec, dst: str, idx: str, key: str, count: str) -> str:
    if spec.topk:
        return f"TopK({dst}, {idx}, {key}, {spec.k}, {count}, {spec.descending})"
    return f"Sort({dst}, {idx}, {key}, {count}, {spec.descending})"


def _rows_source(spec: SortSpec, target: Target, block_dim: int | None, rows: int, pitch: int,
                 depth: int) -> str:
    es, dt, kt = DTYPE_SIZE[spec.dtype], dsl_dtype(spec.dtype), dsl_dtype(KEY[spec.dtype])
    ks = DTYPE_SIZE[KEY[spec.dtype]]
    N, K, P, R = spec.length, spec.k, pitch, rows
    Q = _out_pitch(spec, P)
    ix = DTYPE_SIZE[spec.index_dtype]
    units = -(-spec.rows // R)
    blocks, per = _split(units, target, block_dim)
    widen = KEY[spec.dtype] != spec.dtype
    key = "kf" if widen else "x"
    sorted_to = "sv" if widen else "yv"      # same dtype: the sorted keys are the values
    body = [f"r0 = u * {R}", f"rn = min({R}, {spec.rows} - r0)",
            f"x = self.qi.AllocTensor({dt})",
            f"DataCopyPad(x, self.g_x[{spec.x_offset} + r0 * {N}], DataCopyExtParams(rn, {N * es}, 0, "
            f"{(P * es - _ceil(N * es, 32)) // 32}, 0), DataCopyPadExtParams(False, 0, 0, 0))",
            "self.qi.EnQue(x)", f"x = self.qi.DeQue({dt})",
            f"yv = self.qv.AllocTensor({dt})", f"yi = self.qx.AllocTensor({spec.index_dtype})"]
    if widen:
        body.append(f"Cast(kf, x, RoundMode.CAST_NONE, rn * {P})")
    body += ["for r in range(rn):",
             "    " + _order_call(spec, f"{sorted_to}[r * {Q}]", f"si[r * {Q}]", f"{key}[r * {P}]", str(N))]
    if spec.dtype == "int32":       # values: the int32 elements at the sorted indices (exact)
        body += [f"Muls(sd, si, 4, rn * {Q})", "for r in range(rn):",
                 f"    Gather(yv[r * {Q}], x[r * {P}], sd[r * {Q}], 0, {K})"]
    elif widen:
        body.append(f"Cast(yv, sv, RoundMode.CAST_RINT, rn * {Q})")
    body += [_index_store("yi", "si", spec.index_dtype, f"rn * {Q}"), "self.qi.FreeTensor(x)",
             "self.qv.EnQue(yv)", "self.qx.EnQue(yi)", f"yv = self.qv.DeQue({dt})",
             f"yi = self.qx.DeQue({spec.index_dtype})",
             f"DataCopyPad(self.g_v[r0 * {K}], yv, DataCopyExtParams(rn, {K * es}, "
             f"{(Q * es - _ceil(K * es, 32)) // 32}, 0, 0))",
             f"DataCopyPad(self.g_i[r0 * {K}], yi, DataCopyExtParams(rn, {K * ix}, "
             f"{(Q * ix - _ceil(K * ix, 32)) // 32}, 0, 0))",
             "self.qv.FreeTensor(yv)", "self.qx.FreeTensor(yi)"]
    tile, out = R * P, R * Q
    buffers = [f"self.pipe.InitBuffer(self.qi, {depth}, {tile * es})",
               f"self.pipe.InitBuffer(self.qv, {depth}, {out * es})",
               f"self.pipe.InitBuffer(self.qx, {depth}, {out * ix})", f"self.pipe.InitBuffer(self.bi, {out * 4})"]
    gets = ["si = self.bi.Get(int32)"]
    if widen:
        buffers += [f"self.pipe.InitBuffer(self.bk, {tile * ks})", f"self.pipe.InitBuffer(self.bs, {out * ks})"]
        gets += [f"kf = self.bk.Get({kt})", f"sv = self.bs.Get({kt})"]
    if spec.dtype == "int32":
        buffers.append(f"self.pipe.InitBuffer(self.bd, {out * 4})")
        gets.append("sd = self.bd.Get(int32)")
    return _header(spec, units, per, buffers, depth) + _process(gets, body) + _footer(spec, blocks)


def _index_store(dst: str, src: str, index_dtype: str, count: str) -> str:
    """The int32 indices into the output tile: widened to int64, or copied (an int32 Adds)."""
    if index_dtype == "int64":
        return f"Cast({dst}, {src}, RoundMode.CAST_NONE, {count})"
    return f"Adds({dst}, {src}, 0, {count})"


def _process(gets: list[str], body: list[str], pre: list[str] = ()) -> str:
    lines = ["    def Process(self):", "        if self.t0 >= self.t1:", "            return"]
    lines += ["        " + g for g in gets] + ["        " + p for p in pre]
    lines += ["        for u in range(self.t0, self.t1):"] + ["            " + b for b in body]
    return "\n".join(lines)


def _chunked_source(spec: SortSpec, target: Target, block_dim: int | None, _rows: int, chunk: int,
                    _depth: int) -> str:
    es, dt, kt = DTYPE_SIZE[spec.dtype], dsl_dtype(spec.dtype), dsl_dtype(KEY[spec.dtype])
    ks = DTYPE_SIZE[KEY[spec.dtype]]
    N, K = spec.length, spec.k
    KP = _ceil(K, 16)
    chunks = -(-N // chunk)
    blocks, per = _split(spec.rows, target, block_dim)
    widen = KEY[spec.dtype] != spec.dtype
    key = "kf" if widen else "x"
    worst = "-math.inf" if spec.descending else "math.inf"
    body = [f"Duplicate(cv, {worst}, {chunks * KP})",
            f"for c in range({chunks}):",
            f"    n = min({chunk}, {N} - c * {chunk})",
            f"    x = self.qi.AllocTensor({dt})",
            f"    DataCopyPad(x, self.g_x[{spec.x_offset} + u * {N} + c * {chunk}], DataCopyExtParams(1, n * {es}, "
            "0, 0, 0), DataCopyPadExtParams(False, 0, 0, 0))",
            "    self.qi.EnQue(x)", f"    x = self.qi.DeQue({dt})"]
    if widen:
        body.append("    Cast(kf, x, RoundMode.CAST_NONE, n)")
    body += ["    " + _order_call(spec, f"cv[c * {KP}]", f"ci[c * {KP}]", key, "n"),
             f"    Adds(ci[c * {KP}], ci[c * {KP}], c * {chunk}, {K})",
             "    self.qi.FreeTensor(x)",
             f"yv = self.qv.AllocTensor({dt})", f"yi = self.qx.AllocTensor({spec.index_dtype})",
             _order_call(spec, "fv" if widen else "yv", "fi", "cv", str(chunks * KP)),
             f"Muls(fi, fi, 4, {K})", f"Gather(gi, ci, fi, 0, {K})",
             _index_store("yi", "gi", spec.index_dtype, str(K))]
    if widen:
        body.append(f"Cast(yv, fv, RoundMode.CAST_RINT, {K})")
    ix = DTYPE_SIZE[spec.index_dtype]
    body += ["self.qv.EnQue(yv)", "self.qx.EnQue(yi)", f"yv = self.qv.DeQue({dt})",
             f"yi = self.qx.DeQue({spec.index_dtype})",
             f"DataCopyPad(self.g_v[u * {K}], yv, DataCopyExtParams(1, {K * es}, 0, 0, 0))",
             f"DataCopyPad(self.g_i[u * {K}], yi, DataCopyExtParams(1, {K * ix}, 0, 0, 0))",
             "self.qv.FreeTensor(yv)", "self.qx.FreeTensor(yi)"]
    cand = chunks * KP
    buffers = [f"self.pipe.InitBuffer(self.qi, 2, {chunk * es})", f"self.pipe.InitBuffer(self.qv, 2, {KP * es})",
               f"self.pipe.InitBuffer(self.qx, 2, {KP * 8})", f"self.pipe.InitBuffer(self.bs, {_ceil(cand * ks, 32)})",
               f"self.pipe.InitBuffer(self.bi, {cand * 4})", f"self.pipe.InitBuffer(self.bd, {KP * 8})",
               f"self.pipe.InitBuffer(self.bc, {KP * 4})"]
    gets = [f"cv = self.bs.Get({kt})", "ci = self.bi.Get(int32)", "fi = self.bd.Get(int32)",
            "gi = self.bd.Get(int32)[" + str(KP) + "]", "fv = self.bc.Get(" + kt + ")"]
    if widen:
        buffers.append(f"self.pipe.InitBuffer(self.bk, {chunk * ks})")
        gets.append(f"kf = self.bk.Get({kt})")
    return _header(spec, spec.rows, per, buffers) + _process(gets, body) + _footer(spec, blocks)
