"""The essential work of a forward: what any implementation must move and compute.

- bytes: every forward output written once, plus the forward inputs and parameters the
  computation must read: all of a tensor a dense op reads (or, where dense ops read views of
  it, the views' bytes, each view once, at most the whole tensor); for a tensor that only gather-
  like ops read (gather, index_select, embedding, index), the rows or elements they fetch
  (their output bytes) and not the whole table. Index tensors count whole.
- cube FLOPs: 2 x the MACs of the reference's matmuls and convolutions.

Every forward starts with a cold L2 (as a candidate's run does), so these bytes cost HBM
bandwidth: `bound_us = max(bytes / HBM, cube FLOPs / cube peak)`, the launch excluded. The
roofline fraction of a run is this bound over its device time (`sage.npu.profile`).
"""

from __future__ import annotations

from pydantic import BaseModel

from sage.bench.reference.work import work_of
from sage.kernels import CostClass, Graph, WorkRule, dtype_size, op_def
from sage.npu.hardware import HardwareSpec
from sage.npu.profile import roofline_bound_us

# Ops that read only the addressed rows/elements of their first operand (the table).
_GATHER_RULES = frozenset({WorkRule.GATHER})


class Essential(BaseModel):
    bytes: float
    cube_flops: float
    fp32_cube: bool = False
    bound_us: float = 0.0
    bound: str = "memory"


def essential_work(graph: Graph, hw: HardwareSpec) -> Essential:
    root: dict[int, int] = {}

    def base(v: int) -> int:
        while v in root:
            v = root[v]
        return v

    leaves = {**{v: None for v in graph.inputs}, **{v: None for v in graph.params}}
    dense: dict[int, set[int]] = {}     # leaf -> the values (it, or views of it) dense ops read
    gathered: dict[int, float] = {}
    flops = 0.0
    fp32 = False
    for node in graph.nodes:
        call = node.call
        if call.free:
            if node.args:
                for o in node.outs:
                    root[o] = node.args[0]
            continue
        entry = op_def(call.name)
        table_only = entry is not None and entry.work in _GATHER_RULES
        for i, v in enumerate(node.args):
            b = base(v)
            if b not in leaves:
                continue
            if table_only and i == 0:        # the table (gather input, embedding weight) comes first
                gathered[b] = gathered.get(b, 0.0) + float(sum(t.nbytes for t in call.outputs))
            else:
                dense.setdefault(b, set()).add(v)
        w = work_of(call, hw)
        if w.op_class in (CostClass.MATMUL, CostClass.CONV):
            flops += w.cube_flops
            fp32 = fp32 or w.fp32_cube
    nbytes = 0.0
    for v in leaves:
        full = float(_nbytes(graph, v))
        if v in dense:
            # what the dense ops read of it: the whole tensor, or the views they read (a slice,
            # a chunk), each view once, at most the whole: `x[:, :10].relu()` reads 10 columns
            nbytes += min(full, sum(float(_nbytes(graph, u)) for u in dense[v]))
        elif v in gathered:
            nbytes += min(full, gathered[v])
    nbytes += float(sum(_nbytes(graph, v) for v in graph.outputs))
    bound, kind = roofline_bound_us(hw, nbytes, flops, fp32_cube=fp32)
    return Essential(bytes=nbytes, cube_flops=flops, fp32_cube=fp32, bound_us=bound, bound=kind)


def _nbytes(graph: Graph, v: int) -> int:
    n = 1
    for d in graph.shapes.get(v, ()):
        n *= d
    return n * dtype_size(graph.dtypes.get(v, "float32"))
