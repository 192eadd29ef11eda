"""Result models of one kernel run (see docs/architecture.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel

PIPES = ("S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX")


class ErrorInfo(BaseModel):
    type: str
    message: str
    line: int | None = None


class PipeStat(BaseModel):
    busy_cycles: int
    utilisation: float


class Profile(BaseModel):
    """Timing of a whole forward(): every launch, each with its launch overhead."""

    cycles: int
    time_us: float
    launches: int
    device_us: float = 0.0      # the kernels alone: time_us without the launch overheads
    blocks: int
    cores_used: int
    pipes: dict[str, PipeStat]
    bytes: dict[str, int]
    bottleneck: str
    roofline_bound_us: float
    roofline_fraction: float
    instructions: int


@dataclass
class KernelRun:
    outputs: list[np.ndarray] | None
    error: ErrorInfo | None
    profile: Profile | None
    trace: list[dict] | None = None
    printed: str = ""                                        # the kernel's print()/printf output (bounded)
    isolation_gaps: list[str] = field(default_factory=list)  # OS isolation layers this machine could not apply
