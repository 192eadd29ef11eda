"""Eager execution on one stream: host dispatch overlapped with device execution.

Both sides of a speedup go through this one model (docs/reference-model.md §1): the
vendor's eager ops (each aten kernel torch_npu launches) and a candidate's launches
(each `kern[block_dim](...)` in its host `forward`). A step is either

- a **kernel**: the host spends `host_dispatch_us` enqueueing it (Python → torch_npu →
  aclnn → task queue); the device starts it once the host has enqueued it and the
  previous kernel has finished, and runs it for `device_fixed_us + work_us`;
- a **sync** (a device→host read: `.item()`, `nonzero` and other data-dependent shapes):
  the host waits until the device has drained, then pays `sync_us`.

Three times come out of one timeline (`Times`), named as msprof and torch users know them:

- `kernel_us`: the sum of the kernels' durations, what msprof's op_summary lists per kernel
  ("Task Duration"; the gap before each is its "Task Wait Time":
  https://www.hiascend.com/doc_center/source/zh/CANNCommunityEdition/80RC1alpha001/devaids/auxiliarydevtool/atlasprofiling_16_0165.html):
  each kernel's work alone, no launch fixed cost, no gap. (CANN counts the task's dispatch to
  the core and its end response inside Task Duration; the model has no such share apart from
  `device_fixed_us`, which it keeps out of `kernel_us`, so a measured Task Duration may sit a
  little above the model's work for the same kernel.)
- `device_us`: event timing of the device, from the first kernel's start to the last one's
  end: every launch's fixed cost (`device_fixed_us`, the floor events see for a launch) and
  every gap in between (the device waiting for the host's next dispatch or a sync);
- `end_to_end_us`: host-inclusive, when the last of host and device is done (the start at
  t = 0 on an idle device, the end after the last kernel or sync): the scored time.

Before results schema 2, `device_us` was the sum of the launches' busy times (fixed cost +
work), without the gaps; the two agree where the device never waits for the host.
Allocations (`empty`) are free, as torch_npu's caching allocator makes them, so they are
no step at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from sage.npu.hardware import HardwareSpec


class LaunchCosts(BaseModel):
    """The per-launch costs of a preset's `[launch]` section."""

    model_config = ConfigDict(frozen=True)

    host_dispatch_us: float
    device_fixed_us: float
    sync_us: float

    @classmethod
    def of(cls, hw: HardwareSpec) -> LaunchCosts:
        return cls(host_dispatch_us=hw.launch.host_dispatch_us, device_fixed_us=hw.launch.device_fixed_us,
                   sync_us=hw.launch.sync_us)


class Step(BaseModel):
    kind: Literal["kernel", "sync"] = "kernel"
    work_us: float = 0.0             # device time of a kernel beyond the fixed cost
    label: str = ""


class StepTime(BaseModel):
    label: str
    kind: Literal["kernel", "sync"]
    enqueued_us: float               # host clock when the step was handed over
    start_us: float                  # device start (kernel) or host resume (sync)
    end_us: float
    device_us: float = 0.0           # fixed + work (kernels only)


class Times(BaseModel):
    """The three times of one forward(), for a reference and for a candidate alike (module docstring)."""

    kernel_us: float                 # sum of kernel durations (msprof op_summary): no launch, no gap
    device_us: float                 # event-timed: first kernel's start to the last one's end, gaps included
    end_to_end_us: float             # host-inclusive: the scored time


class Timeline(BaseModel):
    end_to_end_us: float
    device_us: float                 # span: the first kernel's start (its fixed cost) to the last one's end
    kernel_us: float                 # the kernels' work alone
    device_fixed_us: float
    host_dispatch_us: float          # dispatch time paid by the host (hidden or not)
    sync_us: float
    kernels: int
    syncs: int
    steps: list[StepTime] = []

    @property
    def device_busy_us(self) -> float:
        """Time the device is busy: every kernel's fixed cost and work (the span less its gaps)."""
        return self.kernel_us + self.device_fixed_us

    @property
    def host_exposed_us(self) -> float:
        """End-to-end time the device spends idle: waiting for the host to dispatch or sync."""
        return max(self.end_to_end_us - self.device_busy_us, 0.0)

    @property
    def times(self) -> Times:
        return Times(kernel_us=self.kernel_us, device_us=self.device_us, end_to_end_us=self.end_to_end_us)


def run_timeline(steps: Sequence[Step], costs: LaunchCosts, *, keep_steps: bool = True) -> Timeline:
    host = device = 0.0
    first_start: float | None = None
    out: list[StepTime] = []
    n_kernels = n_syncs = 0
    work_total = 0.0
    for s in steps:
        if s.kind == "kernel":
            host += costs.host_dispatch_us
            start = max(host, device)
            first_start = start if first_start is None else first_start
            busy = costs.device_fixed_us + s.work_us
            device = start + busy
            n_kernels += 1
            work_total += s.work_us
            if keep_steps:
                out.append(StepTime(label=s.label, kind="kernel", enqueued_us=host, start_us=start, end_us=device,
                                    device_us=busy))
        else:
            resume = max(host, device)
            if keep_steps:
                out.append(StepTime(label=s.label, kind="sync", enqueued_us=host, start_us=resume,
                                    end_us=resume + costs.sync_us))
            host = resume + costs.sync_us
            n_syncs += 1
    fixed = n_kernels * costs.device_fixed_us
    span = device - first_start if first_start is not None else 0.0
    return Timeline(end_to_end_us=max(host, device), device_us=span, kernel_us=work_total,
                    device_fixed_us=fixed, host_dispatch_us=n_kernels * costs.host_dispatch_us,
                    sync_us=n_syncs * costs.sync_us, kernels=n_kernels, syncs=n_syncs, steps=out)


def kernel_steps(work_us: Sequence[float], labels: Sequence[str] | None = None) -> list[Step]:
    """One kernel step per launch, in launch order."""
    names = list(labels) if labels is not None else [f"launch {i}" for i in range(len(work_us))]
    return [Step(kind="kernel", work_us=w, label=n) for w, n in zip(work_us, names)]
