"""The vendor's eager chain of one forward: one kernel per non-view aten call, with L2 reuse and syncs.

The forward is traced once (`sage.kernels.trace_graph`), so every tensor value is numbered
and views are followed to the value they read. L2 state is the same as a candidate's
launches see it (the simulator starts every run with an empty L2 and keeps it across the
launches of one forward): forward inputs and parameters are cold on first read; a value a
call wrote, or an input read before, is resident until LRU capacity evicts it. A read of a
resident value hits L2 (`vendor.resource_us` charges it at the L2 rate). Writes make their
bytes resident.

Device→host syncs (`SYNC_OPS`, and index / index_put with a bool mask, whose result size
is data-dependent) make the host wait for the device (`sage.npu.timeline`).
"""

from __future__ import annotations

from pydantic import BaseModel

from sage.bench.reference.vendor import VendorTime, group_of, vendor_time
from sage.bench.reference.work import Work, work_of
from sage.kernels import AtenCall, CostClass, Graph, Node, base_name
from sage.npu.hardware import HardwareSpec
from sage.npu.sim.l2 import L2Cache
from sage.npu.timeline import Step

# Calls whose result the host must read before it can go on: a scalar read back, or an
# output whose size depends on the data (torch_npu syncs to size the output).
SYNC_OPS = frozenset({"_local_scalar_dense", "item", "is_nonzero", "equal", "nonzero", "argwhere", "masked_select",
                      "unique", "_unique", "_unique2", "unique_dim", "unique_consecutive"})
# Ops whose output size is data-dependent only for some arguments.
_MASK_SYNC_OPS = frozenset({"index", "index_put", "_index_put_impl"})


class ChainCall(BaseModel):
    call: AtenCall
    work: Work
    time: VendorTime | None          # None: no kernel (a sync-only call such as .item())
    sync: bool = False


def needs_sync(call: AtenCall) -> bool:
    name = base_name(call.name)
    if name in SYNC_OPS:
        return True
    if name == "repeat_interleave":      # tensor repeats without output_size: the size is data-dependent
        return "Tensor" in call.overload and call.kwargs.get("output_size") is None
    return name in _MASK_SYNC_OPS and any(t.dtype == "bool" for t in call.inputs[1:])


class _Residency:
    """L2 residency of tensor values; a view reads the value it views."""

    def __init__(self, graph: Graph, hw: HardwareSpec):
        self.l2 = L2Cache(hw.chip.l2_bytes)
        self.root: dict[int, int] = {}

    def base(self, vid: int) -> int:
        while vid in self.root:
            vid = self.root[vid]
        return vid

    def alias(self, node: Node) -> None:
        if node.args:
            for out in node.outs:
                self.root[out] = node.args[0]

    def read(self, vid: int, nbytes: int) -> int:
        return self.l2.access(self.base(vid), 0, nbytes)

    def write(self, vid: int, nbytes: int) -> None:
        self.l2.access(self.base(vid), 0, nbytes)


def eager_chain(graph: Graph, hw: HardwareSpec) -> list[ChainCall]:
    """Every kernel the vendor launches for this forward, timed, in order."""
    res = _Residency(graph, hw)
    out: list[ChainCall] = []
    for node in graph.nodes:
        call = node.call
        sync = needs_sync(call)
        if call.free:
            res.alias(node)
            if sync:
                out.append(ChainCall(call=call, work=Work(), time=None, sync=True))
            continue
        if call.name.endswith("_") and node.args:
            for o in node.outs:          # in place: the result is the input's storage
                res.root[o] = node.args[0]
        hit = sum(res.read(v, t.nbytes) for v, t in zip(node.args, call.inputs))
        for v, t in zip(node.outs, call.outputs):
            res.write(v, t.nbytes)
        work = work_of(call, hw)
        klass: CostClass | None = work.op_class
        time = vendor_time(work, group_of(klass, work, hw), hw, l2_hit_bytes=float(hit))
        out.append(ChainCall(call=call, work=work, time=time, sync=sync))
    return out


def chain_steps(chain: list[ChainCall]) -> list[Step]:
    steps: list[Step] = []
    for c in chain:
        if c.time is not None:
            steps.append(Step(kind="kernel", work_us=c.time.work_us, label=c.call.qualname))
        if c.sync:
            steps.append(Step(kind="sync", label=f"sync after {c.call.qualname}"))
    return steps
