"""Result models of one kernel run (see docs/architecture.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, Field, field_validator

from sage.npu.timeline import Times
from sage.text import ERROR_CHARS, clean

PIPES = ("S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX")


class ErrorInfo(BaseModel):
    type: str
    message: str
    line: int | None = None

    @field_validator("message")
    @classmethod
    def _clean_message(cls, message: str) -> str:
        # Kernel text: whatever builds an ErrorInfo (the sandbox's reply, an in-process run)
        # gets it cleaned and capped here, once, for every sink after it (sage/text.py).
        return clean(message, ERROR_CHARS)


class PipeStat(BaseModel):
    """One pipe over the whole forward(). Busy cycles are summed over cores; utilisation is per core."""

    busy_cycles: int = Field(description="busy cycles of this pipe summed over all cores of every launch")
    utilisation: float = Field(description="per core: busy cycles / (device cycles x the cores that run this pipe), "
                                           "the average core's busy fraction (msprof PipeUtilization)")


class Profile(BaseModel):
    """Timing of a whole forward() on the eager timeline (sage/npu/timeline.py)."""

    cycles: int                 # busy device cycles: every launch's work plus its device fixed cost
    time_us: float              # end to end (host dispatch overlapped with the device): the scored time
    launches: int
    syncs: int = 0                       # host read-backs (read_back()), each a device->host sync
    sync_us: float = 0.0                 # what they cost the host: syncs x the preset's sync_us
    device_us: float = 0.0      # event-timed: the first launch's start to the last one's end, gaps included
    kernel_us: float = 0.0      # the launches' work alone (msprof op_summary durations summed)
    launch_device_us: list[float] = []   # per launch: its work plus the preset's device_fixed_us
    host_dispatch_us: float = 0.0        # host enqueue paid for all launches (hidden behind the device or not)
    device_fixed_us: float = 0.0         # the device fixed cost of all launches
    blocks: int
    cores_used: int = Field(description="physical cores (AIV + AIC) of the widest launch")
    pipes: dict[str, PipeStat]
    bytes: dict[str, int]
    bottleneck: str
    roofline_bound_us: float             # essential-work bound, launch excluded
    roofline_fraction: float             # roofline_bound_us / kernel_us: launch excluded
    roofline_bound: str = "memory"       # which essential bound it is: memory or cube
    instructions: int
    cores_by_type: dict[str, int] = Field(default_factory=dict,
                                          description="physical cores of each type used by the widest launch")
    hbm_bytes: int = Field(0, description="bytes read from or written to HBM (L2 misses and all writes), all cores")
    pipes_by_type: dict[str, dict[str, PipeStat]] = Field(
        default_factory=dict, description="the same pipe figures per core type (AIC, AIV), each measured against the "
                                          "cores of that type alone: a MIX launch's averages over both hide a busy "
                                          "pipe of one type (msprof reports aic_* and aiv_* apart)")
    hbm_utilisation: float = Field(0.0, description="hbm_bytes / (HBM bandwidth x device time): the chip-wide "
                                                    "fraction of HBM bandwidth used")

    @property
    def times(self) -> Times:
        """The three times (sage.npu.timeline.Times); `time_us` is the end-to-end one."""
        return Times(kernel_us=self.kernel_us, device_us=self.device_us, end_to_end_us=self.time_us)


@dataclass
class KernelRun:
    outputs: list[np.ndarray] | None
    error: ErrorInfo | None
    profile: Profile | None
    trace: list[dict] | None = None
    printed: str = ""                                        # the kernel's print()/printf output (bounded)
    isolation_gaps: list[str] = field(default_factory=list)  # OS isolation layers this machine could not apply
