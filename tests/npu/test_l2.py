"""The L2 residency model (sage/npu/sim/l2.py) against a byte-set model of the same accesses."""

import random

from sage.npu.sim.l2 import MAX_INTERVALS, IntervalSet, L2Cache


def test_hits_are_the_bytes_touched_before():
    l2 = L2Cache(1 << 20)
    assert l2.access(0, 0, 100) == 0
    assert l2.access(0, 50, 150) == 50          # [50, 100) was resident
    assert l2.access(0, 0, 150) == 150
    assert l2.access(1, 0, 10) == 0             # another allocation


def test_interval_set_matches_a_byte_set_below_the_cap():
    rng = random.Random(7)
    ivs, truth = IntervalSet(), set()
    for _ in range(2000):
        lo = rng.randrange(0, 20000)
        hi = lo + rng.randrange(1, 40)
        assert ivs.overlap(lo, hi) == len(truth & set(range(lo, hi)))
        assert ivs.add(lo, hi) == len(set(range(lo, hi)) - truth)
        truth |= set(range(lo, hi))
        assert ivs.total == len(truth)


def test_past_the_cap_it_forgets_and_never_claims_a_byte_it_did_not_see():
    ivs, truth = IntervalSet(), set()
    n = 3 * MAX_INTERVALS
    for i in reversed(range(n)):                 # disjoint 32 B writes at a 64 B pitch, last first
        ivs.add(i * 64, i * 64 + 32)
        truth |= set(range(i * 64, i * 64 + 32))
    assert len(ivs.starts) <= MAX_INTERVALS
    assert ivs.total == sum(e - s for s, e in zip(ivs.starts, ivs.ends))
    assert ivs.overlap(0, n * 64) <= len(truth)
    covered = {b for s, e in zip(ivs.starts, ivs.ends) for b in range(s, e)}
    assert covered <= truth                       # pessimistic: a forgotten byte is a miss, never a phantom hit


def test_rows_touch_only_their_bursts():
    l2 = L2Cache(1 << 20)
    assert l2.access_rows(0, 0, 100, 300, 4) == 0       # bursts [0,100) [300,400) [600,700) [900,1000)
    assert l2.access_rows(0, 100, 100, 300, 4) == 0     # the next 100 bytes of each: not resident
    assert l2.access_rows(0, 0, 100, 300, 4) == 400
    # resident: [0,200) [300,500) [600,800) [900,1100); [200,300) [500,600) [800,900) never touched
    assert l2.access(0, 0, 1000) == 200 + 200 + 200 + 100
    assert l2.access_rows(1, 0, 100, 100, 3) == 0 and l2.access(1, 0, 300) == 300   # pitch = length: one run
