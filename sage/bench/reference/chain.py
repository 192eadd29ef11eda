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

A call's kernels are those of its path (`kernel_paths.py`): one AI-core kernel by default;
a Cast kernel per input the aclnn layer casts first; an AI CPU kernel (timed by `aicpu.py`)
where the dtype has no AI-core kernel on a 910B. Each kernel is one step of the timeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sage.bench.reference.aicpu import aicpu_kernel_us
from sage.bench.reference.kernel_paths import KernelPath, PathKernel, Unit, aicpu_elements, default_path, path_of
from sage.bench.reference.vendor import VendorTime, group_of, vendor_time
from sage.bench.reference.work import Work, work_of
from sage.kernels import AtenCall, Graph, Node, base_name
from sage.npu.hardware import HardwareSpec
from sage.npu.sim.l2 import L2Cache
from sage.npu.timeline import Step

# Calls whose result the host must read before it can go on: a scalar read back, or an
# output whose size depends on the data (torch_npu syncs to size the output).
SYNC_OPS = frozenset({"_local_scalar_dense", "item", "is_nonzero", "equal", "nonzero", "argwhere", "masked_select",
                      "unique", "_unique", "_unique2", "unique_dim", "unique_consecutive"})
# Ops whose output size is data-dependent only for some arguments.
_MASK_SYNC_OPS = frozenset({"index", "index_put", "_index_put_impl"})


# Dataclasses: one of each per call of a forward (tens of thousands for nms), built in the hot loop.
@dataclass(slots=True)
class KernelTime:
    """One device kernel of a call's path, timed."""

    name: str
    unit: Unit
    time: VendorTime


@dataclass(slots=True)
class ChainCall:
    call: AtenCall
    work: Work
    time: VendorTime | None          # the call's kernels together; None: no kernel (a sync-only call such as .item())
    sync: bool = False
    path: KernelPath | None = None
    kernels: list[KernelTime] = field(default_factory=list)   # in launch order, one timeline step each


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


def eager_chain(graph: Graph, hw: HardwareSpec, *, paths: bool = True) -> list[ChainCall]:
    """Every kernel the vendor launches for this forward, timed, in order. `paths=False`: one
    AI-core kernel per call, as before the kernel paths (benchmarks/kernel_paths.py compares)."""
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
        hits = [res.read(v, t.nbytes) for v, t in zip(node.args, call.inputs)]
        for v, t in zip(node.outs, call.outputs):
            res.write(v, t.nbytes)
        path = path_of(call) if paths else default_path(call)
        work = work_of(call, hw)
        kernels = [KernelTime(name=k.name, unit=k.unit, time=_kernel_time(k, call, work, hits, hw))
                   for k in path.kernels]
        out.append(ChainCall(call=call, work=work, time=_together(kernels), sync=sync, path=path, kernels=kernels))
    return out


def _kernel_time(k: PathKernel, call: AtenCall, work: Work, hits: list[int], hw: HardwareSpec) -> VendorTime:
    """An AI CPU kernel by the AI CPU fit; an AI-core one by the vendor model, with L2 hits for
    what it reads while resident (a cast's result was just written: resident)."""
    own = work if k.call is call else work_of(k.call, hw)
    if k.unit is Unit.AICPU:
        return VendorTime(group="aicpu", fixed_us=hw.launch.device_fixed_us,
                          work_us=aicpu_kernel_us(aicpu_elements(k.call), _aicore(own, hw).work_us), bound="aicpu")
    if k.call is call:
        hit = float(sum(hits))
    elif k.cast_of is not None:
        hit = float(hits[k.cast_of])
    else:                            # the op's own kernel after casts: cast inputs are resident
        hit = float(sum(h if a.dtype == b.dtype else b.nbytes for h, a, b in zip(hits, call.inputs, k.call.inputs)))
    return _aicore(own, hw, hit)


def _aicore(work: Work, hw: HardwareSpec, l2_hit_bytes: float = 0.0) -> VendorTime:
    return vendor_time(work, group_of(work.op_class, work, hw), hw, l2_hit_bytes=l2_hit_bytes)


def _together(kernels: list[KernelTime]) -> VendorTime:
    """The call's kernels as one row: fixed costs and work summed, group and bound of its own (last) kernel."""
    if len(kernels) == 1:
        return kernels[0].time
    own = kernels[-1].time
    return VendorTime(group=own.group, fixed_us=sum(k.time.fixed_us for k in kernels),
                      work_us=sum(k.time.work_us for k in kernels), bound=own.bound,
                      l2_hit_bytes=sum(k.time.l2_hit_bytes for k in kernels))


def chain_steps(chain: list[ChainCall]) -> list[Step]:
    steps: list[Step] = []
    for c in chain:
        for k in c.kernels:
            label = c.call.qualname if len(c.kernels) == 1 else f"{c.call.qualname} [{k.name}]"
            steps.append(Step(kind="kernel", work_us=k.time.work_us, label=label))
        if c.sync:
            steps.append(Step(kind="sync", label=f"sync after {c.call.qualname}"))
    return steps
