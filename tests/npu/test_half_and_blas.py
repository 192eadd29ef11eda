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
