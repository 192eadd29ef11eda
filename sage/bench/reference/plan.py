"""Which expert library kernel runs one aten call (the *expert* baseline), if any.

`plan_call` maps a recorded call to a `Plan`. Calls whose registry entry has a library
form (an elementwise chain with row/column/scalar broadcast, a last-axis row kernel:
reductions, softmax, layer norm; a matmul on the cube) get the generated kernel with the
library's generic schedule (source "simulated": it is timed by the simulator, exactly as a
candidate); everything else has no expert kernel (source "roofline": only its `Work`).
The vendor's time never comes from here: it is analytic (`vendor.py`).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel

from sage.bench.reference.library_run import LibraryKernel
from sage.bench.reference.work import Work, chain_passes, pass_cycles, work_of
from sage.kernels import (
    REDUCTIONS, VENDOR_CUBE_KNOBS, VENDOR_KNOBS, AtenCall, ChainPlan, CostClass, CubeForm, ElementwiseSpec, Knobs,
    Lowerer, MatmulSpec, RowForm, RowSpec, Target, TensorMeta, Val, chain_for, elementwise_source, base_name,
    matmul_source, op_def, render, row_source, target_of,
)
from sage.npu.hardware import HardwareSpec

Source = Literal["simulated", "roofline", "free"]
ROW_FLOATS = {"float32", "float16", "bfloat16"}
# Reductions whose `default` overload reduces every axis (amax/amin take their dims).
_REDUCE_ALL_BY_DEFAULT = {"sum", "mean", "max", "min"}


class Plan(BaseModel):
    op_class: CostClass | None           # None: a view or allocation (free)
    source: Source
    kernel: LibraryKernel | None = None
    work: Work
    epilogue_bytes: float = 0.0      # extra bytes a fused epilogue reads (matmul bias)
    operands: list[TensorMeta] = []  # the call's tensors the library kernel takes, in order


def plan_call(call: AtenCall, hw: HardwareSpec) -> Plan:
    if call.free:
        return Plan(op_class=None, source="free", work=Work())
    entry = op_def(call.name)
    target = target_of(hw)
    chain = chain_for(call)
    if chain is not None:
        ew = _elementwise_plan(call, chain, VENDOR_KNOBS, target, hw)
        if ew is not None:
            return ew
    if entry is not None and entry.row is not None:
        row = _row_plan(call, entry.row, VENDOR_KNOBS, target, hw)
        if row is not None:
            return row
    if entry is not None and entry.cube is not None:
        mm = _matmul_plan(call, entry.cube, target, hw)
        if mm is not None:
            return mm
    work = work_of(call, hw)
    return Plan(op_class=work.op_class, source="roofline", work=work)


def _elementwise_plan(call: AtenCall, chain: ChainPlan, knobs: Knobs, target: Target, hw: HardwareSpec) -> Plan | None:
    try:
        spec = ElementwiseSpec(expr=chain.expr, in_dtypes=tuple(t.dtype for t in chain.operands),
                               kinds=tuple(chain.kinds), out_dtype=chain.out.dtype, name="ew")
        source = elementwise_source(spec, knobs, target=target)
    except ValueError:
        return None                 # the library has no form for this chain: the formula times it
    shapes = [{"full": chain.out.shape, "row": (chain.C,), "col": (chain.R, 1), "scalar": (1,)}[kind]
              for kind in chain.kinds]
    dtypes = [t.dtype for t in chain.operands]
    kernel = LibraryKernel(family="elementwise", label=f"elementwise {render(chain.expr)}", source=source,
                           inputs=[(tuple(sh), d) for sh, d in zip(shapes, dtypes)])
    work = work_of(call, hw)
    klass = CostClass.BROADCAST if set(chain.kinds) - {"full", "scalar"} else work.op_class
    work = work.model_copy(update={"op_class": klass,
                                   "vector_cycles": pass_cycles(chain.out.numel * chain_passes(spec), hw)})
    return Plan(op_class=klass, source="simulated", kernel=kernel, work=work, operands=chain.operands)


def _trailing(dims: list[int], ndim: int) -> bool:
    norm = sorted(d % ndim for d in dims) if ndim else []
    return norm == list(range(ndim - len(norm), ndim))


def _row_plan(call: AtenCall, form: RowForm, knobs: Knobs, target: Target, hw: HardwareSpec) -> Plan | None:
    if not call.inputs or not call.outputs:
        return None
    x = call.inputs[0]
    if x.dtype not in ROW_FLOATS or x.numel == 0 or not x.contiguous:
        return None
    nd = len(x.shape)
    s = call.scalars
    C = None
    eps, affine, extra = 1e-5, False, []
    if form.op in ("softmax", "log_softmax"):
        if not (nd and s and _trailing([int(s[0])], nd)) or call.outputs[0].dtype != x.dtype:
            return None
        C = x.shape[-1]
    elif form.op == "layer_norm":
        if not s or len(call.inputs) == 2:
            return None          # weight without bias: the library form takes both
        C = math.prod(x.shape[nd - len(s[0]):])
        eps, affine = float(s[-1]), len(call.inputs) == 3
        extra = [((C,), t.dtype) for t in call.inputs[1:]]
        if any(t.dtype != x.dtype for t in call.inputs[1:]):
            return None
    else:
        C = _reduced_length(call, form, x)
    if C is None or C == 0:
        return None
    spec = RowSpec(op=form.op, dtype=x.dtype, affine=affine, eps=eps, name="row")
    R = x.numel // C
    kernel = LibraryKernel(family="row", label=f"{form.op} over rows of {C}", source=row_source(spec, knobs, target=target),
                           inputs=[((R, C), x.dtype), *extra])
    work = work_of(call, hw)
    work = work.model_copy(update={"vector_cycles": pass_cycles(x.numel * form.passes, hw)})
    return Plan(op_class=work.op_class, source="simulated", kernel=kernel, work=work,
                operands=[x, *call.inputs[1:len(extra) + 1]])


def _reduced_length(call: AtenCall, form: RowForm, x: TensorMeta) -> int | None:
    """The length of the trailing axes a reduction call reduces, or None when it reduces
    other axes (or keeps another dtype)."""
    nd, s = len(x.shape), call.scalars
    if form.op not in REDUCTIONS or call.outputs[0].dtype != x.dtype:
        return None
    if call.overload == "default" and base_name(call.name) in _REDUCE_ALL_BY_DEFAULT:
        dims = list(range(nd))
    elif s and isinstance(s[0], list):
        dims = [int(d) for d in s[0]] or list(range(nd))
    elif s and isinstance(s[0], int) and form.indices:
        dims = [int(s[0])]
    else:
        return None
    if not nd or not _trailing(dims, nd):
        return None
    return math.prod(x.shape[nd - len(set(d % nd for d in dims)):])


def _matmul_plan(call: AtenCall, form: CubeForm, target: Target, hw: HardwareSpec) -> Plan | None:
    if len(call.inputs) <= max(form.a, form.b):
        return None
    a, b = call.inputs[form.a], call.inputs[form.b]
    if a.dtype != b.dtype or a.dtype not in ROW_FLOATS:
        return None
    bias = call.inputs[form.bias] if form.bias is not None else None
    B = a.shape[0] if form.batched else 1
    M, K = a.shape[-2], a.shape[-1]
    N = b.shape[-1]
    row_bias = bias is not None and bias.numel == N and bias.dtype == a.dtype
    if bias is not None and not row_bias:
        return None             # a full-shape accumulator is an elementwise epilogue: not a library form
    knobs = VENDOR_CUBE_KNOBS
    spec = MatmulSpec(dtype=a.dtype, batched=form.batched, name="mm")
    inputs = [((B, M, K) if form.batched else (M, K), a.dtype), ((B, K, N) if form.batched else (K, N), b.dtype)]
    kernel = LibraryKernel(family="matmul", label=f"matmul {B}x{M}x{K}x{N}{' +bias' if row_bias else ''}",
                           source=matmul_source(spec, knobs, target=target), inputs=inputs)
    # The vendor fuses a row bias into the matmul epilogue; the simulated Mmad has no bias
    # operand, so the bias read is added at HBM rate (`epilogue_bytes`).
    return Plan(op_class=CostClass.MATMUL, source="simulated", kernel=kernel, work=work_of(call, hw),
                epilogue_bytes=float(bias.nbytes) if row_bias else 0.0, operands=[a, b])
