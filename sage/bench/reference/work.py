"""Roofline work of an aten call, for the operators timed by formula.

Each call gets its cost class (`sage.kernels.CostClass`) and three amounts of work, counted
by the formula its registry entry names (`WorkRule`):

- `bytes`: HBM traffic. Inputs plus outputs at their real sizes; for irregular access
  (gather, scatter, index) every element or row fetched costs at least one UB block
  (32 B), the granularity of a GM transfer.
- `vector_cycles`: vector-unit work in cycles summed over cores, as element passes
  x the cost of one float32 `vadd` per element (the preset's vadd slope per repeat of
  float32 lanes). Sort, scan, pooling and interpolation set their number of passes below.
- `cube_flops`: 2 x MACs of matmuls and convolutions (convolution as im2col + matmul).

`roofline_us` turns work into time on a preset: the largest of bytes / HBM bandwidth,
vector cycles / (vector cores x clock) and flops / cube peak (x2 for float32 inputs).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable

from pydantic import BaseModel, ConfigDict

from sage.kernels import (
    VENDOR_CUBE_KNOBS, AtenCall, CostClass, ElementwiseSpec, Expr, Inp, Lowerer, Op, OpDef, TensorMeta, Val, WorkRule,
    call_chain, cost_class_of, dtype_size, op_def,
)
from sage.npu.hardware import HardwareSpec


class Work(BaseModel):
    # Frozen: work_of hands the same object to every caller within shared_work() (a forward of
    # tens of thousands of calls asked for copies it never changed).
    model_config = ConfigDict(frozen=True)

    op_class: CostClass | None = None     # None: the whole operator as one fused kernel
    bytes: float = 0.0
    vector_cycles: float = 0.0
    cube_flops: float = 0.0
    fp32_cube: bool = False
    cube_tiles: int = 0                   # output tiles of the vendor's base block (matmul / conv): wave quantisation
    rows: int = 0                         # independent rows of a per-row algorithm (sort, scan): at most this many
                                          # cores share its vector work (0: all of them)


# The vendor's matmul base block (CANN's default Matmul tiling, the library's VENDOR_CUBE_KNOBS): one
# output tile of BASE_M x BASE_N per cube core and wave.
BASE_M, BASE_N = VENDOR_CUBE_KNOBS.base_m, VENDOR_CUBE_KNOBS.base_n


def cube_tiles(m: int, n: int) -> int:
    return math.ceil(max(m, 1) / BASE_M) * math.ceil(max(n, 1) / BASE_N)


def pass_cycles(elems: float, hw: HardwareSpec) -> float:
    """Vector cycles of one float32 pass over `elems` elements (vadd slope per repeat)."""
    lanes = hw.vector.repeat_bytes / 4
    return elems * hw.vector.costs["vadd"].b32[1] / lanes


def io_bytes(call: AtenCall) -> float:
    return float(sum(t.nbytes for t in call.inputs) + sum(t.nbytes for t in call.outputs))


def _out_numel(call: AtenCall) -> int:
    return call.outputs[0].numel if call.outputs else 0


_INSTR = re.compile(r"^\s*(?!SetFlag|WaitFlag)[A-Z]\w*\(")


def chain_passes(spec: ElementwiseSpec) -> int:
    """Vector instructions per element of a chain (casts included), from its lowering."""
    inputs = {i: Val(k, f"x{i}") if k != "scalar" else Val("scalar", f"s{i}") for i, k in enumerate(spec.kinds)}
    low = Lowerer(kinds=list(spec.kinds), inputs=inputs)
    low.lower(spec.expr)
    casts = sum(1 for d in spec.in_dtypes if d != "float32") + (spec.out_dtype != "float32")
    return max(1, sum(1 for ln in low.lines if _INSTR.match(ln)) + casts)


def _inputs_of(expr: Expr) -> int:
    if isinstance(expr, Inp):
        return expr.index + 1
    if isinstance(expr, Op):
        return max((_inputs_of(a) for a in expr.args), default=0)
    return 0


def elementwise_passes(call: AtenCall) -> int | None:
    """Vector instructions per output element of an elementwise call with a chain form (the
    library's decomposition of gelu, silu, ...), or None when the registry gives none."""
    expr = call_chain(call)
    if expr is None or not call.outputs:
        return None
    n = _inputs_of(expr)
    out = call.outputs[0].dtype
    dtypes = [t.dtype for t in call.inputs if t.numel > 1][:n]
    dtypes += [out] * (n - len(dtypes))
    return _lowered_passes(expr, tuple(dtypes), out)


@functools.lru_cache(maxsize=4096)
def _lowered_passes(expr: Expr, in_dtypes: tuple[str, ...], out_dtype: str) -> int | None:
    # Cached: a forward's loop repeats the same chain on the same dtypes thousands of times
    # (58,000 calls over the suite's reference pass), and lowering is a pure function of these.
    try:
        spec = ElementwiseSpec(expr=expr, in_dtypes=in_dtypes, kinds=("full",) * len(in_dtypes), out_dtype=out_dtype,
                               name="ew")
        return chain_passes(spec)
    except (ValueError, KeyError):
        return None         # a form the lowering cannot count (bool/int operands): the registry's passes


# Inside shared_work(): the work already computed, by id(call): (call, hw, work).
_SHARED: ContextVar[dict[int, tuple[AtenCall, HardwareSpec, Work]] | None] = ContextVar("shared_work", default=None)


@contextmanager
def shared_work() -> Iterator[None]:
    """Within the block, work_of computes each call's work once: the reference model asks for
    the same calls' work twice (the eager chain and the essential-work bound)."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


# The work of every distinct call seen, by content (call_key) per preset: work_of is a pure
# function of the two, and a forward's Python loop repeats calls (nms: 28,000 launching calls
# in four cases, 15,000 distinct). Emptied when full: a cache, never a record.
_BY_CONTENT: dict[tuple, Work] = {}
_BY_CONTENT_MAX = 50_000            # about 1.4 kB an entry (tracemalloc, nms): 70 MB at most
_PRESETS: dict[int, HardwareSpec] = {}     # the presets keyed by id, kept alive so no id is reused


def _meta_key(t: TensorMeta) -> tuple:
    # repr keeps -0.0 apart from 0.0 (equal, and hashed alike, as floats)
    return (t.shape, t.dtype, t.contiguous, None if t.value is None else repr(t.value), t.origin)


def call_key(call: AtenCall) -> tuple:
    """Everything an AtenCall holds, hashable: two calls with equal keys are equal calls."""
    return (call.name, call.overload, tuple(map(_meta_key, call.inputs)), tuple(map(_meta_key, call.outputs)),
            repr(call.scalars), repr(call.kwargs), tuple(call.arg_kinds), call.free)


def work_of(call: AtenCall, hw: HardwareSpec) -> Work:
    """The roofline work of one eager call. An op the registry does not list counts as one
    elementwise pass over its output."""
    shared = _SHARED.get()
    if shared is not None:
        seen = shared.get(id(call))
        if seen is not None and seen[0] is call and seen[1] is hw:
            return seen[2]
    # The preset by identity (a frozen model: its content cannot change under the id).
    _PRESETS.setdefault(id(hw), hw)
    key = (id(hw), call_key(call))
    work = _BY_CONTENT.get(key)
    if work is None:
        work = _computed_work(call, hw)
        if len(_BY_CONTENT) >= _BY_CONTENT_MAX:
            _BY_CONTENT.clear()
        _BY_CONTENT[key] = work
    if shared is not None:
        # The call is kept with its work, so its id cannot be reused within the block.
        shared[id(call)] = (call, hw, work)
    return work


def _computed_work(call: AtenCall, hw: HardwareSpec) -> Work:
    work = _standin_work(call, hw)
    if work is None:
        entry = op_def(call.name)
        rule = entry.work if entry is not None and entry.work is not None else WorkRule.ELEMENTWISE
        work = _FORMULAS[rule](call, entry, hw).model_copy(update={"op_class": cost_class_of(call)})
    return work


def _standin_work(call: AtenCall, hw: HardwareSpec) -> Work | None:
    """A torch_npu stand-in (npu_standin::npu_*) is one fused kernel: its work comes from the
    table in standin_work.py (imported here, not at the top: that module imports this one)."""
    if not call.name.startswith("npu_"):
        return None
    from sage.bench.reference.standin_work import standin_work
    return standin_work(call, hw)


def _elementwise_work(call: AtenCall, entry: OpDef | None, hw: HardwareSpec) -> Work:
    passes = elementwise_passes(call) if entry is not None and entry.chain else None
    if passes is None:
        passes = entry.passes if entry is not None else 1
    return Work(bytes=io_bytes(call), vector_cycles=pass_cycles(_out_numel(call) * passes, hw))


def _scatter_work(call: AtenCall, entry: OpDef | None, hw: HardwareSpec) -> Work:
    upd = call.inputs[-1] if call.inputs else None
    n_upd = upd.numel if upd is not None else _out_numel(call)
    return Work(bytes=io_bytes(call) + n_upd * hw.buffers.ub_block_bytes, vector_cycles=pass_cycles(n_upd * 2, hw))


def _rows(x: TensorMeta, length: int) -> int:
    return max(x.numel // max(length, 1), 1)


def _sort_work(call: AtenCall, entry: OpDef | None, hw: HardwareSpec) -> Work:
    x = call.inputs[0]
    L = x.shape[-1] if x.shape else 1
    merged = L
    if entry is not None and entry.name == "topk" and call.scalars and isinstance(call.scalars[0], int):
        merged = min(L, max(int(call.scalars[0]), 1))   # top-k keeps k candidates per row: merges stop at k
    passes = 4 * (1 + math.ceil(math.log(max(merged, 32) / 32, 4)))
    return Work(bytes=io_bytes(call), vector_cycles=pass_cycles(x.numel * passes, hw), rows=_rows(x, L))


def _scan_work(call: AtenCall, entry: OpDef | None, hw: HardwareSpec) -> Work:
    x = call.inputs[0]
    dim = call.scalars[0] if call.scalars and isinstance(call.scalars[0], int) else -1
    L = x.shape[dim] if x.shape else 1
    passes = 1 + math.ceil(math.log2(max(L, 2)))
    return Work(bytes=io_bytes(call), vector_cycles=pass_cycles(x.numel * passes, hw), rows=_rows(x, L))


def _select_work(call: AtenCall, entry: OpDef | None, hw: HardwareSpec) -> Work:
    x = call.inputs[0]
    passes = 2 + math.ceil(math.log2(max(x.numel, 2)))
    return Work(bytes=io_bytes(call), vector_cycles=pass_cycles(x.numel * passes, hw))


def _pool_work(call: AtenCall, entry: OpDef | None, hw: HardwareSpec) -> Work:
    x, out_n = call.inputs[0], _out_numel(call)
    window = max(1, x.numel // max(out_n, 1))
    ks = [v for v in (call.scalars[0] if call.scalars and isinstance(call.scalars[0], list) else [])]
    if ks:
        window = math.prod(int(k) for k in ks)
    return Work(bytes=io_bytes(call), vector_cycles=pass_cycles(out_n * window * 2, hw))


def _interp_work(call: AtenCall, entry: OpDef | None, hw: HardwareSpec) -> Work:
    name = entry.name if entry is not None else call.name
    taps = 8 if ("linear" in name or "bicubic" in name) else 1
    return Work(bytes=io_bytes(call), vector_cycles=pass_cycles(_out_numel(call) * taps, hw))


def _reduce_work(call: AtenCall, entry: OpDef | None, hw: HardwareSpec) -> Work:
    x = call.inputs[0] if call.inputs else None
    n = x.numel if x is not None else _out_numel(call)
    return Work(bytes=io_bytes(call), vector_cycles=pass_cycles(n * 2, hw))


def _gather_work(call: AtenCall, entry: OpDef | None, hw: HardwareSpec) -> Work:
    name = entry.name if entry is not None else call.name
    out_n = _out_numel(call)
    out = call.outputs[0]
    src = call.inputs[0]
    idx = [t for t in call.inputs[1:] if t.dtype.startswith("int") or t.dtype == "bool"]
    n_idx = max((t.numel for t in idx), default=out_n)
    if name == "embedding":
        src, n_idx = call.inputs[0], call.inputs[1].numel
    row = max(1, out_n // max(n_idx, 1)) if name not in ("gather", "take", "take_along_dim") else 1
    row_bytes = row * dtype_size(src.dtype)
    sector = hw.buffers.ub_block_bytes
    reads = (out_n // row) * max(sector, math.ceil(row_bytes / sector) * sector)
    b = reads + out.nbytes + sum(t.nbytes for t in idx)
    return Work(bytes=float(b), vector_cycles=pass_cycles(out_n, hw))


def _matmul_work(call: AtenCall, entry: OpDef | None, hw: HardwareSpec) -> Work:
    out = call.outputs[0]
    mats = [t for t in call.inputs if len(t.shape) >= 1]
    # K is the reduced dimension: the last dim of the left operand (the second-to-last
    # operand when a bias/accumulator comes first).
    left = mats[-2] if len(mats) >= 2 else mats[0]
    K = left.shape[-1] if left.shape else 1
    flops = 2.0 * out.numel * K
    M, N = (out.shape[-2], out.shape[-1]) if len(out.shape) >= 2 else (1, out.shape[-1] if out.shape else 1)
    batch = out.numel // max(M * N, 1)
    return Work(bytes=io_bytes(call), cube_flops=flops, fp32_cube=left.dtype == "float32",
                cube_tiles=batch * cube_tiles(M, N))


def _conv_work(call: AtenCall, entry: OpDef | None, hw: HardwareSpec) -> Work:
    x, w = call.inputs[0], call.inputs[1]
    out = call.outputs[0]
    transposed = bool(call.scalars[3]) if len(call.scalars) > 3 and isinstance(call.scalars[3], bool) else False
    groups = int(call.scalars[-1]) if call.scalars and isinstance(call.scalars[-1], int) else 1
    k_spatial = math.prod(w.shape[2:]) if len(w.shape) > 2 else 1
    if transposed:
        flops = 2.0 * x.numel * (w.shape[1]) * k_spatial
    else:
        flops = 2.0 * out.numel * (w.shape[1]) * k_spatial
    _ = groups  # w.shape[1] is already Cin/groups (or Cout/groups when transposed)
    # im2col: rows are the output positions, columns the output channels.
    channels = out.shape[1] if len(out.shape) > 1 else 1
    positions = out.numel // max(channels, 1)
    return Work(bytes=io_bytes(call), cube_flops=flops, fp32_cube=x.dtype == "float32",
                cube_tiles=cube_tiles(positions, channels))


_FORMULAS: dict[WorkRule, Callable[[AtenCall, OpDef | None, HardwareSpec], Work]] = {
    WorkRule.ELEMENTWISE: _elementwise_work, WorkRule.COPY: _elementwise_work, WorkRule.REDUCE: _reduce_work,
    WorkRule.GATHER: _gather_work, WorkRule.SCATTER: _scatter_work, WorkRule.SORT: _sort_work,
    WorkRule.SCAN: _scan_work, WorkRule.SELECT: _select_work, WorkRule.POOL: _pool_work,
    WorkRule.INTERP: _interp_work, WorkRule.MATMUL: _matmul_work, WorkRule.CONV: _conv_work,
}


def _resource_us(work: Work, hw: HardwareSpec) -> tuple[float, float, float]:
    """Memory, vector and cube time of the work, each resource at its peak."""
    mem = work.bytes / (hw.chip.hbm_gbps * 1e3)
    vec = work.vector_cycles / (hw.chip.aiv_cores * hw.chip.clock_mhz)
    peak = 2.0 * hw.cube.peak_macs_per_cycle * hw.chip.aic_cores * hw.chip.clock_mhz
    if work.fp32_cube:
        peak /= hw.cube.fp32_factor
    return mem, vec, work.cube_flops / peak


def roofline_us(work: Work, hw: HardwareSpec) -> float:
    """The bound: the slowest of the three resources."""
    return max(_resource_us(work, hw))


def dominant(work: Work, hw: HardwareSpec) -> str:
    mem, vec, cube = _resource_us(work, hw)
    return max((mem, "memory"), (vec, "vector"), (cube, "cube"))[1]


def tensor_bytes(ts: list[TensorMeta]) -> float:
    return float(sum(t.nbytes for t in ts))
