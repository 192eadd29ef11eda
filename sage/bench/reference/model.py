"""The torch_npu stand-in: how long the vendor's eager execution of a reference takes.

`reference_time(task, args, preset)` traces the forward once and builds the vendor's
kernel sequence:

- a task whose public reference is one fused torch_npu operator (`task.fused_op`) is one
  vendor kernel: its forward's inputs, parameters and outputs moved once, the vector work
  and matmul FLOPs of its recorded aten trace (`fused_work`), timed in the group of its
  dominant unit;
- any other task is its eager chain (`chain.py`): the kernels torch_npu launches for each
  non-view aten call (`kernel_paths.py`: one AI-core kernel unless a cited path says more
  kernels or the AI CPU), timed analytically (`vendor.py`, AI CPU kernels by `aicpu.py`)
  with L2 hits where the chain re-reads data, plus the device→host syncs of data-dependent ops.

The steps go through the eager timeline (`sage.npu.timeline`) a candidate's launches go
through, and give its three times (`sage.npu.timeline.Times`): `kernel_us` (the vendor
kernels' durations summed, as msprof's op_summary lists them), `device_us` (event-timed:
the first kernel's start to the last one's end, gaps included) and `end_to_end_us` (the
scored reference time), with the split into device fixed cost and exposed host time. With `expert=True` every
call with a library kernel is also timed by the simulated *expert* kernel (`expert.py`).
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from pydantic import BaseModel, computed_field

from sage.bench.reference.cache import ReferenceCache, default_cache
from sage.bench.reference.chain import ChainCall, chain_steps, eager_chain
from sage.bench.reference.cycles import without_cycle_collection
from sage.bench.reference.essential import Essential, essential_work
from sage.bench.reference.expert import expert_time
from sage.bench.reference.vendor import group_of, resource_us, vendor_time
from sage.bench.reference.work import Work, shared_work, tensor_bytes, work_of
from sage.kernels import CostClass, Graph, TensorMeta, trace_graph
from sage.npu.hardware import HardwareSpec, load_preset
from sage.npu.timeline import LaunchCosts, Step, Timeline, Times, run_timeline


class OpTime(BaseModel):
    op: str                          # aten name with overload, e.g. "add.Tensor"
    shapes: list[list[int]]
    dtypes: list[str]
    op_class: CostClass | Literal["fused", "sync"]
    group: str | None = None         # the calibrated vendor group that timed it
    device_us: float = 0.0           # fixed + work (0 for a sync without a kernel)
    work_us: float = 0.0
    bound: str = ""                  # memory | vector | cube (which term set the vendor time)
    l2_hit_bytes: float = 0.0
    roofline_us: float = 0.0         # this kernel's own work at each unit's peak, launch excluded
    sync: bool = False               # the host waits for the device after it
    expert_device_us: float | None = None
    expert_kernel: str = ""
    unit: str = "aicore"             # where its kernels run: aicore, aicpu, or aicore+aicpu (a cast, then the AI CPU)
    kernels: int = 1                 # device kernels torch_npu launches for it (kernel_paths.py)
    path: str = "default"            # the kernel_paths.PATHS row that set them, or "default"
    path_kernels: list[dict] = []    # per kernel when more than one, or on the AI CPU: name, unit, device_us


class ReferenceTime(BaseModel):
    task: str
    preset: str
    end_to_end_us: float             # the scored reference time: host dispatch overlapped with the device
    device_us: float                 # event-timed: first kernel's start to the last one's end, gaps included
    kernel_us: float                 # the vendor kernels' durations summed (msprof op_summary)
    device_fixed_us: float
    host_dispatch_us: float          # dispatch paid by the host (overlapped or not)
    host_exposed_us: float           # end-to-end time the device waits on the host (dispatch, syncs)
    sync_us: float
    launches: int
    syncs: int
    roofline_us: float               # essential-work bound of the case (launch excluded)
    roofline_bound: str
    fused: bool
    fused_op: str | None = None
    expert_device_us: float | None = None       # the same ops timed by the library kernels where they have one (span)
    expert_end_to_end_us: float | None = None
    expert_ops: int = 0                         # ops with an expert kernel (the rest keep the vendor time)
    ops: list[OpTime]
    notes: list[str] = []
    essential: Essential | None = None          # the forward's essential work (the roofline's, the tripwire's)

    @computed_field
    @property
    def total_us(self) -> float:
        """The scored time (end to end); kept under the name older rows and callers use."""
        return self.end_to_end_us

    @property
    def times(self) -> Times:
        return Times(kernel_us=self.kernel_us, device_us=self.device_us, end_to_end_us=self.end_to_end_us)


def _hw(preset: str | HardwareSpec) -> HardwareSpec:
    return preset if isinstance(preset, HardwareSpec) else load_preset(preset)


def reference_time(task: Any, args: list, preset: str | HardwareSpec = "ascend910b2", *, expert: bool = False,
                   cache: ReferenceCache | None = None, kernel_paths: bool = True) -> ReferenceTime:
    """Reference time of one case (`args`) of a task (anything with `make_model()`,
    `fused_op` and `name`). `kernel_paths=False` times every call as one AI-core kernel
    (the model before kernel paths; benchmarks/kernel_paths.py compares the two)."""
    hw = _hw(preset)
    model = task.make_model()
    # Clones: a reference that mutates its inputs must not change the caller's case.
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    with without_cycle_collection():
        with torch.no_grad():
            graph = trace_graph(model, args)
        with shared_work():
            return _time_graph(task, graph, hw, expert, cache, kernel_paths)


def _time_graph(task: Any, graph: Graph, hw: HardwareSpec, expert: bool, cache: ReferenceCache | None,
                kernel_paths: bool = True) -> ReferenceTime:
    essential = essential_work(graph, hw)
    fused_op = getattr(task, "fused_op", None)
    notes: list[str] = []
    chain: list[ChainCall] = []
    if fused_op:
        rows, steps = _fused_rows(fused_op, graph, hw)
        n_eager = sum(1 for n in graph.nodes if not n.call.free)
        notes.append(f"one fused vendor kernel ({fused_op}); the plain-torch trace has {n_eager} eager ops")
    else:
        chain = eager_chain(graph, hw, paths=kernel_paths)
        rows, steps = [_row(c, hw) for c in chain], chain_steps(chain)
        if not steps:
            notes.append("the reference dispatches no kernel (views only): its time is zero")
    costs = LaunchCosts.of(hw)
    tl = run_timeline(steps, costs, keep_steps=False)
    ref = ReferenceTime(task=getattr(task, "name", "task"), preset=hw.name, end_to_end_us=tl.end_to_end_us,
                        device_us=tl.device_us, kernel_us=tl.kernel_us, device_fixed_us=tl.device_fixed_us,
                        host_dispatch_us=tl.host_dispatch_us, host_exposed_us=tl.host_exposed_us, sync_us=tl.sync_us,
                        launches=tl.kernels, syncs=tl.syncs, roofline_us=essential.bound_us,
                        roofline_bound=essential.bound, fused=bool(fused_op), fused_op=fused_op, ops=rows,
                        notes=notes, essential=essential)
    if expert and not fused_op:
        _add_expert(ref, chain, hw, cache or default_cache())
    return ref


def _row(c: ChainCall, hw: HardwareSpec) -> OpTime:
    call = c.call
    base = dict(op=call.qualname, shapes=[list(t.shape) for t in call.inputs], dtypes=[t.dtype for t in call.inputs],
                sync=c.sync)
    if c.time is None:
        return OpTime(**base, op_class="sync", bound="sync", unit="", kernels=0)
    path = dict(unit="+".join(dict.fromkeys(k.unit.value for k in c.kernels)), kernels=len(c.kernels),
                path=c.path.rule if c.path else "default")
    if len(c.kernels) > 1 or path["unit"] != "aicore":
        path["path_kernels"] = [dict(name=k.name, unit=k.unit.value, device_us=k.time.device_us) for k in c.kernels]
    return OpTime(**base, **path, op_class=c.work.op_class or "fused", group=c.time.group,
                  device_us=c.time.device_us, work_us=c.time.work_us, bound=c.time.bound,
                  l2_hit_bytes=c.time.l2_hit_bytes, roofline_us=max(resource_us(c.work, hw)))


def fused_work(graph: Graph, hw: HardwareSpec) -> Work:
    """The whole operator as one kernel: it reads its inputs and parameters once, writes
    its outputs once, and does the vector work and matmul flops of its aten trace."""
    def meta(v: int) -> TensorMeta:
        return TensorMeta(shape=graph.shapes[v], dtype=graph.dtypes[v])

    ins = [meta(v) for v in graph.inputs] + [meta(v) for v in graph.params]
    outs = [meta(v) for v in graph.outputs]
    vec = cube = 0.0
    fp32_cube = False
    tiles = 0
    for node in graph.nodes:
        if node.call.free:
            continue
        w = work_of(node.call, hw)
        vec += w.vector_cycles
        cube += w.cube_flops
        tiles += w.cube_tiles
        fp32_cube = fp32_cube or (w.fp32_cube and w.cube_flops > 0)
    return Work(bytes=tensor_bytes(ins) + tensor_bytes(outs), vector_cycles=vec, cube_flops=cube,
                fp32_cube=fp32_cube, cube_tiles=tiles)


def _fused_rows(fused_op: str, graph: Graph, hw: HardwareSpec) -> tuple[list[OpTime], list[Step]]:
    work = fused_work(graph, hw)
    group = group_of(None, work, hw)
    t = vendor_time(work, group, hw)
    row = OpTime(op=fused_op, shapes=[list(graph.shapes[v]) for v in graph.inputs],
                 dtypes=[graph.dtypes[v] for v in graph.inputs], op_class="fused", group=group,
                 device_us=t.device_us, work_us=t.work_us, bound=t.bound, roofline_us=max(resource_us(work, hw)))
    return [row], [Step(kind="kernel", work_us=t.work_us, label=fused_op)]


def _add_expert(ref: ReferenceTime, chain: list[ChainCall], hw: HardwareSpec, cache: ReferenceCache) -> None:
    """Times every op with a library kernel by that kernel (one launch in place of its vendor
    path's kernels); the others keep the vendor time."""
    expert_steps: list[Step] = []
    covered = 0
    for c, row in zip(chain, ref.ops):
        e = expert_time(c.call, hw, cache) if c.kernels else None
        if e is not None:
            row.expert_device_us, row.expert_kernel = e.device_us, e.kernel
            covered += 1
            expert_steps.append(Step(kind="kernel", work_us=max(e.device_us - hw.launch.device_fixed_us, 0.0),
                                     label=c.call.qualname))
        else:
            expert_steps.extend(s for s in chain_steps([c]) if s.kind == "kernel")
        if c.sync:
            expert_steps.append(Step(kind="sync", label=f"sync after {c.call.qualname}"))
    tl: Timeline = run_timeline(expert_steps, LaunchCosts.of(hw), keep_steps=False)
    ref.expert_device_us, ref.expert_end_to_end_us, ref.expert_ops = tl.device_us, tl.end_to_end_us, covered
