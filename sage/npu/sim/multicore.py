"""Timing of one launch: blocks on cores in waves, HBM bandwidth shared by running cores.

Core c runs blocks c, c + C, c + 2C, ... (C = cores used); the blocks of one wave run at
the same time. Kernel time = slowest core + launch overhead. When the blocks of a wave
together ask for more than the HBM bandwidth (their HBM bytes over the wave's duration),
the HBM part of every GM transfer is stretched by a common factor and the wave re-timed,
until the aggregate demand fits: each core gets its share.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sage.npu.sim.schedule import BlockTiming, schedule

_MAX_RETIMES = 12


@dataclass
class BlockRun:
    """What one block leaves behind once its kernel code has run."""

    records: list[tuple]
    bytes: dict[str, int]
    hbm_bytes: int
    macs: int
    vector_cycles: float
    instructions: int
    uses_cube: bool


@dataclass
class LaunchTiming:
    name: str
    block_dim: int
    cores_used: int
    kernel_cycles: float                 # slowest core, without launch overhead
    overhead_cycles: float
    busy: list[float]                    # per pipe, summed over blocks
    stretch: list[float]                 # HBM stretch factor per wave
    placements: list[tuple[int, int, float]] = field(default_factory=list)  # (block, core, start cycle)
    timings: list[BlockTiming] | None = None

    @property
    def cycles(self) -> float:
        return self.kernel_cycles + self.overhead_cycles


def _time_wave(blocks, keys, wave, issue: float, stretch: float, keep: bool) -> list[BlockTiming]:
    done: dict[int, BlockTiming] = {}
    out = []
    for i in wave:
        timing = done.get(keys[i])
        if timing is None:
            timing = done[keys[i]] = schedule(blocks[i].records, issue, stretch, keep)
        out.append(timing)
    return out


def time_launch(name: str, blocks: list[BlockRun], cores_by_type: tuple[int, int], issue: float,
                hbm_bytes_per_cycle: float, overhead_cycles: float, keep: bool = False) -> LaunchTiming:
    """`cores_by_type`: (AIV cores, AIC cores). AIV and AIC streams run on their own cores side by
    side (AIC core c is reported as core AIV cores + c); each kind runs its blocks in waves."""
    kept: list[BlockTiming] = [None] * len(blocks) if keep else None  # type: ignore[list-item]
    busy = [0.0] * 7
    stretches: list[float] = []
    placements: list[tuple[int, int, float]] = []
    span, used = 0.0, 0
    for is_cube, first_core in ((False, 0), (True, cores_by_type[0])):
        members = [i for i, b in enumerate(blocks) if b.uses_cube == is_cube]
        if not members:
            continue
        cycles, n = _time_group(blocks, members, cores_by_type[int(is_cube)], first_core, issue, hbm_bytes_per_cycle,
                                keep, busy, stretches, placements, kept)
        span, used = max(span, cycles), used + n
    return LaunchTiming(name, len(blocks), used, span, overhead_cycles, busy, stretches, placements, kept)


def _time_group(blocks, members, n_cores, first_core, issue, hbm_bytes_per_cycle, keep, busy, stretches,
                placements, kept) -> tuple[float, int]:
    cores = min(n_cores, len(members))
    core_time = [0.0] * cores
    # symmetric blocks (same instructions, same costs) are timed once: hash each record list
    # once here, so the waves and HBM re-timings below compare small ints, not long tuples
    groups: dict[tuple, int] = {}
    keys = {i: groups.setdefault(tuple(blocks[i].records), len(groups)) for i in members}
    for w0 in range(0, len(members), cores):
        wave = members[w0:w0 + cores]
        s = 1.0
        timings = _time_wave(blocks, keys, wave, issue, s, keep)
        hbm = sum(blocks[i].hbm_bytes for i in wave)
        for _ in range(_MAX_RETIMES):
            span = max(t.cycles for t in timings)
            if span <= 0 or hbm / span <= hbm_bytes_per_cycle:
                break
            s *= hbm / span / hbm_bytes_per_cycle * 1.001  # a hair over, so the loop ends at or below the cap
            timings = _time_wave(blocks, keys, wave, issue, s, keep)
        stretches.append(s)
        for c, (i, t) in enumerate(zip(wave, timings)):
            placements.append((i, first_core + c, core_time[c]))
            core_time[c] += t.cycles
            for p in range(7):
                busy[p] += t.busy[p]
            if keep:
                kept[i] = t
    return (max(core_time) if core_time else 0.0), cores
