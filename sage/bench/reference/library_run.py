"""Running one library kernel in the simulator to time it.

Inputs are random but benign (uniform in [0.5, 1.5) for floats, small positive integers),
so that no kernel meets a NaN or an overflow on its timing path; only the shapes and dtypes
matter for the time.
"""

from __future__ import annotations

import hashlib
import time
from functools import lru_cache
from pathlib import Path

import ml_dtypes
import numpy as np
from pydantic import BaseModel

from sage.npu.hardware import HardwareSpec


class ReferenceModelError(RuntimeError):
    """A library kernel failed in the simulator: a bug in the library, not in a task."""


class LibraryKernel(BaseModel):
    """A generated library kernel and the operands it is timed on."""

    family: str                                   # elementwise | row | matmul
    label: str                                    # what it computes, for reports
    source: str
    inputs: list[tuple[tuple[int, ...], str]]     # (shape, dtype) of each forward() argument

    def key(self) -> str:
        h = hashlib.sha256(self.source.encode())
        h.update(repr(self.inputs).encode())
        return h.hexdigest()[:24]


class SimTiming(BaseModel):
    time_us: float        # the whole forward() end to end (sage.npu.timeline), as a candidate's
    device_us: float      # event-timed: the first launch's start to the last one's end
    kernel_us: float      # its launches' work alone
    launches: int
    cycles: int
    instructions: int
    wall_s: float


def random_array(shape: tuple[int, ...], dtype: str, rng: np.random.Generator) -> np.ndarray:
    if dtype in ("float32", "float16", "float64"):
        return rng.uniform(0.5, 1.5, size=shape).astype(dtype)
    if dtype == "bfloat16":
        return rng.uniform(0.5, 1.5, size=shape).astype(np.float32).astype(ml_dtypes.bfloat16)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    return rng.integers(1, 8, size=shape).astype(dtype)


def simulate(kernel: LibraryKernel, hw: HardwareSpec) -> SimTiming:
    """The kernel's simulated time at its inputs' shapes, by exactly the path a candidate's
    launches take (no shortcut for big shapes: both sides are timed alike)."""
    from sage.npu.execute import run_kernel_source   # the simulator (another package part)

    inputs = kernel.inputs
    rng = np.random.default_rng(0)
    args = [random_array(shape, dt, rng) for shape, dt in inputs]
    t0 = time.perf_counter()
    run = run_kernel_source(kernel.source, args, preset=hw, filename=f"library_{kernel.family}.py")
    wall = time.perf_counter() - t0
    if run.error is not None or run.profile is None:
        err = run.error
        where = f" (line {err.line})" if err and err.line else ""
        raise ReferenceModelError(
            f"library kernel {kernel.label} failed on {inputs}: "
            f"{err.type if err else 'no profile'}: {err.message if err else ''}{where}")
    p = run.profile
    return SimTiming(time_us=p.time_us, device_us=p.device_us, kernel_us=p.kernel_us, launches=p.launches,
                     cycles=p.cycles, instructions=p.instructions,
                     wall_s=wall)


@lru_cache(maxsize=8)
def model_fingerprint(preset_source: str) -> str:
    """Changes whenever the simulator, the DSL, the library generators or the preset file
    change, so that cached timings never outlive the model that produced them."""
    root = Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    for folder in ("npu/sim", "npu/ascendc", "kernels", "kernels/library"):
        for f in sorted((root / folder).glob("*.py")):
            h.update(f.read_bytes())
    for f in sorted((root / "npu").glob("*.py")):
        h.update(f.read_bytes())
    if preset_source and Path(preset_source).is_file():
        h.update(Path(preset_source).read_bytes())
    return h.hexdigest()[:16]
