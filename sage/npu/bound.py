"""The physical-bound tripwire: results no run of this simulator could produce are rejected, never scored.

The floor of a run is its essential work at the fastest rates the simulator itself grants,
derived from the preset and from the replay's own rules, so that it follows them:

- **bytes**: the forward's inputs read once and its outputs written once (the roofline's
  essential bytes: `sage.bench.reference.essential`). The replay starts every run with an
  empty L2 (`replay._Coster`) and drains every GM write to HBM (`_Coster._gm_copy`), so no
  essential byte is ever an L2 hit: the first read of an input byte and every write of an
  output byte stream through HBM, whose bandwidth all cores share (`sim/engine_hbm.py`).
  The L2 rate only serves bytes read a second time, which are not essential. The one other
  way a byte reaches or leaves GM is a scalar GetValue/SetValue: one element (at most
  `MAX_ITEMSIZE` bytes) per `gm_access_cycles` on every core at once, no HBM. Byte rate:
  the HBM bandwidth plus those.
- **cube FLOPs**: the essential matmul and convolution FLOPs at the fastest rate `mad_cycles`
  grants (1-byte inputs: twice the fp16 peak), on every AIC at once.

    floor = max(bytes / byte rate, cube FLOPs / cube rate)      (the two overlap: other pipes)

A run is compared with its floor by the ratio floor / time: an honest run stays below 1 up to
what the essential bytes miscount, a forged one claims more. Above `TRIPWIRE_RATIO` the
result is an `ImpossibleResultError`, never scored: it can only come from a forged trace or a
simulator bug. `benchmarks/tripwire_margin.py` measures the ratio of every honest kernel (its
figures are in docs/security.md §3); the threshold sits above the largest with a margin of
more than 10 %.

The time compared is the run's `kernel_us` (`sage.npu.timeline.Times`): the sum of its
kernels' durations, as msprof's op_summary lists them, with no launch fixed cost and no gap,
since neither is work done on the outputs. (Before results schema 2 it was computed as
`device_us` less each launch's fixed cost, the same figure while `device_us` was the sum of
the launches' busy times; `device_us` is now the event-timed span, gaps included, which a
tripwire must not compare.) `check_physical` takes the time and what it is, for the message.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sage.npu import dtypes
from sage.npu.errors import ImpossibleResultError
from sage.npu.hardware import HardwareSpec
from sage.npu.sim.costs import CostModel

# benchmarks/tripwire_margin.py, 439 honest runs (examples, library, the offline agent's kernels,
# every case): the largest floor / kernel time is 0.9869 (the agent's level0/10_relu and
# level1/04_abs, case 0: 10.60 us of work for a 10.46 us floor); 1.1 is 1.115x that, so no honest
# run is within 10 % of the tripwire. (The simulator cannot go past 1 but for the scalar GM
# channel's 0.2 %: the margin is for essential bytes that count more than a kernel must move.)
TRIPWIRE_RATIO = 1.1
KERNEL_TIME = "kernel time (kernel_us: the kernels' durations summed, no launch or gap cost)"
MAX_ITEMSIZE = max(dt.itemsize for dt in dtypes.ALL)   # the widest element a scalar GM access moves


@dataclass(frozen=True)
class EssentialWork:
    """What any implementation of a forward must do: bytes moved once, cube FLOPs."""

    bytes: float
    cube_flops: float = 0.0


@dataclass(frozen=True)
class FastestRates:
    bytes_per_cycle: float        # HBM, plus every core's scalar GM accesses
    flops_per_cycle: float        # every AIC at the fastest Mmad rate
    clock_mhz: float


def fastest_rates(spec: HardwareSpec) -> FastestRates:
    chip = spec.chip
    scalar = (chip.aic_cores + chip.aiv_cores) * MAX_ITEMSIZE / spec.scalar.gm_access_cycles
    flops = 2 * CostModel(spec).fastest_macs_per_cycle() * chip.aic_cores
    return FastestRates(spec.hbm_bytes_per_cycle + scalar, flops, chip.clock_mhz)


def physical_floor_us(spec: HardwareSpec, work: EssentialWork) -> float:
    rates = fastest_rates(spec)
    cycles = max(work.bytes / rates.bytes_per_cycle, work.cube_flops / rates.flops_per_cycle)
    return cycles / rates.clock_mhz


def floor_ratio(spec: HardwareSpec, work: EssentialWork, time_us: float) -> float:
    """floor / time: above 1, the run claims to beat the simulator's own fastest rates."""
    floor = physical_floor_us(spec, work)
    if floor == 0:
        return 0.0
    return floor / time_us if time_us > 0 else math.inf


def check_physical(spec: HardwareSpec, work: EssentialWork, time_us: float, *, time_kind: str = KERNEL_TIME) -> None:
    """ImpossibleResultError when floor / `time_us` is above TRIPWIRE_RATIO; `time_kind` says
    which time it is (for the message)."""
    if not (math.isfinite(time_us) and time_us >= 0):
        # NaN compares false with everything: a NaN, negative or infinite time is no time a
        # run can take, never a pass.
        raise ImpossibleResultError(f"the run claims a {time_kind} of {time_us} us, which no run can take: "
                                    "the result is not scored")
    ratio = floor_ratio(spec, work, time_us)
    if ratio > TRIPWIRE_RATIO:
        raise ImpossibleResultError(
            f"the run claims a {time_kind} of {time_us:.4g} us, {ratio:.3g}x faster than the simulator's fastest "
            f"rates allow ({physical_floor_us(spec, work):.4g} us for {work.bytes:.4g} essential bytes and "
            f"{work.cube_flops:.3g} cube FLOPs; the tripwire is at {TRIPWIRE_RATIO:g}x): the result cannot come "
            "from a real run and is not scored")
