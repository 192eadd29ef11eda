"""GM hazards of one launch, byte-precise: every pair of accesses that can race is a RaceError.

An access is made by an actor (a core's stream and one of its pipes) at that pipe's n-th
instruction. Access B is ordered after access A when B's pipe knew, when B ran, that A's
pipe had got past its n-th instruction: through the pipe order and SetFlag/WaitFlag and
queue flags inside a core (the core's vector clocks), or through CrossCoreSetFlag /
CrossCoreWaitFlag and SyncAll between cores (`knows`: what each pipe knows of other cores'
pipes). Two accesses to a common GM byte race when neither is ordered after the other and
one of them writes; atomic accumulations (SetAtomicAdd/Max/Min) from several cores do not
race with each other. Every transfer is a set of bursts (count x length, a fixed pitch), and
two transfers conflict only if a byte of one burst of each is the same: disjoint stripes of
the same rows are legal.

Accesses are indexed by 4 KB GM pages, on the pages their bursts touch, each with the span of
its bytes on that page (its envelope there), so a check looks only at accesses that can overlap
and skips, with two comparisons, those whose envelope on the page misses its own: the tiles of
a transpose write stripes of the same rows, and comparing every pair in full cost 27 s of a
4096 x 4096 transpose's 30 s. Within a page, accesses are kept by actor in program order: a
new access is ordered after every access of an actor up to the last one it knows of (the order
is a counter per pipe), so only that actor's later accesses are compared (bisected), not its
whole history. One pipe touching one page over and over (a scalar loop of SetValue and
DataCopy) cost a check per earlier access: 919 us per iteration after 4,000.

A transfer whose span covers _MAX_PAGES pages or more is kept in a per-buffer index of wide
accesses by phase (gmstripes.py) that every check consults, and is itself checked against
every page of its span that holds accesses (found by bisection in the buffer's sorted page
numbers): a wide write after a small one on a page in the middle of its span is a race as
much as the other way round (cd3302c checked only its first and last pages).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass, field

from sage.npu.errors import RaceError
from sage.npu.results import PIPES
from sage.npu.sim.gmstripes import WideIndex

PAGE = 4096
_MAX_PAGES = 64          # a transfer spanning more pages goes to its buffer's index of wide accesses


@dataclass(slots=True)   # not frozen: a frozen dataclass's __init__ costs a microsecond per GM transfer
class Access:
    stream: int
    pipe: int
    seq: int
    write: bool
    atomic: bool
    lo: int            # first byte
    length: int        # bytes per burst
    pitch: int         # bytes between burst starts
    count: int         # bursts
    own: tuple         # the core's vector clock of this pipe when it ran (intra-core order)
    knows: dict        # (stream, pipe) -> seq this pipe knew of other cores' pipes
    line: int
    name: str
    where: str         # "AIV block 3" and the like, for messages

    @property
    def hi(self) -> int:
        return self.lo + (self.count - 1) * self.pitch + self.length

    def after(self, other: Access) -> bool:
        """This access is ordered after `other`."""
        if self.stream == other.stream:
            return self.own[other.pipe] >= other.seq
        return self.knows.get((other.stream, other.pipe), 0) >= other.seq


def overlap(a: Access, b: Access) -> tuple[int, int] | None:
    """A byte range both touch, or None (bursts compared exactly)."""
    lo, hi = max(a.lo, b.lo), min(a.hi, b.hi)
    if lo >= hi:
        return None
    if a.pitch == b.pitch > 0 and not _bursts_meet(a, b):
        return None  # (interleaved stripes of one layout, e.g. tiles of other blocks: no burst loop)
    if a.count > b.count:
        a, b = b, a
    for i in range(a.count):
        x = a.lo + i * a.pitch
        y = x + a.length
        if y <= b.lo or x >= b.hi:
            continue
        # bursts j of b with b.lo + j*pitch < y and b.lo + j*pitch + length > x
        first = max(0, (x - b.lo - b.length) // b.pitch + 1) if b.pitch else 0
        last = min(b.count - 1, (y - 1 - b.lo) // b.pitch) if b.pitch else 0
        for j in range(first, last + 1):
            s = b.lo + j * b.pitch
            lo2, hi2 = max(x, s), min(y, s + b.length)
            if lo2 < hi2:
                return lo2, hi2
    return None


def _bursts_meet(a: Access, b: Access) -> bool:
    """Whether a burst of `a` and one of `b` share a byte, for one pitch P in O(1).

    Burst i of a and burst j of b meet iff -a.length < d + (i - j) * P < b.length with
    d = a.lo - b.lo, and i - j takes every value k from -(b.count - 1) to a.count - 1: the
    smallest such k above the lower bound decides.
    """
    p, d = a.pitch, a.lo - b.lo
    k = max(-(b.count - 1), (-a.length - d) // p + 1)
    return k <= a.count - 1 and d + k * p < b.length


def envelope(acc: Access, page: int) -> tuple[int, int] | None:
    """The span of the bytes `acc` touches on `page` (from its first touched byte there to its
    last), or None when none of its bursts reaches the page."""
    ps, pe = page * PAGE, page * PAGE + PAGE
    lo, length, pitch, count = acc.lo, acc.length, acc.pitch, acc.count
    if count == 1 or pitch <= 0:
        first, last_end = lo, lo + length
    else:
        # burst i touches the page iff lo + i*pitch < pe and lo + i*pitch + length > ps
        i0 = max(0, (ps - length - lo) // pitch + 1)
        i1 = min(count - 1, (pe - 1 - lo) // pitch)
        if i0 > i1:
            return None
        first, last_end = lo + i0 * pitch, lo + i1 * pitch + length
    a, b = max(ps, first), min(pe, last_end)
    return (a, b) if a < b else None


def touched_pages(acc: Access) -> dict[int, tuple[int, int]] | None:
    """page -> envelope (envelope()) for every page a burst of `acc` touches; None when its
    span (first to last byte) covers _MAX_PAGES pages or more (a wide access)."""
    if acc.length <= 0:
        return {}
    lo, length, pitch, count = acc.lo, acc.length, acc.pitch, acc.count
    hi = acc.hi
    first, last = lo // PAGE, (hi - 1) // PAGE
    if last - first >= _MAX_PAGES:
        return None
    if first == last:
        return {first: (lo, hi)}
    if count == 1 or pitch == length:   # one run of bytes (most transfers: one tile, on a page or two)
        if last == first + 1:
            cut = last * PAGE
            return {first: (lo, cut), last: (cut, hi)}
        return {p: (max(lo, p * PAGE), min(hi, p * PAGE + PAGE)) for p in range(first, last + 1)}
    pages = {}
    for p in range(first, last + 1):
        env = envelope(acc, p)
        if env is not None:
            pages[p] = env
    return pages


@dataclass(slots=True)
class Trail:
    """One actor's accesses of one kind on one page (or one buffer's wide list), in program
    order, with their sequence numbers for bisection and their envelopes on the page."""

    seqs: list[int] = field(default_factory=list)
    accesses: list[Access] = field(default_factory=list)
    los: list[int] = field(default_factory=list)
    his: list[int] = field(default_factory=list)

    def add(self, acc: Access, lo: int, hi: int) -> None:
        self.seqs.append(acc.seq)
        self.accesses.append(acc)
        self.los.append(lo)
        self.his.append(hi)


Trails = dict  # (stream, pipe) -> Trail


class GmHazards:
    """The GM accesses of one launch so far, per allocation and page, per actor."""

    def __init__(self) -> None:
        self.pages: dict[int, dict[int, tuple[Trails, Trails]]] = {}   # buf -> page -> (reads, writes) by actor
        self.page_keys: dict[int, list[int]] = {}   # buf -> its indexed pages, sorted (made when a wide access needs them)
        self.wide: dict[int, WideIndex] = {}   # buf -> its wide accesses, by phase (gmstripes.py)
        # Reads of an allocation nothing has written yet in this launch (most of them: the inputs)
        # cannot race with anything so far; they are kept in arrival order and indexed only when
        # the first write to that allocation comes, which is then checked against them.
        self.unwritten_reads: dict[int, list[Access]] = {}
        self.written: set[int] = set()

    def access(self, buf: int, label: str, acc: Access) -> None:
        """Check `acc` against what other actors did to `buf`, then record it."""
        if buf not in self.written:
            if not acc.write:
                reads = self.unwritten_reads.get(buf)
                if reads is None:
                    self.unwritten_reads[buf] = [acc]
                else:
                    reads.append(acc)
                return
            self.written.add(buf)
            for read in self.unwritten_reads.pop(buf, ()):  # (each actor's in program order, as they came)
                self._record(buf, read, touched_pages(read))
        pages = self.pages.get(buf)
        if pages is None:
            pages = self.pages[buf] = {}
        touched = touched_pages(acc)
        seen: set[int] = set()
        write = acc.write
        if touched is None:   # wide: every indexed page of its span that it reaches
            keys = self.page_keys.get(buf)
            if keys is None:
                keys = self.page_keys[buf] = sorted(pages)
            first, last = acc.lo // PAGE, (acc.hi - 1) // PAGE
            spots = ((p, envelope(acc, p)) for p in keys[bisect_left(keys, first):bisect_right(keys, last)])
        else:
            spots = touched.items()
        for p, env in spots:
            entry = pages.get(p)
            if entry is None or env is None:
                continue
            reads, writes = entry
            if writes:  # (an input's pages hold reads only: most checks have nothing to look at)
                self._check(acc, writes, seen, label, env)
            if write and reads:
                self._check(acc, reads, seen, label, env)
        wide = self.wide.get(buf)
        if wide is not None:
            for trails in wide.candidates(acc):
                self._check(acc, trails, seen, label, (acc.lo, acc.hi))
        self._record(buf, acc, touched)

    def _record(self, buf: int, acc: Access, touched: dict[int, tuple[int, int]] | None) -> None:
        actor = (acc.stream, acc.pipe)
        if touched is None:
            index = self.wide.get(buf)
            if index is None:
                index = self.wide[buf] = WideIndex()
            index.add(acc, _trail)
            return
        pages = self.pages.get(buf)
        if pages is None:
            pages = self.pages[buf] = {}
        side = 1 if acc.write else 0
        seq = acc.seq
        for p, (lo, hi) in touched.items():   # (inlined: this loop runs for every GM transfer)
            entry = pages.get(p)
            if entry is None:
                entry = pages[p] = ({}, {})
                keys = self.page_keys.get(buf)
                if keys is not None:   # (kept sorted once a wide access has asked for it)
                    insort(keys, p)
            trails = entry[side]
            trail = trails.get(actor)
            if trail is None:
                trail = trails[actor] = Trail()
            trail.seqs.append(seq)
            trail.accesses.append(acc)
            trail.los.append(lo)
            trail.his.append(hi)

    def _check(self, acc: Access, trails: Trails, seen: set[int], label: str, env: tuple[int, int]) -> None:
        alo, ahi = env
        for (stream, pipe), trail in trails.items():
            if stream == acc.stream and pipe == acc.pipe:
                continue
            known = acc.own[pipe] if stream == acc.stream else acc.knows.get((stream, pipe), 0)
            seqs = trail.seqs
            los, his, accesses = trail.los, trail.his, trail.accesses
            # the earlier ones (up to `known`) are ordered before acc
            for k in range(bisect_right(seqs, known), len(seqs)):
                if his[k] <= alo or los[k] >= ahi:
                    continue   # no byte in common on this page (they may meet on another: not `seen`)
                o = accesses[k]
                if id(o) in seen:
                    continue
                seen.add(id(o))
                if not (o.write or acc.write) or (o.atomic and acc.atomic):
                    continue
                if o.after(acc):
                    continue
                both = overlap(acc, o)
                if both is not None:
                    raise RaceError(_message(acc, o, both, label), line=acc.line)


def _trail(trails: Trails, actor: tuple[int, int]) -> Trail:
    trail = trails.get(actor)
    if trail is None:
        trail = trails[actor] = Trail()
    return trail


def _message(b: Access, a: Access, both: tuple[int, int], label: str) -> str:
    verb = "writes" if b.write else "reads"
    other = "writes" if a.write else "reads"
    where = f"bytes [{both[0]}, {both[1]}) of {label}"
    if a.stream == b.stream:
        pa, pb = PIPES[a.pipe], PIPES[b.pipe]
        fix = (f"order them with SetFlag/WaitFlag(HardEvent.{pa}_{pb}, id) (or PipeBarrier(PIPE_ALL))")
        return (f"{b.name} on pipe {pb} {verb} {where} that {a.name} on pipe {pa} (kernel line {a.line}) also "
                f"{other}, with no sync between {pa} and {pb}: {fix}")
    return (f"{b.name} on {b.where} {verb} {where} that {a.name} on {a.where} (kernel line {a.line}) "
            f"{other}, with no sync between the two cores: the blocks of one launch run at the same time, so "
            "make them touch disjoint bytes, order them with SyncAll() or CrossCoreSetFlag/CrossCoreWaitFlag, "
            "or accumulate with SetAtomicAdd")
