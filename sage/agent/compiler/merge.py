"""Horizontal fusion: consecutive independent tile programs as one launch.

Every launch costs a host dispatch (12.1 us on the reference timeline) however little it
does; the pieces of a `cat`, or groups that write different results from the same inputs,
are separate tile programs only because their iteration spaces differ. When none of them
reads what another writes and their writes do not overlap, they can run at once: one
kernel whose blocks are dealt out to the programs (in proportion to the bytes each moves),
each block running its program's `Init(..., tpb, blk)` and `Process()` on its share of
that program's tiles. Programs are independent, so no block waits for another.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sage.agent.compiler.emit import Launch
from sage.kernels import suffixed
from sage.kernels.library.source import DTYPE_SIZE

if TYPE_CHECKING:
    from sage.kernels import TileSpec

# Footprints larger than this are not enumerated: such programs are not merged with a
# program touching the same buffer (cost of the check, not a hardware limit).
ENUMERATE_LIMIT = 1 << 22


@dataclass(frozen=True)
class Footprint:
    """The elements of buffer `arg` a program touches: offset + sum(i_k * strides_k)."""

    arg: str
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int

    def bounds(self) -> tuple[int, int]:
        lo = self.offset + sum((d - 1) * s for d, s in zip(self.dims, self.strides) if s < 0)
        hi = self.offset + sum((d - 1) * s for d, s in zip(self.dims, self.strides) if s > 0)
        return lo, hi

    def elements(self) -> np.ndarray:
        """Every element index it touches, repeats included (a zero stride repeats)."""
        idx = np.array([self.offset], dtype=np.int64)
        for d, s in zip(self.dims, self.strides):
            if s and d > 1:
                idx = (idx[:, None] + np.arange(d, dtype=np.int64)[None, :] * s).ravel()
        return idx


@functools.lru_cache(maxsize=4096)
def overlap(a: Footprint, b: Footprint) -> bool:
    """Whether two footprints share an element. A pure function of two values, cached: every
    compile of a task (each schedule the search or a refinement tries) asks the same pairs,
    and enumerating a footprint of millions of elements costs a large fraction of a second."""
    if a.arg != b.arg:
        return False
    (alo, ahi), (blo, bhi) = a.bounds(), b.bounds()
    if ahi < blo or bhi < alo:
        return False
    if max(math.prod(a.dims), math.prod(b.dims)) > ENUMERATE_LIMIT:
        return True
    # One mark per element of the shared span (a span is at most a buffer, and footprints
    # here are at most ENUMERATE_LIMIT elements): linear, where sorting both sets (what
    # np.unique + intersect1d did) cost a large fraction of a second per pair.
    lo, hi = max(alo, blo), min(ahi, bhi)
    seen = np.zeros(hi - lo + 1, dtype=bool)
    ea, eb = a.elements(), b.elements()
    seen[ea[(ea >= lo) & (ea <= hi)] - lo] = True
    eb = eb[(eb >= lo) & (eb <= hi)]
    return bool(seen[eb - lo].any())


@dataclass
class TileProgram:
    """What merging needs of a tile launch: its class, arguments, tiles and footprints."""

    cls: str
    args: list[str]
    tiles: int
    nbytes: int                    # bytes its leaves and outputs span (the block split's weight)
    reads: list[Footprint] = field(default_factory=list)
    writes: list[Footprint] = field(default_factory=list)

    def independent_of(self, other: TileProgram) -> bool:
        pairs = [(w, x) for w in self.writes for x in other.reads + other.writes]
        pairs += [(r, w) for r in self.reads for w in other.writes]
        return not any(overlap(a, b) for a, b in pairs)


def merge_launches(launches: list[Launch], cores: int, combine=None) -> list:
    """Runs of consecutive, pairwise independent tile launches, each run as one launch
    (`combine(run, name, cores)`, by default `merged`: a shape-generic compile combines them
    its own way, generic/merge.py)."""
    combine = combine or merged
    out: list[Launch] = []
    run: list[Launch] = []
    for launch in launches + [None]:
        prog = launch.program if launch is not None else None
        if prog is not None and len(run) < cores and all(
                prog.independent_of(r.program) for r in run):     # type: ignore[arg-type]
            run.append(launch)
            continue
        if run:
            out.append(run[0] if len(run) == 1 else combine(run, f"m{len(out)}", cores))
        run = [launch] if prog is not None else []
        if launch is not None and prog is None:
            out.append(launch)
    return out


def split_blocks(weights: list[int], tiles: list[int], cores: int) -> list[int]:
    """Blocks per program: in proportion to its weight, at least one, at most its tiles,
    `cores` in all (or fewer when the programs have fewer tiles)."""
    total = sum(weights) or 1
    n = [max(1, min(t, round(cores * w / total))) for w, t in zip(weights, tiles)]
    while sum(n) > cores:
        i = min((i for i in range(len(n)) if n[i] > 1), key=lambda i: weights[i] / n[i])
        n[i] -= 1
    while sum(n) < cores:
        grow = [i for i in range(len(n)) if n[i] < tiles[i]]
        if not grow:
            break
        i = max(grow, key=lambda i: weights[i] / n[i])
        n[i] += 1
    return n


def merged(run: list[Launch], name: str, cores: int) -> Launch:
    progs = [launch.program for launch in run]
    assert all(p is not None for p in progs)
    args = list(dict.fromkeys(a for p in progs for a in p.args))          # type: ignore[union-attr]
    blocks = split_blocks([p.nbytes for p in progs], [p.tiles for p in progs], cores)  # type: ignore[union-attr]
    per = [-(-p.tiles // n) for p, n in zip(progs, blocks)]               # type: ignore[union-attr]
    blocks = [-(-p.tiles // t) for p, t in zip(progs, per)]                # type: ignore[union-attr]
    parts = [suffixed(launch.source, f"_p{i}") for i, launch in enumerate(run)]
    body = ["    blk = GetBlockIdx()"]
    start = 0
    for i, (p, n, t) in enumerate(zip(progs, blocks, per)):
        assert p is not None
        test = "if" if i == 0 else "elif"
        body += [f"    {test} blk < {start + n}:", f"        op = {p.cls}_p{i}()",
                 f"        op.Init({', '.join(p.args)}, {t}, blk - {start})", "        op.Process()"]
        start += n
    parts.append(f"@kernel\ndef {name}_kernel({', '.join(args)}):\n" + "\n".join(body) + "\n\n")
    parts.append(f"def {name}_launch({', '.join(args)}):\n    {name}_kernel[{start}]({', '.join(args)})\n")
    label = "one launch of " + "; ".join(launch.label for launch in run)
    return Launch("\n".join(parts), f"{name}_launch({', '.join(args)})", label, args)


def program_of(spec: TileSpec, tiles: int) -> TileProgram:
    """The merge facts of a tile program."""
    from sage.kernels import Access
    from sage.kernels.library.tile import tile_args, tile_class

    def foot(acc) -> Footprint:
        if getattr(acc, "fill", None) is not None and acc.window is not None:   # a padded copy: its window
            lo, hi = acc.window
            return Footprint(acc.arg, tuple(spec.dims[:-1]) + (hi - lo,), tuple(acc.strides),
                             acc.offset + lo * acc.strides[-1])
        if getattr(acc, "seg", None) is not None:          # one value per segment of the columns
            length, step = acc.seg
            return Footprint(acc.arg, tuple(spec.dims[:-1]) + (-(-spec.dims[-1] // length),),
                             tuple(acc.strides[:-1]) + (step,), acc.offset)
        return Footprint(acc.arg, tuple(spec.dims), tuple(acc.strides), acc.offset)

    # a windowed leaf reads what its host reads (its own map leaves the row outside its window)
    leaves = [leaf for leaf in spec.leaves if isinstance(leaf, Access) and (leaf.window is None or leaf.fill is not None)]
    nbytes = sum(math.prod(spec.dims) * DTYPE_SIZE[a.dtype] for a in leaves + [o.access for o in spec.outputs])
    return TileProgram(cls=tile_class(spec), args=tile_args(spec),
                       tiles=tiles, nbytes=nbytes, reads=[foot(a) for a in leaves],
                       writes=[foot(o.access) for o in spec.outputs])
