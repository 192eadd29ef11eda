"""The *expert* baseline: the DSL library kernels, simulated exactly as a candidate is.

For every aten call with a library form (`plan.plan_call`), the library kernel is run in
the simulator on random inputs of the call's shapes and its device time is read from its
profile, by the same path (`sage.npu.execute`) and the same timing model a candidate goes
through: no extrapolation, no shortcut. A kernel file made of these kernels
(`kernel_files.py`) evaluated as a candidate therefore scores 1.000 against this baseline.

Simulated timings are cached (`cache.py`) by preset, model fingerprint and kernel.
"""

from __future__ import annotations

from pydantic import BaseModel

from sage.bench.reference.cache import ReferenceCache
from sage.bench.reference.library_run import model_fingerprint, simulate
from sage.bench.reference.plan import plan_call
from sage.kernels import AtenCall
from sage.npu.hardware import HardwareSpec


class ExpertTime(BaseModel):
    device_us: float               # the library kernel's busy device time (work + each launch's fixed cost)
    kernel: str


def expert_time(call: AtenCall, hw: HardwareSpec, cache: ReferenceCache) -> ExpertTime | None:
    """The library kernel's time for this call, or None when the library has no form for it."""
    plan = plan_call(call, hw)
    if plan.source != "simulated" or plan.kernel is None:
        return None
    key = f"expert|{hw.name}|{model_fingerprint(hw.source)}|{plan.kernel.key()}"
    hit = cache.get(key)
    if hit is None:
        hit = simulate(plan.kernel, hw).model_dump()
        cache.put(key, hit)
    # The library matmul has no bias operand: a fused row bias is read at HBM rate.
    extra = plan.epilogue_bytes / (hw.chip.hbm_gbps * 1e3)
    label = plan.kernel.label + (" +bias epilogue" if plan.epilogue_bytes else "")
    # Busy time, not the event-timed span: the call becomes one step of the reference's own
    # timeline, whose gaps come from that timeline, not from the library kernel's host code.
    busy = float(hit["kernel_us"]) + int(hit["launches"]) * hw.launch.device_fixed_us
    return ExpertTime(device_us=busy + extra, kernel=label)
