"""The physical floor of sage/npu/bound.py: worked by hand from the preset's numbers, and held to
the replay's own rules (no essential byte is an L2 hit; the fastest Mmad is the 1-byte one), so
that a change of either shows here."""

from __future__ import annotations

import math

import pytest

from sage.npu import bound
from sage.npu.bound import EssentialWork, check_physical, physical_floor_us
from sage.npu.errors import ImpossibleResultError
from sage.npu.hardware import load_preset
from sage.npu.replay import replay
from sage.npu.sim.opcodes import AIC, GM_COPY, MAD, NORMAL, PATH_INDEX
from sage.npu.sim.runtrace import BlockTrace, LaunchTrace, RunTrace

SPEC = load_preset("ascend910b2")
# configs/ascend910b2.toml: hbm_gbps 1600, 24 AIC + 48 AIV cores, gm_access_cycles 300, clock_mhz 1800;
# the widest DSL element (int64) is 8 bytes
BYTES_PER_S = 1600e9 + (24 + 48) * 8 / 300 * 1800e6          # HBM + every core's scalar GM access
# mad_cycles: ceil(m/16) ceil(k/(32/size)) ceil(n/16) cycles: 16 x 32 x 16 MACs a cycle with 1-byte inputs
FLOPS_PER_S = 2 * 16 * 32 * 16 * 24 * 1800e6


def test_the_floor_of_a_relu_is_its_bytes_at_the_hbm_rate_worked_by_hand():
    nbytes = 2 * 4 * 1024 * 4096                               # fp32 [1024, 4096] read once, written once
    assert physical_floor_us(SPEC, EssentialWork(nbytes)) == pytest.approx(nbytes / BYTES_PER_S * 1e6, rel=1e-12)
    assert physical_floor_us(SPEC, EssentialWork(nbytes)) == pytest.approx(20.926, abs=1e-3)


def test_the_floor_of_a_matmul_is_the_larger_of_its_bytes_and_its_flops():
    flops = 2.0 * 4096 ** 3
    nbytes = 3 * 2 * 4096 * 4096                              # fp16 a, b and c
    want = max(nbytes / BYTES_PER_S, flops / FLOPS_PER_S) * 1e6
    assert flops / FLOPS_PER_S > nbytes / BYTES_PER_S          # cube-bound at this size
    assert physical_floor_us(SPEC, EssentialWork(nbytes, flops)) == pytest.approx(want, rel=1e-12)


def test_no_essential_byte_is_an_l2_hit_in_the_replay():
    """What the byte rate rests on: 48 blocks reading an input once and writing an output once
    stream every byte through HBM (cold L2; writes drain to HBM); reading the input again is
    where L2 hits begin (so the L2 model is on)."""
    n, blocks = 48 * 65536, 48
    per = n // blocks

    def copy(path: str, gbuf: int, b: int) -> tuple:
        pipe = 4 if path == "GM->UB" else 5
        return (pipe, NORMAL, GM_COPY, PATH_INDEX[path], per, 1, per, gbuf, b * per, (b + 1) * per, None, "DataCopy", 1)

    once = [BlockTrace([copy("GM->UB", 0, b), copy("UB->GM", 1, b)], block=b) for b in range(blocks)]
    twice = [BlockTrace([copy("GM->UB", 0, b), copy("GM->UB", 0, b), copy("UB->GM", 1, b)], block=b)
             for b in range(blocks)]
    allocations = [(n, True), (n, False)]
    first = replay(RunTrace(allocations, [LaunchTrace("k", blocks, once)]), SPEC).launches[0]
    again = replay(RunTrace(allocations, [LaunchTrace("k", blocks, twice)]), SPEC).launches[0]
    assert first.hbm_bytes == 2 * n
    assert again.hbm_bytes == 2 * n
    # and no run of it beats the floor
    assert first.kernel_cycles / SPEC.chip.clock_mhz >= physical_floor_us(SPEC, EssentialWork(2 * n))


def test_the_fastest_mmad_of_the_replay_does_not_beat_the_cube_rate():
    """24 AICs doing nothing but 1-byte Mmads (the fastest mad_cycles grants) take at least the
    floor of their FLOPs."""
    m = n = 256
    k = 512
    recs = [(2, NORMAL, MAD, m, n, k, 1, -1, 0, 0, None, "Mmad", 1)] * 64
    blocks = [BlockTrace(recs, True, AIC, b) for b in range(24)]
    timing = replay(RunTrace([(1, True)], [LaunchTrace("k", 24, blocks, "AIC_ONLY")]), SPEC).launches[0]
    flops = 2.0 * m * n * k * 64 * 24
    floor = physical_floor_us(SPEC, EssentialWork(0, flops))
    assert floor == pytest.approx(flops / FLOPS_PER_S * 1e6)
    assert floor <= timing.kernel_cycles / SPEC.chip.clock_mhz < 1.01 * floor


def test_the_tripwire_is_a_ratio_above_the_floor():
    work = EssentialWork(2 * 4 * 1024 * 4096)
    floor = physical_floor_us(SPEC, work)
    check_physical(SPEC, work, floor)                                # at the floor: possible
    check_physical(SPEC, work, floor / bound.TRIPWIRE_RATIO * 1.0001)
    with pytest.raises(ImpossibleResultError, match="faster than the simulator's fastest rates"):
        check_physical(SPEC, work, floor / bound.TRIPWIRE_RATIO * 0.999)
    for bad in (math.nan, -1.0, math.inf):
        with pytest.raises(ImpossibleResultError, match="which no run can take"):
            check_physical(SPEC, work, bad)
    check_physical(SPEC, EssentialWork(0), 0.0)                      # nothing to do, no time: no claim


def test_the_time_the_tripwire_names_is_the_one_it_was_given():
    """The interface a move to kernel time needs: the caller says which time it judges."""
    with pytest.raises(ImpossibleResultError, match="kernel time of 0.1 us"):
        check_physical(SPEC, EssentialWork(1 << 30), 0.1, time_kind="kernel time")
