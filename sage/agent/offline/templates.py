"""Which library kernel computes one traced case, and with which operands.

A `CasePlan` is the library spec for one case of the task (its dtypes and scalar
arguments decide the spec) plus how the kernel file's `forward` feeds it. Cases with
equal specs share one variant of the kernel file.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel

from sage.agent.offline.analysis import (
    ExprBuilder, Leaf, MatMul, NoTemplate, Reduce, RowOp, check_dtypes, is_pure_chain, layout,
    leaves_in_order, strip, to_chain, walk,
)
from sage.kernels import Const, ElementwiseSpec, Graph, Op, RowSpec, elementwise_source

OpClass = Literal["elementwise", "row", "matmul"]


@dataclass(frozen=True)
class CasePlan:
    op_class: OpClass
    spec: BaseModel                       # ElementwiseSpec | RowSpec | a matmul spec
    operands: tuple[str, ...]             # forward-side names fed to the variant, in order
    keepdim: bool = False                 # a row reduction whose output keeps the last axis
    signature: tuple = ()                 # what the forward dispatches on (see _signature)
    describe: str = ""
    output: int = 0                       # which of the forward's outputs this kernel writes


def plan_case(graph: Graph, output: int = 0) -> CasePlan:
    """The kernel writing the forward's output number `output` (a forward returning several
    tensors gets one kernel per output, each computing its own from the inputs)."""
    if graph.writes_through_view:
        raise NoTemplate("the forward writes into a slice of a tensor in place; no template scatters data")
    out = graph.outputs[output]
    if graph.outputs.index(out) != output:
        raise NoTemplate("the forward returns one tensor twice")
    plan = _plan_output(graph, out)
    return plan if output == 0 else replace(plan, output=output)


def _plan_output(graph: Graph, out: int) -> CasePlan:
    if out in graph.inputs or out in graph.params:
        raise NoTemplate("the forward returns an input unchanged")
    expr = ExprBuilder(graph).build(out)
    names = _names(graph)
    signature = _signature(graph)
    root = strip(expr)
    out_dtype, out_shape = graph.dtypes[out], graph.shapes[out]

    if is_pure_chain(expr):
        leaves = leaves_in_order(expr)
        if not leaves:
            raise NoTemplate("the output does not depend on any input")
        dtypes = [graph.dtypes[l.vid] for l in leaves]
        check_dtypes(dtypes + [out_dtype])
        kinds, group_axes = layout(out_shape, [graph.shapes[l.vid] for l in leaves])
        chain = to_chain(expr, {l: i for i, l in enumerate(leaves)})
        spec = ElementwiseSpec(expr=chain, in_dtypes=tuple(dtypes), kinds=tuple(kinds), out_dtype=out_dtype,
                               name="ew", group_axes=group_axes)
        try:
            elementwise_source(spec)   # the generator's own checks: dtype mixes, int32-only ops
        except ValueError as exc:
            raise NoTemplate(f"the elementwise chain has no template: {exc}") from None
        return CasePlan("elementwise", spec, tuple(names[l.vid] for l in leaves), signature=signature,
                        describe=f"fused elementwise chain over {len(leaves)} input(s)")

    if isinstance(root, RowOp):
        args = [strip(a) for a in root.args]
        if not all(isinstance(a, Leaf) for a in args):
            raise NoTemplate(f"{root.op} of a computed value has no template (it must read an input)")
        x = args[0]
        _same_dtype(graph, args, out_dtype)
        if root.op == "layer_norm" and len(args) == 2:
            raise NoTemplate("layer norm with a weight but no bias has no template")
        spec = RowSpec(op=root.op, dtype=graph.dtypes[x.vid], affine=len(args) == 3, eps=root.eps, name="row")
        return CasePlan("row", spec, tuple(names[a.vid] for a in args), signature=signature,
                        describe=f"last-axis {root.op}")

    if isinstance(root, Reduce):
        x = strip(root.arg)
        if not isinstance(x, Leaf):
            raise NoTemplate(f"a {root.kind} of a computed value has no template (it must read an input)")
        _same_dtype(graph, [x], out_dtype)
        spec = RowSpec(op=root.kind, dtype=graph.dtypes[x.vid], name="row")
        return CasePlan("row", spec, (names[x.vid],), keepdim=root.keepdim, signature=signature,
                        describe=f"last-axis {root.kind}")

    rms = match_rms_norm(root)
    if rms is not None:
        x, w, eps = rms
        _same_dtype(graph, [x] + ([w] if w else []), out_dtype)
        spec = RowSpec(op="rms_norm", dtype=graph.dtypes[x.vid], affine=w is not None, eps=eps, name="row")
        return CasePlan("row", spec, tuple(names[a.vid] for a in (x, w) if a is not None), signature=signature,
                        describe="RMS norm (recognised from its elementwise form)")

    if any(isinstance(e, MatMul) for e in walk(root)):
        from sage.agent.offline.matmul import plan_matmul

        return plan_matmul(graph, expr, names, signature, out)
    raise NoTemplate("the forward mixes reductions and elementwise work in a way no template covers")


def match_rms_norm(root: Any) -> tuple[Leaf, Leaf | None, float] | None:
    """x * rsqrt(mean(x^2, -1, keepdim) + eps) [* w], in any order, also x / sqrt(...)."""
    terms = _product_terms(root, +1)
    inv = [(e, p) for e, p in terms if _inv_rms(e, p) is not None]
    if len(inv) != 1:
        return None
    x, eps = _inv_rms(*inv[0])
    rest = [(strip(e), p) for e, p in terms if (e, p) != inv[0]]
    if any(p != 1 or not isinstance(e, Leaf) for e, p in rest):
        return None
    others = [e for e, _ in rest]
    if x not in others:
        return None
    others.remove(x)
    if len(others) > 1:
        return None
    return x, (others[0] if others else None), eps


def _product_terms(e: Any, power: int) -> list[tuple[Any, int]]:
    e = strip(e)
    if isinstance(e, Op) and e.name == "mul":
        return _product_terms(e.args[0], power) + _product_terms(e.args[1], power)
    if isinstance(e, Op) and e.name == "div":
        return _product_terms(e.args[0], power) + _product_terms(e.args[1], -power)
    return [(e, power)]


def _inv_rms(e: Any, power: int) -> tuple[Leaf, float] | None:
    e = strip(e)
    if power == 1 and isinstance(e, Op) and e.name == "rsqrt":
        inner = e.args[0]
    elif power == 1 and isinstance(e, Op) and e.name == "reciprocal" and isinstance(strip(e.args[0]), Op) \
            and strip(e.args[0]).name == "sqrt":
        inner = strip(e.args[0]).args[0]
    elif power == -1 and isinstance(e, Op) and e.name == "sqrt":
        inner = e.args[0]
    else:
        return None
    inner = strip(inner)
    if not (isinstance(inner, Op) and inner.name == "add"):
        return None
    a, b = (strip(v) for v in inner.args)
    mean, eps = (a, b) if isinstance(b, Const) else (b, a)
    if not (isinstance(eps, Const) and isinstance(mean, Reduce) and mean.kind == "mean" and mean.keepdim):
        return None
    sq = strip(mean.arg)
    x = _squared_leaf(sq)
    return (x, eps.value) if x is not None else None


def _squared_leaf(e: Any) -> Leaf | None:
    if not isinstance(e, Op):
        return None
    args = [strip(a) for a in e.args]
    if e.name == "square" or (e.name == "pow_scalar" and e.param("exponent") == 2.0):
        return args[0] if isinstance(args[0], Leaf) else None
    if e.name == "mul" and args[0] == args[1] and isinstance(args[0], Leaf):
        return args[0]
    return None


def _same_dtype(graph: Graph, leaves: list[Leaf], out_dtype: str) -> None:
    dtypes = {graph.dtypes[l.vid] for l in leaves} | {out_dtype}
    check_dtypes(sorted(dtypes))
    if len(dtypes) != 1 or out_dtype in ("int32", "bool"):
        raise NoTemplate(f"row kernels take one float dtype for inputs and output, got {sorted(dtypes)}")


def _names(graph: Graph) -> dict[int, str]:
    names = {vid: f"a{pos}" for vid, pos in graph.inputs.items()}
    names.update(graph.params)
    return names


def _signature(graph: Graph) -> tuple:
    """(name, "dtype", dtype) for tensor arguments, (name, "value", v) for Python numbers and
    strings (a mode such as gelu's approximate="tanh" selects another kernel)."""
    sig: list[tuple[str, str, Any]] = [(f"a{pos}", "dtype", graph.dtypes[vid])
                                       for vid, pos in sorted(graph.inputs.items(), key=lambda kv: kv[1])]
    sig += [(f"a{pos}", "value", value) for pos, value in sorted(graph.scalar_args.items())
            if isinstance(value, (int, float, bool, str))]
    return tuple(sig)
