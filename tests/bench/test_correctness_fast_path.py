"""compare_array's finite fast path gives exactly what the general element-by-element rule gives.

The fast path computes the eager/ulp term only outside the dtype tolerance; the general path
(`_general_slice`, the rule written out for every element, NaN and Inf included) is the
reference it must match, figure for figure, on outputs that probe every term of the rule."""

import math

import ml_dtypes
import numpy as np
import pytest

from sage.bench import correctness
from sage.bench.correctness import CHUNK_ELEMENTS, compare_array, tolerance_for


def _general(expected, actual, truth):
    """compare_array's figures with every slice forced through the general path."""
    acc = correctness._Sums()
    t = None if truth is None else np.asarray(truth, dtype=np.float64).reshape(-1)
    e = expected.astype(np.float64).reshape(-1)
    t = e if t is None else t
    with np.errstate(over="ignore", invalid="ignore"):
        t_out = t.astype(expected.dtype).astype(np.float64)
    correctness._general_slice(acc, e, actual.astype(np.float64).reshape(-1), t, t_out, truth is not None, 0,
                               correctness.dtype_name(expected.dtype), tolerance_for(expected.dtype))
    return acc


def _probe_case(dtype, n=20000, seed=0):
    """Truth, eager and kernel outputs with elements at each term of the rule: inside the
    tolerance, outside it but within twice eager's own error, past the ulp cap, on a zero truth."""
    rng = np.random.default_rng(seed)
    truth = rng.standard_normal(n) * np.exp2(rng.integers(-12, 12, n))
    truth[:50] = 0.0
    tol = tolerance_for(np.dtype(dtype))
    scale = np.maximum(1.0, np.abs(truth))
    eager = (truth + rng.choice([0.0, 2.0, 5.0], n) * tol * scale).astype(dtype)
    kernel = truth + rng.choice([0.0, 0.5, 1.5, 3.0, 8.0, 40.0], n) * tol * scale * rng.choice([-1, 1], n)
    kernel[:50] = rng.choice([0.0, 1e-9, 1e-3], 50)
    return eager, kernel.astype(dtype), truth


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("with_truth", [True, False])
def test_fast_path_matches_the_general_rule(dtype, with_truth):
    eager, kernel, truth = _probe_case(dtype)
    t = truth if with_truth else None
    fast = compare_array(eager, kernel, truth=t)
    acc = _general(eager, kernel, t)
    assert 0 < fast.mismatches < eager.size          # the probe has passing and failing elements
    assert fast.mismatches == acc.mismatches and fast.nonfinite_mismatches == acc.nonfinite == 0
    assert fast.max_abs_error == acc.max_abs and fast.max_rel_error == acc.max_rel
    assert fast.max_rel_error == math.inf            # a zero truth with a nonzero error
    assert fast.rel_l2_error == pytest.approx(correctness._l2_ratio(acc.err_sq, acc.ref_sq, acc.finite), rel=1e-12)
    if with_truth:
        assert fast.reference_rel_l2_error == pytest.approx(
            correctness._l2_ratio(acc.eager_err_sq, acc.eager_ref_sq, acc.both), rel=1e-12)
    first = [correctness._failure_text(eager.shape, *f) for f in acc.first]
    assert fast.first_failures == first


def test_eager_error_excuses_an_element_outside_the_tolerance():
    # fp16 at 1.0: tol 1e-3; eager is 4 ulp (3.9e-3) off, so the kernel may be up to
    # min(2 * 3.9e-3, 8 ulp = 7.8e-3) off: 3 ulp passes, 9 ulp fails.
    ulp = 2.0 ** -10
    truth = np.array([1.0, 1.0])
    eager = np.array([1 + 4 * ulp, 1 + 4 * ulp], dtype=np.float16)
    kernel = np.array([1 + 3 * ulp, 1 + 9 * ulp], dtype=np.float16)
    s = compare_array(eager, kernel, truth=truth)
    assert s.mismatches == 1 and s.first_failures[0].startswith("[1]")
    assert _general(eager, kernel, truth).mismatches == 1


def test_nonfinite_outputs_take_the_general_path():
    truth = np.array([1.0, 2.0, 3.0])
    kernel = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    s = compare_array(truth.astype(np.float32), kernel, truth=truth)
    assert s.nonfinite_mismatches == 1 and s.max_abs_error == math.inf and not s.correct


def test_slices_are_summed_across_the_chunk_boundary():
    n = CHUNK_ELEMENTS + 10
    truth = np.ones(n)
    kernel = np.ones(n, dtype=np.float32)
    kernel[[3, CHUNK_ELEMENTS + 2]] = 2.0
    s = compare_array(truth.astype(np.float32), kernel, truth=truth)
    assert s.mismatches == 2
    assert s.first_failures[1].startswith(f"[{CHUNK_ELEMENTS + 2}]")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("with_truth", [True, False])
def test_an_exact_copy_gives_the_general_rules_figures(dtype, with_truth):
    # a copy (cat, pad): kernel, eager and truth the same values, zero included
    rng = np.random.default_rng(1)
    out = (rng.standard_normal(3000) * 40).astype(dtype)
    out[:7] = 0
    truth = out.astype(np.float64) if with_truth else None
    fast = compare_array(out, out.copy(), truth=truth)
    acc = _general(out, out.copy(), truth)
    assert fast.correct and fast.mismatches == acc.mismatches == 0
    assert fast.max_abs_error == acc.max_abs == 0.0 and fast.max_rel_error == acc.max_rel == 0.0
    assert fast.rel_l2_error == correctness._l2_ratio(acc.err_sq, acc.ref_sq, acc.finite) == 0.0
    if with_truth:
        assert fast.reference_rel_l2_error == correctness._l2_ratio(acc.eager_err_sq, acc.eager_ref_sq, acc.both)


def test_a_copy_off_by_one_element_is_not_taken_as_exact():
    out = np.linspace(-3, 3, 100, dtype=np.float32)
    kernel = out.copy()
    kernel[41] = np.nextafter(kernel[41], np.float32(9)) + 1.0
    s = compare_array(out, kernel, truth=out.astype(np.float64))
    assert s.mismatches == 1 and s.max_abs_error > 0.9 and not s.correct
