"""The wide GM accesses of one buffer (transfers touching more pages than gmhazards indexes one by
one), grouped so that a check visits only those whose bursts can share a byte with it.

A strided transfer (count bursts of `length` bytes, `pitch` apart, length < pitch) touches,
in every pitch-long row of the buffer, only the bytes at phases [lo mod pitch, + length).
Two transfers of the same pitch can meet only where those phase intervals meet, so each is
filed under the phase buckets it covers (about 64 per pitch), and a check of an access with
the same pitch, or of one contiguous burst, visits only the buckets its own phases cover.
Anything else (another pitch with several bursts, bursts as long as the pitch) still visits
the whole group: the filter drops only transfers that cannot share a byte, so the races
found are the ones the full scan found.

level1/8_sort and 9_top_k along axis 0 of [4096, 18432] write their results through a
transposing copy: every tile a column stripe over thousands of rows, so every write was
wide and each one scanned every other core's earlier stripes (3.4 million burst checks for
a twelfth of the case, 19 of its 22 s).
"""

from __future__ import annotations

BUCKETS = 64        # phase buckets per pitch (at least 32 B wide)


def _bucket_width(pitch: int) -> int:
    return max(32, -(-pitch // BUCKETS))


def _phase_buckets(start: int, length: int, pitch: int) -> list[int] | None:
    """The buckets of phases [start, start + length) modulo pitch; None when that is all of them."""
    if length >= pitch:
        return None
    width = _bucket_width(pitch)
    count = -(-pitch // width)
    first, last = start // width, (start + length - 1) // width
    if start + length <= pitch:
        return list(range(first, last + 1))
    return list(range(first, count)) + list(range(0, (start + length - 1 - pitch) // width + 1))


class WideIndex:
    """Trails (actor -> Trail, as gmhazards keeps them) of one buffer's wide accesses."""

    __slots__ = ("other", "striped")

    def __init__(self) -> None:
        self.other: dict = {}                     # accesses no phase bucket describes
        self.striped: dict[int, dict[int, dict]] = {}   # pitch -> bucket -> trails

    def add(self, acc, trail_of) -> None:
        """File `acc`; `trail_of(trails, actor)` gives (making it) the actor's Trail."""
        actor = (acc.stream, acc.pipe)
        buckets = _phase_buckets(acc.lo % acc.pitch, acc.length, acc.pitch) \
            if acc.count > 1 and acc.pitch > 0 else None
        if buckets is None:
            trail_of(self.other, actor).add(acc, acc.lo, acc.hi)
            return
        group = self.striped.setdefault(acc.pitch, {})
        for b in buckets:
            trail_of(group.setdefault(b, {}), actor).add(acc, acc.lo, acc.hi)

    def candidates(self, acc):
        """Every Trails holding an access that may share a byte with `acc`."""
        if self.other:
            yield self.other
        for pitch, group in self.striped.items():
            # one burst, or bursts of this pitch: its phases are one interval
            wanted = _phase_buckets(acc.lo % pitch, acc.length, pitch) \
                if acc.count == 1 or acc.pitch == pitch else None
            if wanted is None:
                yield from group.values()
                continue
            for b in wanted:
                trails = group.get(b)
                if trails:
                    yield trails
