"""The physical-bound tripwire: results no 910B could produce are rejected, never scored.

A run that claims to be faster than writing its outputs once at the fastest rate the
machine model allows anywhere (every core writing into L2 at the L2 write rate, or HBM
bandwidth for outputs larger than L2), or faster than its essential cube FLOPs at the
peak of every AIC core, is impossible. Such a result can only come from a forged trace
or a simulator bug, so it is an `ImpossibleResultError`, not a speedup. The floor is
deliberately loose (the fastest rate of any path, all cores at once, no launch
overhead): it is a tripwire, not a performance metric, and no legal kernel reaches it.
"""

from __future__ import annotations

import math

from sage.npu.errors import ImpossibleResultError
from sage.npu.hardware import HardwareSpec


def physical_floor_us(spec: HardwareSpec, output_bytes: int, cube_flops: float = 0.0) -> float:
    chip = spec.chip
    cores = chip.aic_cores + chip.aiv_cores
    if output_bytes <= chip.l2_bytes:
        write_bps = chip.l2_write_bytes_per_cycle_per_core * cores * chip.clock_mhz * 1e6
    else:
        write_bps = chip.hbm_gbps * 1e9
    peak_flops = 2 * spec.cube.peak_macs_per_cycle * chip.aic_cores * chip.clock_mhz * 1e6
    return max(output_bytes / write_bps, cube_flops / peak_flops) * 1e6


def check_physical(spec: HardwareSpec, device_us: float, output_bytes: int, cube_flops: float = 0.0) -> None:
    """ImpossibleResultError when `device_us` (launch overhead excluded) beats the floor."""
    if not (math.isfinite(device_us) and device_us >= 0):
        # NaN compares false with everything: a NaN, negative or infinite time is no time a
        # run can take, never a pass.
        raise ImpossibleResultError(f"the run claims a device time of {device_us} us, which no run can take: "
                                    "the result is not scored")
    floor = physical_floor_us(spec, output_bytes, cube_flops)
    if device_us < floor:
        raise ImpossibleResultError(
            f"the run claims {device_us:.4g} us of device time, below the physical floor of {floor:.4g} us "
            f"({output_bytes} output bytes written once at the fastest write rate of the machine, "
            f"{cube_flops:.3g} cube FLOPs at peak): the result cannot come from a real run and is not scored")
