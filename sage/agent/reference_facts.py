"""What the agent is told about the reference it must beat, per case: how torch_npu runs it
(launches, one fused vendor op or an eager chain, device and end-to-end time, syncs) and
the essential bytes any kernel must move. Computed once per episode: the reference does
not change between attempts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

if TYPE_CHECKING:
    from sage.bench.tasks import Task

TOP_OPS = 4   # the reference's costliest eager kernels named in the prompt


class ReferenceFacts(BaseModel):
    index: int
    inputs: list[str]
    launches: int
    fused: bool
    fused_op: str | None = None
    end_to_end_us: float
    device_us: float                 # event-timed span, gaps included (docs/evaluation.md, "Three times")
    kernel_us: float = 0.0           # the kernels' durations summed
    host_exposed_us: float
    syncs: int
    essential_bytes: float
    roofline_us: float
    roofline_bound: str
    top_ops: list[str] = []          # "add.Tensor 3.1 us" of the costliest kernels

    def line(self) -> str:
        how = (f"one fused vendor kernel ({self.fused_op})" if self.fused
               else f"an eager chain of {self.launches} kernel launches" + (f" and {self.syncs} host syncs"
                                                                             if self.syncs else ""))
        ops = f"; costliest: {', '.join(self.top_ops)}" if self.top_ops and not self.fused else ""
        return (f"case {self.index} ({', '.join(self.inputs)}): torch_npu runs {how}: {self.end_to_end_us:.1f} us "
                f"end to end, {self.device_us:.1f} us on the device (event-timed, gaps included), "
                f"{self.kernel_us:.1f} us of kernel time{ops}. Essential traffic "
                f"{format_bytes(self.essential_bytes)} (bound {self.roofline_us:.1f} us, {self.roofline_bound}).")


def reference_facts(task: Task, preset: str, cases: int | list[int] | None) -> list[ReferenceFacts]:
    """Per selected case; empty when the reference cannot be traced or timed (the
    evaluation then reports that as the task's problem, never the kernel's)."""
    import torch

    from sage.bench.evaluate import ReferenceFailure, describe_inputs, reference_time_for, select_cases
    from sage.bench.reference import essential_work
    from sage.bench.tasks import ReferenceUnavailable, TaskLoadError
    from sage.kernels import trace_graph
    from sage.npu.hardware import load_preset

    hw = load_preset(preset)
    out: list[ReferenceFacts] = []
    try:
        model, selected = select_cases(task, cases)
        for index, case in selected:
            ref = reference_time_for(task, case, preset)
            if ref is None:
                return []
            with torch.no_grad():
                essential = essential_work(trace_graph(model, [a.clone() if isinstance(a, torch.Tensor) else a
                                                               for a in case]), hw)
            kernels = sorted((o for o in ref.ops if o.op_class != "sync"), key=lambda o: -o.device_us)
            out.append(ReferenceFacts(
                index=index, inputs=describe_inputs(case), launches=ref.launches, fused=ref.fused,
                fused_op=ref.fused_op, end_to_end_us=ref.end_to_end_us, device_us=ref.device_us,
                kernel_us=ref.kernel_us,
                host_exposed_us=ref.host_exposed_us, syncs=ref.syncs, essential_bytes=essential.bytes,
                roofline_us=ref.roofline_us, roofline_bound=ref.roofline_bound,
                top_ops=[f"{o.op} {o.device_us:.1f} us" for o in kernels[:TOP_OPS]]))
    except (ReferenceUnavailable, ReferenceFailure, TaskLoadError):
        return []
    return out


def format_bytes(n: float) -> str:
    for unit, size in (("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"
