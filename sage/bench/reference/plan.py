"""How one aten call is timed: a simulated library kernel, the roofline formula, or free.

`plan_call` maps a recorded call to a `Plan`. Calls with a library form (elementwise
chains with row/column/scalar broadcast, last-axis reductions, softmax, layer norm,
matmul) get the generated kernel with the vendor's generic schedule; everything else
gets its roofline `Work` and is timed by the calibrated formula.
"""

from __future__ import annotations

import math
import re
from typing import Literal

from pydantic import BaseModel

from sage.bench.library.chain import render
from sage.bench.library.elementwise import ElementwiseSpec, elementwise_source, elementwise_tiling
from sage.bench.library.knobs import VENDOR_CUBE_KNOBS, VENDOR_KNOBS
from sage.bench.library.lowering import Lowerer, Val
from sage.bench.library.rowwise import RowSpec, row_source, row_tiling
from sage.bench.reference.aten import AtenCall, TensorMeta
from sage.bench.reference.ew_map import base_name, chain_for
from sage.bench.reference.library_run import LibraryKernel
from sage.bench.reference.scaling import elementwise_scaling, matmul_scaling, row_scaling
from sage.bench.reference.work import Work, pass_cycles, work_of
from sage.npu.hardware import HardwareSpec

Source = Literal["simulated", "roofline", "free"]
ROW_FLOATS = {"float32", "float16", "bfloat16"}
_INSTR = re.compile(r"^\s*(?!SetFlag|WaitFlag)[A-Z]\w*\(")


class Plan(BaseModel):
    op_class: str
    source: Source
    kernel: LibraryKernel | None = None
    work: Work
    epilogue_bytes: float = 0.0      # extra bytes a fused epilogue reads (matmul bias)
    operands: list[TensorMeta] = []  # the call's tensors the library kernel takes, in order


def plan_call(call: AtenCall, hw: HardwareSpec) -> Plan:
    if call.free:
        return Plan(op_class="view", source="free", work=Work(op_class="view"))
    name = base_name(call)
    vec_knobs = VENDOR_KNOBS.model_copy(update={"cores": hw.chip.aiv_cores})
    chain = chain_for(call)
    if chain is not None:
        ew = _elementwise_plan(call, chain, vec_knobs)
        if ew is not None:
            return ew
    row = _row_plan(call, name, vec_knobs)
    if row is not None:
        return row
    if name in ("mm", "addmm", "bmm", "baddbmm"):
        mm = _matmul_plan(call, name, hw)
        if mm is not None:
            return mm
    work = work_of(call)
    return Plan(op_class=work.op_class, source="roofline", work=work)


def _elementwise_plan(call: AtenCall, chain, knobs) -> Plan | None:
    try:
        spec = ElementwiseSpec(expr=chain.expr, in_dtypes=tuple(t.dtype for t in chain.operands),
                               kinds=tuple(chain.kinds), out_dtype=chain.out.dtype, name="ew")
        source = elementwise_source(spec, knobs)
    except ValueError:
        return None                 # the library has no form for this chain: the formula times it
    shapes = [{"full": chain.out.shape, "row": (chain.C,), "col": (chain.R, 1), "scalar": (1,)}[kind]
              for kind in chain.kinds]
    tile, align = elementwise_tiling(spec, knobs)
    dtypes = [t.dtype for t in chain.operands]
    kernel = LibraryKernel(family="elementwise", label=f"elementwise {render(chain.expr)}", source=source,
                           inputs=[(tuple(sh), d) for sh, d in zip(shapes, dtypes)],
                           scaling=elementwise_scaling(list(chain.kinds), dtypes, chain.R, chain.C, tile, align,
                                                       knobs.block_dim or knobs.cores))
    klass = "broadcast" if set(chain.kinds) - {"full", "scalar"} else "elementwise"
    work = work_of(call).model_copy(update={"op_class": klass,
                                            "vector_cycles": pass_cycles(chain.out.numel * chain_passes(spec))})
    return Plan(op_class=klass, source="simulated", kernel=kernel, work=work, operands=chain.operands)


def chain_passes(spec: ElementwiseSpec) -> int:
    """Vector instructions per element of a chain (casts included), from its lowering."""
    inputs = {i: Val(k, f"x{i}") if k != "scalar" else Val("scalar", f"s{i}") for i, k in enumerate(spec.kinds)}
    low = Lowerer(kinds=list(spec.kinds), inputs=inputs)
    low.lower(spec.expr)
    casts = sum(1 for d in spec.in_dtypes if d != "float32") + (spec.out_dtype != "float32")
    return max(1, sum(1 for ln in low.lines if _INSTR.match(ln)) + casts)


def _trailing(dims: list[int], ndim: int) -> bool:
    norm = sorted(d % ndim for d in dims) if ndim else []
    return norm == list(range(ndim - len(norm), ndim))


def _row_plan(call: AtenCall, name: str, knobs) -> Plan | None:
    if not call.inputs or not call.outputs:
        return None
    x = call.inputs[0]
    if x.dtype not in ROW_FLOATS or x.numel == 0 or not x.contiguous:
        return None
    nd = len(x.shape)
    s = call.scalars
    op = None
    C = None
    eps, affine, extra = 1e-5, False, []
    if name in ("_softmax", "_log_softmax") and nd and s and _trailing([int(s[0])], nd):
        op, C = ("softmax" if name == "_softmax" else "log_softmax"), x.shape[-1]
        if call.outputs[0].dtype != x.dtype:
            return None
    elif name == "native_layer_norm" and s:
        k = len(s[0])
        C = math.prod(x.shape[nd - k:])
        op, eps = "layer_norm", float(s[-1])
        affine = len(call.inputs) == 3
        if len(call.inputs) == 2:
            return None          # weight without bias: the library form takes both
        extra = [((C,), t.dtype) for t in call.inputs[1:]]
        if any(t.dtype != x.dtype for t in call.inputs[1:]):
            return None
    elif name in ("sum", "mean", "amax", "amin", "max", "min") and call.outputs[0].dtype == x.dtype:
        if call.overload == "default" and name in ("sum", "mean", "max", "min"):
            dims = list(range(nd))
        elif s and isinstance(s[0], list):
            dims = [int(d) for d in s[0]] or list(range(nd))
        elif s and isinstance(s[0], int) and name in ("max", "min"):
            dims = [int(s[0])]
        else:
            return None
        if not nd or not _trailing(dims, nd):
            return None
        C = math.prod(x.shape[nd - len(set(d % nd for d in dims)):])
        op = {"amax": "max", "amin": "min"}.get(name, name)
    if op is None or C is None or C == 0:
        return None
    spec = RowSpec(op=op, dtype=x.dtype, affine=affine, eps=eps, name="row")
    R = x.numel // C
    tile, align = row_tiling(spec, knobs)
    kernel = LibraryKernel(family="row", label=f"{op} over rows of {C}", source=row_source(spec, knobs),
                           inputs=[((R, C), x.dtype), *extra],
                           scaling=row_scaling(R, C, x.dtype, extra, tile, align, knobs.block_dim or knobs.cores))
    klass = "reduction" if op in ("sum", "mean", "max", "min") else ("softmax" if "softmax" in op else "norm")
    passes = {"softmax": 5, "log_softmax": 5, "layer_norm": 7, "rms_norm": 5}.get(op, 2)
    work = work_of(call).model_copy(update={"op_class": klass, "vector_cycles": pass_cycles(x.numel * passes)})
    return Plan(op_class=klass, source="simulated", kernel=kernel, work=work,
                operands=[x, *call.inputs[1:len(extra) + 1]])


def _matmul_plan(call: AtenCall, name: str, hw: HardwareSpec) -> Plan | None:
    try:
        from sage.bench.library.matmul import MatmulSpec, matmul_source
    except ImportError:
        return None
    mats = call.inputs[1:] if name in ("addmm", "baddbmm") else call.inputs
    if len(mats) < 2:
        return None
    a, b = mats[0], mats[1]
    if a.dtype != b.dtype or a.dtype not in ROW_FLOATS:
        return None
    bias = call.inputs[0] if name in ("addmm", "baddbmm") else None
    batched = name in ("bmm", "baddbmm")
    B = a.shape[0] if batched else 1
    M, K = a.shape[-2], a.shape[-1]
    N = b.shape[-1]
    row_bias = bias is not None and bias.numel == N and bias.dtype == a.dtype
    full_bias = bias is not None and not row_bias
    if full_bias:
        return None             # a full-shape accumulator is an elementwise epilogue: not a library form
    knobs = VENDOR_CUBE_KNOBS.model_copy(update={"cores": hw.chip.aic_cores})
    spec = MatmulSpec(dtype=a.dtype, batched=batched, name="mm")
    inputs = [((B, M, K) if batched else (M, K), a.dtype), ((B, K, N) if batched else (K, N), b.dtype)]
    kernel = LibraryKernel(family="matmul", label=f"matmul {B}x{M}x{K}x{N}{' +bias' if row_bias else ''}",
                           source=matmul_source(spec, knobs), inputs=inputs,
                           scaling=matmul_scaling(B, M, K, N, a.dtype, batched, knobs.base_m, knobs.base_n,
                                                  knobs.block_dim or knobs.cores))
    # The vendor fuses a row bias into the matmul epilogue; the simulated Mmad has no bias
    # operand, so the bias read is added at HBM rate (`epilogue_bytes`).
    return Plan(op_class="matmul", source="simulated", kernel=kernel, work=work_of(call),
                epilogue_bytes=float(bias.nbytes) if row_bias else 0.0, operands=[a, b])
