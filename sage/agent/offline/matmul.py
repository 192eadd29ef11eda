"""Matrix products: A @ B, with a bias row as the fused epilogue (addmm, or mm + bias)."""

from __future__ import annotations

from typing import Any

from sage.agent.offline.analysis import Leaf, MatMul, NoTemplate, Transposed, check_dtypes, strip
from sage.agent.offline.templates import CasePlan
from sage.kernels import Graph, MatmulSpec, Op


def plan_matmul(graph: Graph, expr: Any, names: dict[int, str], signature: tuple, out: int) -> CasePlan:
    root = strip(expr)
    bias = None
    if isinstance(root, Op) and root.name == "add":
        a, b = (strip(x) for x in root.args)
        mm, bias = (a, b) if isinstance(a, MatMul) else (b, a)
        if not isinstance(mm, MatMul) or mm.bias is not None:
            raise NoTemplate("only a bias row can follow the matrix product in the fused epilogue")
        root = mm
    if not isinstance(root, MatMul):
        raise NoTemplate("a matrix product inside other work has no template; the fused epilogue is a bias add")
    if root.bias is not None:
        bias = strip(root.bias)
    if bias is not None:
        # The DSL's Mmad has no bias operand and the library kernel no epilogue for it.
        raise NoTemplate("a matrix product with a bias has no template (the cube kernel has no bias epilogue)")
    a, b = strip(root.a), strip(root.b)
    trans_a, trans_b = isinstance(a, Transposed), isinstance(b, Transposed)
    a, b = (strip(a.arg) if trans_a else a), (strip(b.arg) if trans_b else b)
    operands = [a, b] + ([bias] if bias is not None else [])
    if not all(isinstance(x, Leaf) for x in operands):
        raise NoTemplate("the matrix product must read its operands straight from the inputs")
    ranks = (len(graph.shapes[a.vid]), len(graph.shapes[b.vid]))
    if ranks not in ((2, 2), (3, 3)) or (ranks == (3, 3) and (trans_a or trans_b or bias is not None)):
        raise NoTemplate("only 2-D matrix products (either operand transposed) and plain batched ones have a template")
    n = graph.shapes[b.vid][-2 if trans_b else -1]
    if bias is not None and graph.shapes[bias.vid] not in ((n,), (1, n)):
        raise NoTemplate(f"the bias must be one row of N={n} values, got {list(graph.shapes[bias.vid])}")
    dtypes = {graph.dtypes[x.vid] for x in operands} | {graph.dtypes[out]}
    check_dtypes(sorted(dtypes))
    if len(dtypes) != 1:
        raise NoTemplate(f"matmul operands and output must share one float dtype, got {sorted(dtypes)}")
    spec = MatmulSpec(dtype=graph.dtypes[a.vid], batched=ranks == (3, 3), trans_a=trans_a, trans_b=trans_b,
                      name="mm")
    return CasePlan("matmul", spec, tuple(names[x.vid] for x in operands), signature=signature,
                    describe="matrix product on the cube" + (" with a fused bias epilogue" if bias is not None else ""))
