"""The simulator's speed helpers must not change results: the float16 store matches
numpy's cast bit for bit, and the BLAS thread count is restored after a kernel."""

import numpy as np
import pytest

from sage.npu.ascendc._half import half_bits, store_half
from sage.npu.sim.blas import _openblas, single_threaded_blas


def _bit_patterns() -> np.ndarray:
    rng = np.random.default_rng(7)
    random = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    special = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,
                        0xFFC00123, 0x477FE000, 0x477FF000, 0x477FEFFF, 0x387FC000, 0x33800000,
                        0x33000000, 0x33000001, 0x00000001, 0x38800000, 0x387FFFFF], dtype=np.uint32)
    # Every float32 whose float16 result is subnormal or at the normal boundary, sampled densely.
    tiny = np.arange(0x33000000, 0x38900000, 997, dtype=np.uint32)
    return np.concatenate([special, random, tiny, tiny | 0x80000000])


def test_half_bits_match_numpy_cast_for_all_sampled_patterns():
    src = _bit_patterns().view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = src.astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(half_bits(src), expected)


def test_store_half_writes_what_numpy_would():
    src = _bit_patterns().view(np.float32)
    dst = np.empty(src.shape, np.float16)
    store_half(dst, src)
    with np.errstate(over="ignore", invalid="ignore"):
        np.testing.assert_array_equal(dst.view(np.uint16), src.astype(np.float16).view(np.uint16))


# (float32 bits, float16 bits) worked out by hand from IEEE 754 round-half-to-even; numpy's cast
# is checked to agree too, so the table cannot drift from the reference it stands for.
EDGES = [
    (0x00000000, 0x0000), (0x80000000, 0x8000),            # +-0
    (0x3F800000, 0x3C00), (0xBF800000, 0xBC00),            # +-1
    (0x3F801000, 0x3C00),  # 1 + 2^-11: a tie between 1 and 1 + 2^-10, to the even one (1)
    (0x3F803000, 0x3C02),  # 1 + 3 * 2^-11: a tie, to the even one (1 + 2^-9)
    (0x3F801001, 0x3C01),  # just above the tie: up
    (0x477FE000, 0x7BFF),  # 65504, the largest float16
    (0x477FEFFF, 0x7BFF),  # just below the overflow tie: stays finite
    (0x477FF000, 0x7C00),  # 65520: the tie rounds to even, which is inf
    (0x7F7FFFFF, 0x7C00), (0xFF7FFFFF, 0xFC00),            # the largest float32s overflow
    (0x7F800000, 0x7C00), (0xFF800000, 0xFC00),            # +-inf
    (0x7FC00000, 0x7E00), (0xFFC00000, 0xFE00),            # quiet NaN
    (0x7F800001, 0x7C01),  # a NaN whose payload is below float16's: still a NaN (numpy's choice)
    (0x7FA00000, 0x7D00),  # signalling NaN: its top payload bits kept, not quietened (numpy)
    (0x38800000, 0x0400),  # 2^-14, the smallest normal
    (0x387FC000, 0x03FF),  # 1023 * 2^-24, the largest subnormal
    (0x387FE000, 0x0400),  # 1023.5 * 2^-24: a tie, to the even one (1024 * 2^-24, the smallest normal)
    (0x387FF000, 0x0400),  # 1023.75 * 2^-24: up to the smallest normal
    (0x387FD000, 0x03FF),  # 1023.25 * 2^-24: down
    (0x38000000, 0x0200),  # 2^-15: a subnormal with a float32 exponent one below the normals
    (0x33800000, 0x0001), (0xB3800000, 0x8001),            # +-2^-24, the smallest subnormal
    (0x33000000, 0x0000),  # 2^-25: a tie between 0 and 2^-24, to the even one (0)
    (0x33000001, 0x0001),  # just above it: up
    (0x33C00000, 0x0002),  # 3 * 2^-25: a tie between 2^-24 and 2^-23, to the even one
    (0x34200000, 0x0002),  # 5 * 2^-25: a tie between 2 and 3 units of 2^-24, to the even one (down)
    (0x00000001, 0x0000), (0x80000001, 0x8000),            # float32 subnormals vanish, keeping the sign
]


@pytest.mark.parametrize("bits,half", EDGES, ids=[f"{b:08x}" for b, _ in EDGES])
def test_half_bits_on_hand_worked_edges(bits, half):
    src = np.array([bits, 0x3F800000], dtype=np.uint32).view(np.float32)  # with a normal lane beside it
    with np.errstate(over="ignore", invalid="ignore"):
        assert int(src[:1].astype(np.float16).view(np.uint16)[0]) == half   # the table is numpy's answer
    assert [int(h) for h in half_bits(src)] == [half, 0x3C00]
    assert [int(h) for h in half_bits(src[:1])] == [half]                  # and alone


def test_half_bits_on_every_pattern_around_the_subnormal_boundary():
    # every float32 from 2^-26 to 2^-13: all subnormal results, the boundary and the first normal binades
    u = np.arange(0x32800000, 0x39000000, dtype=np.uint32)
    src = u.view(np.float32)
    np.testing.assert_array_equal(half_bits(src), src.astype(np.float16).view(np.uint16))


def test_store_half_keeps_shape_and_handles_empty_arrays():
    src = np.array([[1.0, 2.0 ** -20], [-65520.0, 3.0]], dtype=np.float32)
    dst = np.empty(src.shape, np.float16)
    with np.errstate(over="ignore"):
        store_half(dst, src)
        np.testing.assert_array_equal(dst.view(np.uint16), src.astype(np.float16).view(np.uint16))
    empty = np.empty(0, np.float16)
    store_half(empty, np.empty(0, np.float32))
    assert empty.size == 0


def test_blas_thread_count_is_one_inside_and_restored_after():
    fns = _openblas()
    if fns is None:
        pytest.skip("numpy is not linked against OpenBLAS here: nothing to pin")
    get, put = fns
    before = get()
    put(2)
    try:
        with single_threaded_blas():
            assert get() == 1
        assert get() == 2
    finally:
        put(before)
