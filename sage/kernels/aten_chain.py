"""Aten elementwise calls as library chains, by the registry's chain forms.

- `chain_for(call)`: the fused-elementwise kernel one eager aten call is timed with by the
  reference model (its vendor chain form: one chain node for simple ops, the library's
  decomposition for gelu, silu, ...), with the tensor operands to feed it and their
  broadcast kinds; None when the call has no vendor form (comparisons, integer or bool
  types, broadcasts the [R, C] layout cannot express), so that the formula times it.
- `call_chain(call)`: the chain expression the offline compiler lowers the call to: its
  vendor form whatever the broadcast, else its compiler-only forms (comparisons, logic,
  selects, arithmetic on bool masks).
"""

from __future__ import annotations

from dataclasses import dataclass

from sage.kernels.aten_rules import chain_ctx
from sage.kernels.chain import Expr, Kind, inp, op
from sage.kernels.layout import broadcast_layout
from sage.kernels.library.source import LIB_DTYPES
from sage.kernels.record import AtenCall, TensorMeta
from sage.kernels.registry import base_name, op_def


@dataclass
class ChainPlan:
    expr: Expr
    operands: list[TensorMeta]       # the kernel's tensor inputs, in Inp order
    kinds: list[Kind]
    out: TensorMeta
    R: int
    C: int


def _vendor_chain(call: AtenCall) -> tuple[Expr, list[TensorMeta]] | None:
    """The vendor form's expression and the tensors it reads, before any layout."""
    entry = op_def(call.name)
    if entry is None or not call.outputs:
        return None
    out = call.outputs[0]
    if out.dtype not in LIB_DTYPES or out.numel == 0:
        return None
    ctx = chain_ctx(base_name(call.name), call)
    tensors = [t for t, folded in zip(ctx.metas, ctx.folded) if not folded]
    if any(t.dtype not in LIB_DTYPES for t in tensors):
        return None
    e = next((e for f in entry.chain if f.vendor and (e := f.rule(ctx)) is not None), None)
    if e is None:
        return None
    if call.name == "copy_" and tensors:
        tensors = tensors[1:]          # copy_(dst, src): the kernel reads src, writes dst
        e = op("identity", inp(0))
    if not tensors:
        return None
    return e, tensors


def chain_for(call: AtenCall) -> ChainPlan | None:
    found = _vendor_chain(call)
    if found is None:
        return None
    e, tensors = found
    out = call.outputs[0]
    layout = broadcast_layout(out.shape, [t.shape for t in tensors])
    if layout is None:
        return None
    kinds, R, C = layout
    return ChainPlan(expr=e, operands=tensors, kinds=kinds, out=out, R=R, C=C)


def call_chain(call: AtenCall) -> Expr | None:
    """The chain over the call's non-folded tensor operands (`Inp(k)` for the k-th), or
    None when the registry has no chain form for this call."""
    found = _vendor_chain(call)
    if found is not None:
        return found[0]
    entry = op_def(call.name)
    if entry is None or len(call.outputs) != 1:
        return None
    ctx = chain_ctx(base_name(call.name), call)
    return next((e for f in entry.chain if not f.vendor and (e := f.rule(ctx)) is not None), None)
