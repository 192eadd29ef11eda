"""A simple L2 capacity model: GM bytes touched recently hit L2 when read again.

Each GM allocation keeps the set of byte intervals that are resident; allocations are
evicted whole in least-recently-used order once the resident total exceeds the L2 size.
Reads and writes both make bytes resident (on Ascend, writes go through L2). A strided
copy touches its bursts only (`access_rows`): the bytes between them are neither hits nor
made resident. (It once touched its whole span, so a copy of the first half of each row made
the second halves resident, and reading them next was an L2 hit at twice the HBM rate with
no HBM traffic: swi_glu, which reads x's two halves that way, ran at 2.2 TB/s of essential
traffic on a 1.6 TB/s chip.)
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import OrderedDict

import numpy as np


MAX_INTERVALS = 4096   # per allocation; past it the smallest half is forgotten (IntervalSet.add, .trim)
# A strided copy of at least this many bursts is accounted in one numpy pass (add_bursts): per
# burst in Python it cost two calls each, 131,000 of them for a 1024^3 cube matmul, 40 % of its
# simulation; below it numpy's fixed cost is more than the loop's
BULK_BURSTS = 8
# A copy whose bursts meet at most this many resident intervals is first checked in Python for
# being all hits (no numpy pass: its fixed cost is ~15 calls)
FEW_INTERVALS = 24


class IntervalSet:
    """Disjoint resident byte intervals of one allocation, sorted.

    Bounded: an insert into the middle moves list entries, so n out-of-order disjoint accesses
    would cost O(n^2) in the parent's replay (a hostile kernel's 5 M DataCopy calls: hours).
    Past MAX_INTERVALS the smallest half of the intervals is dropped, which only ever turns
    a later L2 hit into a miss: the model stays pessimistic, never flattering.
    """

    __slots__ = ("starts", "ends", "total")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.total = 0

    def overlap(self, lo: int, hi: int) -> int:
        starts, ends = self.starts, self.ends
        if not starts or lo >= ends[-1]:
            return 0  # streaming past everything resident: the common case
        i = max(bisect_right(starts, lo) - 1, 0)
        got = 0
        n = len(starts)
        while i < n and starts[i] < hi:
            a, b = max(starts[i], lo), min(ends[i], hi)
            if b > a:
                got += b - a
            i += 1
        return got

    def add(self, lo: int, hi: int, trim: bool = True) -> int:
        """Insert [lo, hi); returns how many bytes were newly added, less any forgotten
        (`trim=False`: none forgotten; the caller trims when its copy is in)."""
        starts, ends = self.starts, self.ends
        if starts and lo >= starts[-1]:
            if lo <= ends[-1]:  # extends (or lies in) the last interval
                if hi > ends[-1]:
                    added = hi - ends[-1]
                    ends[-1] = hi
                    self.total += added
                    return added
                return 0
            starts.append(lo)
            ends.append(hi)
            self.total += hi - lo
            return hi - lo - (self._forget() if trim and len(starts) > MAX_INTERVALS else 0)
        i = bisect_left(ends, lo)            # first interval that may touch lo
        j = bisect_right(starts, hi)         # intervals [i, j) touch [lo, hi]
        if i < j:
            new_lo, new_hi = min(lo, starts[i]), max(hi, ends[j - 1])
            removed = sum(ends[k] - starts[k] for k in range(i, j))
        else:
            new_lo, new_hi, removed = lo, hi, 0
        starts[i:j] = [new_lo]
        ends[i:j] = [new_hi]
        added = (new_hi - new_lo) - removed
        self.total += added
        return added - (self._forget() if trim and len(starts) > MAX_INTERVALS else 0)

    def add_bursts(self, lo: int, length: int, pitch: int, count: int) -> tuple[int, int]:
        """`count` bursts of `length` bytes, `pitch` > `length` apart from `lo`, in one numpy pass:
        (bytes of them already resident, bytes newly added), exactly what `count` overlap()
        calls followed by `count` add() calls give when no add forgets: it never forgets
        itself, so the set may pass MAX_INTERVALS (the caller trims it after)."""
        starts, ends = self.starts, self.ends
        last = lo + (count - 1) * pitch + length
        k = bisect_right(starts, lo) - 1
        if k >= 0 and ends[k] >= last:  # every burst inside one resident interval: all hits, nothing new
            return count * length, 0
        if not starts or lo >= ends[-1]:  # past everything resident (streaming): no hit, bursts appended
            firsts = range(lo, lo + count * pitch, pitch)
            if starts and lo == ends[-1]:  # (the first burst touches the last interval: they merge)
                ends[-1] = lo + length
                firsts = firsts[1:]
            starts.extend(firsts)
            ends.extend(f + length for f in firsts)
            self.total += count * length
            return 0, count * length
        # Only the intervals that touch [lo, last] can overlap or merge with a burst (add()'s own
        # bisections): that window is taken out, merged with the bursts and put back, so a copy
        # costs the intervals among its rows, not every interval of the allocation (a 1024^3 cube
        # matmul's A holds thousands of them once half read: the whole set per copy was 30 % of its replay)
        i, j = bisect_left(ends, lo), bisect_right(starts, last)
        if j - i <= FEW_INTERVALS and self._all_inside(i, j, lo, length, pitch, count):
            return count * length, 0   # rows read again (most copies of a matmul's operands): nothing changes
        old = sum(ends[i:j]) - sum(starts[i:j])
        b0 = lo + pitch * np.arange(count, dtype=np.int64)
        b1 = b0 + length
        lo_all = np.concatenate((np.array(starts[i:j], np.int64), b0))
        hi_all = np.concatenate((np.array(ends[i:j], np.int64), b1))
        order = np.argsort(lo_all, kind="stable")
        lo_all, hi_all = lo_all[order], hi_all[order]
        reach = np.maximum.accumulate(hi_all)
        first = np.flatnonzero(np.concatenate(([True], lo_all[1:] > reach[:-1])))  # touching merges, as add()
        merged_lo, merged_hi = lo_all[first], np.maximum.reduceat(hi_all, first)
        added = int((merged_hi - merged_lo).sum()) - old
        starts[i:j] = merged_lo.tolist()
        ends[i:j] = merged_hi.tolist()
        self.total += added
        # the bursts are disjoint (pitch > length), so the bytes of them already resident are
        # what the union did not gain: count * length = hit + added
        return count * length - added, added

    def _all_inside(self, i: int, j: int, lo: int, length: int, pitch: int, count: int) -> bool:
        """Every burst lies inside one of the intervals [i, j): counted interval by interval
        (the bursts inside [a, b) are those whose index k has a <= lo + k * pitch and
        lo + k * pitch + length <= b; disjoint intervals hold disjoint bursts)."""
        inside = 0
        for a, b in zip(self.starts[i:j], self.ends[i:j]):
            first = max(0, -((lo - a) // pitch))         # ceil((a - lo) / pitch)
            last = min(count - 1, (b - length - lo) // pitch)
            if last >= first:
                inside += last - first + 1
        return inside == count

    def _forget(self) -> int:
        """Drop the smallest half of the intervals (the earlier of equal sizes first); returns
        the bytes dropped. In numpy: past a bulk copy the set holds thousands."""
        starts, ends = np.array(self.starts, np.int64), np.array(self.ends, np.int64)
        sizes = ends - starts
        keep = np.ones(len(sizes), bool)
        keep[np.argsort(sizes, kind="stable")[:len(sizes) // 2]] = False
        dropped = int(sizes[~keep].sum())
        self.starts, self.ends = starts[keep].tolist(), ends[keep].tolist()
        self.total -= dropped
        return dropped

    def trim(self) -> int:
        """Forget (the smallest half, as often as needed) down to MAX_INTERVALS; returns the bytes dropped."""
        dropped = 0
        while len(self.starts) > MAX_INTERVALS:
            dropped += self._forget()
        return dropped


class L2Cache:
    def __init__(self, capacity: int):
        self.capacity = capacity
        self.resident: OrderedDict[int, IntervalSet] = OrderedDict()
        self.total = 0

    def access(self, alloc_id: int, lo: int, hi: int) -> int:
        """Touch GM bytes [lo, hi) of an allocation; returns the bytes that were already in L2."""
        ivs = self.resident.get(alloc_id)
        if ivs is None:
            ivs = self.resident[alloc_id] = IntervalSet()
            hit = 0
        else:
            self.resident.move_to_end(alloc_id)
            hit = ivs.overlap(lo, hi)
        self.total += ivs.add(lo, hi)
        self._evict()
        return hit

    def access_rows(self, alloc_id: int, lo: int, length: int, pitch: int, count: int) -> int:
        """Touch `count` bursts of `length` bytes, `pitch` bytes apart from `lo`; returns the
        bytes of them that were already in L2."""
        if count <= 1 or pitch <= length:
            return self.access(alloc_id, lo, lo + (count - 1) * pitch + length)
        ivs = self.resident.get(alloc_id)
        if ivs is None:
            ivs = self.resident[alloc_id] = IntervalSet()
        self.resident.move_to_end(alloc_id)
        # A strided copy adds all its bursts, then the set is trimmed to MAX_INTERVALS: one
        # numpy pass for the copy whatever the set holds. (Trimmed at the burst that crossed
        # the cap, a copy into a set near it went burst by burst: a gather's 16-column stripes
        # of a [4096, 4096] bf16 tensor, 2,048 bursts each, took 8.5 s of an 11 s case, and
        # public level1/20's [5120, 27648] one hours.) The hits are the same either way (each
        # burst's overlap is taken before any is added); what is forgotten is still the
        # smallest half, so a trim only ever turns a later hit into a miss.
        if count >= BULK_BURSTS:
            hit, added = ivs.add_bursts(lo, length, pitch, count)
        else:
            starts = range(lo, lo + count * pitch, pitch)
            hit = sum(ivs.overlap(s, s + length) for s in starts)    # before any burst is added
            added = sum(ivs.add(s, s + length, trim=False) for s in starts)
        if len(ivs.starts) > MAX_INTERVALS:     # (checked here: a call per copy shows in the replay)
            added -= ivs.trim()
        self.total += added
        self._evict()
        return hit

    def _evict(self) -> None:
        while self.total > self.capacity and len(self.resident) > 1:
            _, old = self.resident.popitem(last=False)
            self.total -= old.total
