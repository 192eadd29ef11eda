"""Whether two tile programs' footprints share an element (merge.overlap), against the
element sets built by hand in Python."""

import itertools
import random

from sage.agent.compiler.merge import Footprint, overlap


def _elements(f: Footprint) -> set[int]:
    return {f.offset + sum(i * s for i, s in zip(index, f.strides))
            for index in itertools.product(*(range(d) for d in f.dims))}


def test_overlap_is_the_intersection_of_the_element_sets():
    rng = random.Random(0)
    for _ in range(400):
        def draw() -> Footprint:
            dims = tuple(rng.randint(1, 6) for _ in range(rng.randint(1, 3)))
            strides = tuple(rng.choice([0, 1, 2, 3, 7, -2, 16]) for _ in dims)
            return Footprint("x", dims, strides, rng.randint(0, 60))
        a, b = draw(), draw()
        assert overlap(a, b) == bool(_elements(a) & _elements(b)), (a, b)


def test_interleaved_stripes_do_not_overlap_and_other_buffers_never_do():
    even = Footprint("x", (64, 32), (64, 1), 0)       # columns 0..31 of 64-wide rows
    odd = Footprint("x", (64, 32), (64, 1), 32)       # columns 32..63: the same span, no shared element
    assert not overlap(even, odd)
    assert overlap(even, Footprint("x", (1,), (1,), 64 * 10 + 5))
    assert not overlap(even, Footprint("y", (64, 32), (64, 1), 0))
