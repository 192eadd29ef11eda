"""The torch_npu stand-in: how long the vendor's eager execution of a reference takes.

`reference_time(task, args, preset)`:

- a task whose public reference is one fused torch_npu operator (`task.fused_op`) is
  one vendor kernel: the operator's roofline (its forward's input and output bytes, the
  vector work and matmul flops of its recorded aten trace) divided by the calibrated
  efficiency of its dominant resource, plus one launch overhead;
- any other task is its aten trace, one eager launch per non-view operator: a simulated
  library kernel where the library has one (its simulated time includes the launch
  overhead, as a candidate's does), else `max(floor(class), roofline / efficiency(class))
  + launch overhead`.

Timings are cached by (kernel or operator, shapes, dtypes, preset, model fingerprint).
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from pydantic import BaseModel

from sage.bench.reference.cache import ReferenceCache, default_cache
from sage.bench.reference.calibration import CLASS_EFFICIENCY, Calibration, calibrate
from sage.bench.reference.library_run import model_fingerprint, simulate
from sage.bench.reference.plan import Plan, plan_call
from sage.bench.reference.work import Work, dominant, roofline_us, tensor_bytes
from sage.kernels import AtenCall, CostClass, TensorMeta, record_forward
from sage.npu.hardware import HardwareSpec, load_preset


class OpTime(BaseModel):
    op: str                          # aten name with overload, e.g. "add.Tensor"
    shapes: list[list[int]]
    dtypes: list[str]
    op_class: CostClass | Literal["fused"]
    source: str                      # simulated | roofline | fused
    time_us: float
    kernel: str = ""                 # the library kernel or formula used
    efficiency: float | None = None  # for roofline rows: the calibrated efficiency applied


class ReferenceTime(BaseModel):
    task: str
    preset: str
    total_us: float
    fused: bool
    fused_op: str | None = None
    launches: int
    ops: list[OpTime]
    notes: list[str] = []


def _hw(preset: str | HardwareSpec) -> HardwareSpec:
    return preset if isinstance(preset, HardwareSpec) else load_preset(preset)


def reference_time(task: Any, args: list, preset: str | HardwareSpec = "ascend910b2", *,
                   cache: ReferenceCache | None = None) -> ReferenceTime:
    """Reference time of one case (`args`) of a task (anything with `make_model()`,
    `fused_op` and `name`)."""
    hw = _hw(preset)
    cache = cache or default_cache()
    model = task.make_model()
    # Clones: a reference that mutates its inputs must not change the caller's case.
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    calls, outputs = record_forward(model, args)
    if getattr(task, "fused_op", None):
        return _fused(task, model, args, calls, outputs, hw, cache)
    cal: Calibration | None = None
    rows: list[OpTime] = []
    notes: list[str] = []
    for call in calls:
        if call.free:
            continue
        plan = plan_call(call, hw)
        if plan.source == "roofline" and cal is None:
            cal = calibrate(hw, cache)
        rows.append(_time_call(call, plan, hw, cache, cal))
    if not rows:
        notes.append("the reference dispatches no kernel (views only): its time is zero")
    total = sum(r.time_us for r in rows)
    return ReferenceTime(task=getattr(task, "name", "task"), preset=hw.name, total_us=total, fused=False,
                         launches=len(rows), ops=rows, notes=notes)


def _call_row(call: AtenCall, **kw: Any) -> OpTime:
    return OpTime(op=call.qualname, shapes=[list(t.shape) for t in call.inputs],
                  dtypes=[t.dtype for t in call.inputs], **kw)


def _time_call(call: AtenCall, plan: Plan, hw: HardwareSpec, cache: ReferenceCache,
               cal: Calibration | None) -> OpTime:
    fp = model_fingerprint(hw.source)
    if plan.source == "simulated":
        assert plan.kernel is not None
        key = f"sim|{hw.name}|{fp}|{plan.kernel.key()}"
        hit = cache.get(key)
        if hit is None:
            hit = simulate(plan.kernel, hw).model_dump()
            cache.put(key, hit)
        t = float(hit["time_us"]) + plan.epilogue_bytes / (hw.chip.hbm_gbps * 1e3)
        label = plan.kernel.label + (" +bias epilogue" if plan.epilogue_bytes else "")
        return _call_row(call, op_class=plan.op_class, source="simulated", time_us=t, kernel=label)
    assert cal is not None
    eff = cal.for_class(plan.op_class)
    t = cal.time_us(plan.op_class, roofline_us(plan.work, hw), hw.launch.overhead_us)
    return _call_row(call, op_class=plan.op_class, source="roofline", time_us=t,
                     kernel=f"roofline({CLASS_EFFICIENCY[plan.op_class]})", efficiency=eff)


def fused_work(model: torch.nn.Module, args: list, calls: list[AtenCall], outputs: list[TensorMeta],
               hw: HardwareSpec) -> Work:
    """The whole operator as one kernel: it reads its inputs and parameters once, writes
    its outputs once, and does the vector work and matmul flops of its aten trace."""
    ins = [TensorMeta(shape=tuple(a.shape), dtype=str(a.dtype).removeprefix("torch."))
           for a in args if isinstance(a, torch.Tensor)]
    ins += [TensorMeta(shape=tuple(p.shape), dtype=str(p.dtype).removeprefix("torch."))
            for p in list(model.parameters()) + list(model.buffers())]
    vec = cube = 0.0
    fp32_cube = False
    for call in calls:
        if call.free:
            continue
        w = plan_call(call, hw).work
        vec += w.vector_cycles
        cube += w.cube_flops
        fp32_cube = fp32_cube or (w.fp32_cube and w.cube_flops > 0)
    return Work(bytes=tensor_bytes(ins) + tensor_bytes(outputs), vector_cycles=vec,
                cube_flops=cube, fp32_cube=fp32_cube)


def _fused(task: Any, model, args, calls, outputs, hw: HardwareSpec, cache: ReferenceCache) -> ReferenceTime:
    work = fused_work(model, args, calls, outputs, hw)
    cal = calibrate(hw, cache)
    bound = dominant(work, hw)
    eff = cal.efficiencies[bound]
    t = max(cal.floor_us[bound], roofline_us(work, hw) / eff) + hw.launch.overhead_us
    row = OpTime(op=task.fused_op, shapes=[list(a.shape) for a in args if isinstance(a, torch.Tensor)],
                 dtypes=[str(a.dtype).removeprefix("torch.") for a in args if isinstance(a, torch.Tensor)],
                 op_class="fused", source="fused", time_us=t, kernel=f"fused roofline ({bound}-bound)",
                 efficiency=eff)
    n_eager = sum(1 for c in calls if not c.free)
    notes = [f"one fused vendor kernel: {work.bytes / 1e6:.3f} MB in+out, "
             f"{work.vector_cycles:.3g} vector cycles, {work.cube_flops:.3g} cube flops; "
             f"{bound}-bound at efficiency {eff:.3f} (the plain-torch trace has {n_eager} eager ops)"]
    return ReferenceTime(task=getattr(task, "name", "task"), preset=hw.name, total_us=t, fused=True,
                         fused_op=task.fused_op, launches=1, ops=[row], notes=notes)

