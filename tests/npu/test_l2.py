"""The L2 residency model (sage/npu/sim/l2.py) against a byte-set model of the same accesses."""

import random
from contextlib import contextmanager

from hypothesis import given, settings
from hypothesis import strategies as st

from sage.npu.sim import l2
from sage.npu.sim.l2 import BULK_BURSTS, MAX_INTERVALS, IntervalSet, L2Cache


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


def _per_burst(ivs: IntervalSet, lo: int, length: int, pitch: int, count: int) -> tuple[int, int]:
    """The reference: every burst's overlap first, then every burst added, one call each."""
    starts = range(lo, lo + count * pitch, pitch)
    hit = sum(ivs.overlap(s, s + length) for s in starts)
    return hit, sum(ivs.add(s, s + length) for s in starts)


@given(st.lists(st.tuples(st.integers(0, 5000), st.integers(1, 64), st.integers(1, 200), st.integers(1, 60)),
                min_size=1, max_size=25))
@settings(max_examples=300, deadline=None, derandomize=True)
def test_bulk_bursts_equal_bursts_one_by_one(copies):
    """add_bursts (one numpy pass) against the loop it replaces, on random strided copies that
    overlap, touch and interleave with what is resident; a byte set checks both."""
    bulk, loop, truth = IntervalSet(), IntervalSet(), set()
    for lo, length, extra, count in copies:
        pitch = length + extra
        expected_hit = sum(1 for k in range(count) for b in range(lo + k * pitch, lo + k * pitch + length)
                           if b in truth)
        got = bulk.add_bursts(lo, length, pitch, count)
        assert got == _per_burst(loop, lo, length, pitch, count)
        assert got[0] == expected_hit
        truth.update(b for k in range(count) for b in range(lo + k * pitch, lo + k * pitch + length))
        assert (bulk.starts, bulk.ends, bulk.total) == (loop.starts, loop.ends, loop.total)
        assert bulk.total == len(truth)


class _LoopCache(L2Cache):
    """L2Cache with every strided copy accounted burst by burst (the code before add_bursts),
    the interval cap applied once the copy's bursts are all in (as the cache does: a copy's
    bursts are added, then the set is trimmed), or at each burst when `trim_per_burst`."""

    def __init__(self, capacity, trim_per_burst=False):
        super().__init__(capacity)
        self.trim_per_burst = trim_per_burst

    def access_rows(self, alloc_id, lo, length, pitch, count):
        if count <= 1 or pitch <= length:
            return self.access(alloc_id, lo, lo + (count - 1) * pitch + length)
        ivs = self.resident.setdefault(alloc_id, IntervalSet())
        self.resident.move_to_end(alloc_id)
        if self.trim_per_burst:
            hit, added = _per_burst(ivs, lo, length, pitch, count)
        else:
            with _no_cap():
                hit, added = _per_burst(ivs, lo, length, pitch, count)
            added -= ivs.trim()
        self.total += added
        self._evict()
        return hit


@contextmanager
def _no_cap():
    saved = l2.MAX_INTERVALS
    l2.MAX_INTERVALS = 1 << 60
    try:
        yield
    finally:
        l2.MAX_INTERVALS = saved


def _random_copies(seed, n):
    rng = random.Random(seed)
    for _ in range(n):
        alloc, lo, length = rng.randrange(3), rng.randrange(0, 1 << 22), rng.randrange(1, 512)
        yield alloc, lo, length, length + rng.randrange(1, 8192), rng.randrange(1, 200)


def test_a_cache_gives_what_the_loop_gives_through_the_cap_and_evictions():
    """Thousands of scattered bursts over three allocations: the interval cap is passed (the
    smallest half forgotten) and allocations are evicted; hits and state stay the loop's."""
    cache, loop = L2Cache(1 << 21), _LoopCache(1 << 21)
    crossings = 0
    for alloc, lo, length, pitch, count in _random_copies(3, 400):
        before = len(cache.resident[alloc].starts) if alloc in cache.resident else 0
        crossings += count >= BULK_BURSTS and before + count > MAX_INTERVALS   # (bulk past the cap)
        assert cache.access_rows(alloc, lo, length, pitch, count) == loop.access_rows(alloc, lo, length, pitch, count)
        assert cache.total == loop.total and list(cache.resident) == list(loop.resident)
        assert all((a.starts, a.ends) == (b.starts, b.ends) for a, b in zip(cache.resident.values(),
                                                                             loop.resident.values()))
        assert all(len(a.starts) <= MAX_INTERVALS and a.total == sum(a.ends) - sum(a.starts)
                   for a in cache.resident.values())
    assert crossings > 0      # bulk copies that take a set past the cap: the test passes through trims


def test_trimming_once_a_copy_is_in_is_as_pessimistic_as_trimming_at_each_burst():
    """Where the cap is passed in the middle of a copy, the two policies keep different halves,
    so later hits differ; both only ever miss what a byte set would hit, never the reverse, and
    the first copy to pass the cap has the same hits under both (taken before any burst is added)."""
    once, each = L2Cache(1 << 40), _LoopCache(1 << 40, trim_per_burst=True)
    truth: dict[int, set] = {}
    crossed = False
    for alloc, lo, length, pitch, count in _random_copies(5, 300):
        bursts = {b for k in range(count) for b in range(lo + k * pitch, lo + k * pitch + length)}
        seen = truth.setdefault(alloc, set())
        before = len(once.resident[alloc].starts) if alloc in once.resident else 0
        hit_once, hit_each = (c.access_rows(alloc, lo, length, pitch, count) for c in (once, each))
        assert hit_once <= len(bursts & seen) and hit_each <= len(bursts & seen)
        if not crossed:
            assert hit_once == hit_each == len(bursts & seen)
        crossed = crossed or before + count > MAX_INTERVALS
        seen |= bursts
    assert crossed


def test_streaming_and_rereading_take_the_short_paths_with_the_loops_result():
    """Copies that stream past everything resident (appended, the first touching the last
    interval) and copies inside one resident interval (all hits): the two short paths of
    add_bursts, each against the loop."""
    bulk, loop = IntervalSet(), IntervalSet()
    copies = [(0, 64, 128, 16), (2048, 64, 128, 16), (2048 + 16 * 128, 32, 96, 10),   # streaming, touching
              (0, 4096, 8192, 1), (100, 16, 48, 20), (0, 4000, 4001, 2)]               # one wide span, re-reads
    for lo, length, pitch, count in copies:
        if count > 1:
            assert bulk.add_bursts(lo, length, pitch, count) == _per_burst(loop, lo, length, pitch, count)
        else:
            assert bulk.add(lo, lo + length) == loop.add(lo, lo + length)
        assert (bulk.starts, bulk.ends, bulk.total) == (loop.starts, loop.ends, loop.total)


def test_rows_reread_across_several_intervals_are_all_hits_and_change_nothing():
    """Bursts that each fall inside one of several resident intervals (a tile's rows read again
    after its columns were read in pieces): all hits, the set unchanged, as burst by burst;
    and bursts one byte past their intervals' ends are not counted as inside."""
    bulk, loop = IntervalSet(), IntervalSet()
    for ivs in (bulk, loop):
        for row in range(8):
            ivs.add(row * 1000, row * 1000 + 300)
    before = (list(bulk.starts), list(bulk.ends), bulk.total)
    assert bulk.add_bursts(100, 200, 1000, 8) == _per_burst(loop, 100, 200, 1000, 8) == (1600, 0)
    assert (bulk.starts, bulk.ends, bulk.total) == before
    # each burst [k * 1000 + 100, k * 1000 + 301) ends one byte past its interval: 200 hit bytes, one new
    assert bulk.add_bursts(100, 201, 1000, 8) == _per_burst(loop, 100, 201, 1000, 8) == (1600, 8)
    assert (bulk.starts, bulk.ends, bulk.total) == (loop.starts, loop.ends, loop.total)
