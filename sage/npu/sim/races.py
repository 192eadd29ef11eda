"""Race detection over the byte ranges of one local buffer, with per-pipe vector clocks.

An access is (pipe, seq): the seq-th instruction of that pipe in this core. Pipe q is
ordered after access (p, s) when p == q (pipes are in order) or ``vc_q[p] >= s`` (a sync
edge carried p's progress to q). The tracker keeps disjoint segments, each with its last
writer and the latest read per pipe, so one check costs O(segments touched).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

_COALESCE_ABOVE = 64     # merge neighbours once a buffer holds this many segments
_BRIDGE_ABOVE = 1024     # and bridge gaps between same-pipe segments beyond this many (scattered writes)


class RangeTracker:
    """Last writer and readers per byte segment of one buffer (a queue slot or a TBuf)."""

    __slots__ = ("starts", "ends", "writers", "readers", "limit")

    def __init__(self) -> None:
        self.limit = _COALESCE_ABOVE
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.writers: list[tuple[int, int] | None] = []
        self.readers: list[dict[int, int]] = []

    def clear(self) -> None:
        self.starts.clear(); self.ends.clear(); self.writers.clear(); self.readers.clear()

    def _first(self, lo: int) -> int:
        i = bisect_right(self.starts, lo) - 1
        if i >= 0 and self.ends[i] > lo:
            return i
        return i + 1

    def conflict(self, lo: int, hi: int, pipe: int, vc: list[int], write: bool) -> tuple[int, int] | None:
        """The earlier access (pipe, seq) this access races with, or None."""
        starts, ends, writers = self.starts, self.ends, self.writers
        n = len(starts)
        if n == 1:  # the common case: one segment for the whole buffer
            if starts[0] >= hi or ends[0] <= lo:
                return None
            i = 0
        else:
            i = self._first(lo)
        while i < n and starts[i] < hi:
            w = writers[i]
            if w is not None and w[0] != pipe and vc[w[0]] < w[1]:
                return w
            if write:
                for p, s in self.readers[i].items():
                    if p != pipe and vc[p] < s:
                        return (p, s)
            i += 1
        return None

    def _split(self, at: int) -> None:
        """Make ``at`` a segment boundary if it falls inside a segment."""
        i = bisect_right(self.starts, at) - 1
        if i >= 0 and self.starts[i] < at < self.ends[i]:
            self.starts.insert(i + 1, at)
            self.ends.insert(i + 1, self.ends[i])
            self.ends[i] = at
            self.writers.insert(i + 1, self.writers[i])
            self.readers.insert(i + 1, dict(self.readers[i]))

    def record_write(self, lo: int, hi: int, pipe: int, seq: int) -> None:
        starts = self.starts
        if not starts or lo >= self.ends[-1]:  # past everything tracked (streaming GM writes): append
            starts.append(lo); self.ends.append(hi); self.writers.append((pipe, seq)); self.readers.append({})
            if len(starts) > self.limit:
                self._coalesce()
            return
        i = bisect_left(starts, lo)
        if lo < hi and i < len(starts) and starts[i] == lo and self.ends[i] == hi:  # exactly one existing segment
            self.writers[i] = (pipe, seq)
            self.readers[i] = {}
            return
        self._split(lo)
        self._split(hi)
        i = self._first(lo)
        j = i
        while j < len(starts) and starts[j] < hi:
            j += 1
        starts[i:j] = [lo]
        self.ends[i:j] = [hi]
        self.writers[i:j] = [(pipe, seq)]
        self.readers[i:j] = [{}]
        if len(starts) > self.limit:
            self._coalesce()

    def record_read(self, lo: int, hi: int, pipe: int, seq: int) -> None:
        starts = self.starts
        i = bisect_left(starts, lo)
        if lo < hi and i < len(starts) and starts[i] == lo and self.ends[i] == hi:  # exactly one existing segment
            self.readers[i][pipe] = seq
            return
        if not (len(starts) == 1 and starts[0] == lo and self.ends[0] == hi):
            self._split(lo)
            self._split(hi)
        i = self._first(lo)
        covered = lo
        while i < len(starts) and starts[i] < hi:
            if starts[i] > covered:  # a gap never written: track the read all the same
                self._insert(i, covered, starts[i], None, {pipe: seq})
                i += 1
            self.readers[i][pipe] = seq
            covered = self.ends[i]
            i += 1
        if covered < hi:
            self._insert(i, covered, hi, None, {pipe: seq})
        if len(starts) > self.limit:
            self._coalesce()

    def _insert(self, i: int, lo: int, hi: int, writer, readers) -> None:
        self.starts.insert(i, lo); self.ends.insert(i, hi)
        self.writers.insert(i, writer); self.readers.insert(i, readers)

    def _coalesce(self) -> None:
        """Merge neighbours written by the same pipe (or never written), keeping the latest seqs.

        Conservative (it can only add ordering requirements), and only done when a buffer
        holds many segments, e.g. after row-by-row copies, so that checks stay cheap. With
        very many segments (scattered scalar writes) the gaps between same-pipe segments are
        bridged too. The threshold then doubles, so the total work stays O(n log n).
        """
        bridge = len(self.starts) > _BRIDGE_ABOVE
        s, e, w, r = [self.starts[0]], [self.ends[0]], [self.writers[0]], [dict(self.readers[0])]
        for k in range(1, len(self.starts)):
            wk, wl = self.writers[k], w[-1]
            same = (wk is None and wl is None) or (wk is not None and wl is not None and wk[0] == wl[0])
            if same and (bridge or self.starts[k] == e[-1]):
                e[-1] = self.ends[k]
                if wk is not None:
                    w[-1] = (wk[0], max(wk[1], wl[1]))
                for p, q in self.readers[k].items():
                    if r[-1].get(p, -1) < q:
                        r[-1][p] = q
            else:
                s.append(self.starts[k]); e.append(self.ends[k]); w.append(wk); r.append(dict(self.readers[k]))
        self.starts, self.ends, self.writers, self.readers = s, e, w, r
        self.limit = max(_COALESCE_ABOVE, 2 * len(s))
