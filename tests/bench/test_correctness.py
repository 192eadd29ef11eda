"""The tolerance rules of docs/evaluation.md, at and around their boundaries (pure numpy)."""

import math

import ml_dtypes
import numpy as np
import pytest

from sage.bench.correctness import TOLERANCES, compare_array, compare_outputs, tolerance_for


def test_tolerances_per_dtype():
    assert tolerance_for(np.dtype(np.float32)) == 1e-4
    assert tolerance_for(np.dtype(np.float16)) == 1e-3
    assert tolerance_for(np.dtype(ml_dtypes.bfloat16)) == 8e-3
    assert tolerance_for(np.dtype(np.int32)) is None
    assert tolerance_for(np.dtype(np.bool_)) is None


def test_element_fails_only_when_it_breaks_both_abs_and_rel():
    # Large value: abs error 0.05 breaks atol=1e-4 but rel 5e-6 is within rtol -> passes.
    e = np.array([10000.0, 1.0], dtype=np.float32)
    a = np.array([10000.05, 1.0], dtype=np.float32)
    s = compare_array(e, a)
    assert s.mismatches == 0 and s.correct
    # Tiny value: rel error 1.0 breaks rtol but abs 5e-5 is within atol -> element passes.
    e = np.array([5e-5] + [1.0] * 99, dtype=np.float32)
    a = np.array([0.0] + [1.0] * 99, dtype=np.float32)
    s = compare_array(e, a)
    assert s.mismatches == 0 and s.max_rel_error == pytest.approx(1.0)
    assert s.correct  # rel L2 = 5e-5 / 10 = 5e-6


def test_boundary_of_the_fp32_tolerance():
    e = np.ones(1000, dtype=np.float64)
    tol = TOLERANCES["float32"]
    just_inside = compare_array(e.astype(np.float32), (e * (1 + 0.9 * tol)).astype(np.float32))
    just_outside = compare_array(e.astype(np.float32), (e * (1 + 1.1 * tol)).astype(np.float32))
    assert just_inside.correct and just_inside.mismatches == 0
    assert not just_outside.correct and just_outside.mismatches == 1000


def test_fp16_one_ulp_passes_two_ulps_fail():
    e = np.full(64, 1.0, dtype=np.float16)
    one_ulp = np.nextafter(e, np.float16(2))          # 1 + 2^-10 ~ 9.8e-4 relative
    two_ulps = np.nextafter(one_ulp, np.float16(2))   # ~ 1.95e-3 relative
    assert compare_array(e, one_ulp).correct
    s = compare_array(e, two_ulps)
    assert not s.correct and s.mismatches == 64
    assert s.max_abs_error == pytest.approx(2 ** -9)


def test_bfloat16_tolerance():
    e = np.full(16, 3.0, dtype=ml_dtypes.bfloat16)
    close = np.full(16, 3.015625, dtype=ml_dtypes.bfloat16)   # 1 bf16 ulp at 3: 5.2e-3 relative
    far = np.full(16, 3.03125, dtype=ml_dtypes.bfloat16)      # 1.04e-2 relative
    assert compare_array(e, close).correct
    assert not compare_array(e, far).correct


def test_all_zero_output_fails_on_tiny_reference_through_rel_l2():
    e = np.full(4096, 3e-5, dtype=np.float32)     # every element within atol of 0
    s = compare_array(e, np.zeros_like(e))
    assert s.mismatches == 0
    assert s.rel_l2_error == pytest.approx(1.0)
    assert not s.correct


def test_all_zero_reference_uses_rms_error():
    e = np.zeros(100, dtype=np.float32)
    assert compare_array(e, np.full(100, 5e-5, dtype=np.float32)).correct
    s = compare_array(e, np.full(100, 2e-4, dtype=np.float32))
    assert not s.correct and s.max_rel_error == math.inf


def test_nan_and_inf_must_match_in_position_and_sign():
    e = np.array([1.0, np.nan, np.inf, -np.inf], dtype=np.float32)
    assert compare_array(e, e.copy()).correct
    wrong_sign = np.array([1.0, np.nan, -np.inf, -np.inf], dtype=np.float32)
    s = compare_array(e, wrong_sign)
    assert not s.correct and s.nonfinite_mismatches == 1
    nan_for_value = np.array([np.nan, np.nan, np.inf, -np.inf], dtype=np.float32)
    assert compare_array(e, nan_for_value).nonfinite_mismatches == 1
    finite_for_nan = np.array([1.0, 0.0, np.inf, -np.inf], dtype=np.float32)
    assert not compare_array(e, finite_for_nan).correct


def test_integer_and_bool_outputs_are_exact():
    e = np.array([1, 2, 3], dtype=np.int64)
    assert compare_array(e, e.copy()).correct
    s = compare_array(e, np.array([1, 2, 4], dtype=np.int64))
    assert not s.correct and s.mismatches == 1 and s.max_abs_error == 1.0
    b = np.array([True, False, True])
    assert not compare_array(b, np.array([True, True, True])).correct


def test_output_count_shape_and_dtype_must_match():
    e = np.ones((4, 4), dtype=np.float32)
    assert compare_outputs([e], [e, e]).reason == "expected 1 outputs, got 2"
    assert "shape [16]" in compare_outputs([e], [e.reshape(16)]).reason
    r = compare_outputs([e], [e.astype(np.float16)])
    assert not r.correct and "dtype float16, expected float32" in r.reason


def test_first_failing_output_is_named():
    good = np.ones(8, dtype=np.float32)
    r = compare_outputs([good, good], [good, good * 2])
    assert not r.correct and r.reason.startswith("output 1:")
    assert [o.correct for o in r.outputs] == [True, False]


def test_quantised_codes_may_be_one_step_off_only_when_asked():
    e = np.array([[-128, -3, 0, 5, 127]], dtype=np.int8)
    off_by_one = np.array([[-127, -3, 1, 5, 126]], dtype=np.int8)
    off_by_two = np.array([[-128, -1, 0, 5, 127]], dtype=np.int8)
    assert not compare_outputs([e], [off_by_one]).correct
    s = compare_outputs([e], [off_by_one], int_step=1)
    assert s.correct and s.outputs[0].mismatches == 0 and s.outputs[0].max_abs_error == 1.0
    bad = compare_outputs([e], [off_by_two], int_step=1)
    assert not bad.correct and bad.outputs[0].mismatches == 1
    # Bool outputs stay exact whatever the step.
    assert not compare_outputs([np.array([True])], [np.array([False])], int_step=1).correct


# --- The low-precision rule against the float64 truth (issue 9) ------------------------------------------

import torch  # noqa: E402

from sage.bench.correctness import C, CAP_ULPS, RULE, ulp  # noqa: E402
from sage.bench.evaluate import reference_outputs, truth_outputs  # noqa: E402


class _Swishish(torch.nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x) + 0.5 * x - 1


def _judge(model, x, kernel_out):
    expected = reference_outputs(model, [x])
    truth = truth_outputs(model, [x], len(expected))
    assert truth is not None and truth[0].dtype == np.float64
    return compare_outputs(expected, [kernel_out], truth=truth)


def _fused_fp32(x: torch.Tensor, half: float) -> np.ndarray:
    xf = x.float()
    return (xf * torch.sigmoid(xf) + half * xf - 1).to(torch.float16).numpy()


def test_fused_fp16_kernel_rounding_once_passes_twenty_fresh_runs():
    model = _Swishish()
    for seed in range(20):
        g = torch.Generator().manual_seed(1000 + seed)
        x = (torch.randn(1 << 20, generator=g) * 2).to(torch.float16)
        r = _judge(model, x, _fused_fp32(x, 0.5))
        assert r.correct, r.reason


def test_the_same_kernel_failed_against_eager_alone():
    # What the rule fixes: against the eager output (which rounds after every op) the more
    # accurate fused kernel is 1-2 ulp off at ~1e3 elements near zero.
    model = _Swishish()
    x = (torch.randn(1 << 20, generator=torch.Generator().manual_seed(7)) * 2).to(torch.float16)
    expected = reference_outputs(model, [x])
    r = compare_outputs(expected, [_fused_fp32(x, 0.5)])
    assert not r.correct and r.outputs[0].mismatches > 100


def test_a_wrong_constant_fails():
    model = _Swishish()
    x = (torch.randn(1 << 20, generator=torch.Generator().manual_seed(3)) * 2).to(torch.float16)
    r = _judge(model, x, _fused_fp32(x, 0.505))
    assert not r.correct
    s = r.outputs[0]
    assert s.mismatches > 1000 and s.truth
    # The message states the rule and shows where: kernel, eager, truth and eager's own error.
    assert RULE in r.reason and "kernel=" in r.reason and "truth=" in r.reason and "eager error" in r.reason
    assert len(s.first_failures) == 3


class _GeluErf(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x)


def test_tanh_gelu_fails_an_exact_erf_fp32_case():
    x = torch.randn(1 << 18, generator=torch.Generator().manual_seed(11)) * 3
    approx = torch.nn.functional.gelu(x, approximate="tanh").numpy()
    r = _judge(_GeluErf(), x, approx)
    assert not r.correct and r.outputs[0].mismatches > 0
    # ... while the exact kernel passes.
    assert _judge(_GeluErf(), x, torch.nn.functional.gelu(x).numpy()).correct


def test_second_term_is_capped_at_eight_ulps():
    # Eager 20 ulp off: a kernel 10 ulp off the truth is not excused by eager's error (cap 8 ulp).
    t = np.full(8, 1.5, dtype=np.float64)
    u = ulp(t, "float16")[0]
    assert u == 2.0 ** -10
    eager = (t + 20 * u).astype(np.float16)
    ok = (t + 7 * u).astype(np.float16)        # 7 ulp = 6.8e-3 > tol 1e-3 * 1.5, but within the cap
    bad = (t + 10 * u).astype(np.float16)
    assert compare_array(eager, ok, truth=t).correct
    assert not compare_array(eager, bad, truth=t).correct
    assert C == 2.0 and CAP_ULPS == 8


def test_eager_overflow_is_judged_against_the_truth():
    t = np.array([1000.0, 2.0], dtype=np.float64)
    eager = np.array([np.inf, 2.0], dtype=np.float16)         # eager overflowed in an intermediate
    assert compare_array(eager, t.astype(np.float16), truth=t).correct
    assert not compare_array(eager, eager.copy(), truth=t).correct   # matching eager's inf is wrong


def test_truth_positions_of_inf_count_after_rounding_to_the_output_dtype():
    t = np.array([70000.0, 1.0], dtype=np.float64)           # beyond fp16: the representable truth is inf
    out = np.array([np.inf, 1.0], dtype=np.float16)
    assert compare_array(out, out.copy(), truth=t).correct


def test_a_large_output_is_compared_in_slices_with_the_same_verdict_and_figures(monkeypatch):
    # slices of 1,000 elements over a 10,003-element output (the last slice partial): the
    # counts, maxima, relative L2 errors and first failing positions come out as in one pass
    import sage.bench.correctness as corr

    rng = np.random.default_rng(5)
    truth = rng.standard_normal((7, 1429))
    eager = (truth + rng.standard_normal(truth.shape) * 1e-7).astype(np.float32)
    kernel = eager.copy()
    kernel[3, 5] += 1.0                      # flat 4292, in the fifth slice
    kernel[6, 1000] = np.nan                 # flat 9574, in the last slice
    whole = corr.compare_array(eager, kernel, truth=truth)
    monkeypatch.setattr(corr, "CHUNK_ELEMENTS", 1000)
    sliced = corr.compare_array(eager, kernel, truth=truth)
    assert sliced.mismatches == whole.mismatches == 2 and sliced.nonfinite_mismatches == 1
    assert sliced.first_failures == whole.first_failures
    assert sliced.first_failures[0].startswith("[3, 5]: ") and sliced.first_failures[1].startswith("[6, 1000]: ")
    assert sliced.rel_l2_error == whole.rel_l2_error == float("inf")
    kernel[6, 1000] = eager[6, 1000]
    ok_whole = corr.compare_array(eager, kernel, truth=truth)
    monkeypatch.setattr(corr, "CHUNK_ELEMENTS", 1000)
    ok_sliced = corr.compare_array(eager, kernel, truth=truth)
    assert ok_sliced.max_abs_error == ok_whole.max_abs_error
    assert ok_sliced.rel_l2_error == pytest.approx(ok_whole.rel_l2_error, rel=1e-12)
    assert ok_sliced.reference_rel_l2_error == pytest.approx(ok_whole.reference_rel_l2_error, rel=1e-12)


def test_truth_outputs_are_the_forwards_own_memory_and_leave_the_case_alone():
    # the float64 forward runs on a copied model and cloned inputs, so its outputs are handed
    # over as they are (a 1.9 GB truth took 4.7 s to copy) and writing them reaches nothing
    class Echo(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3))

        def forward(self, x):
            return x, self.w, x * 2

    model, x = Echo(), torch.arange(3.0)
    truth = truth_outputs(model, [x], 3)
    assert [t.dtype for t in truth] == [np.float64] * 3 and not any(t.flags.owndata for t in truth)
    for t in truth:
        t[...] = 7
    assert x.tolist() == [0, 1, 2] and model.w.tolist() == [1, 1, 1]


def test_integer_outputs_are_compared_in_slices_where_they_differ(monkeypatch):
    # int8 outputs over 10,003 elements in slices of 1,000: two wrong elements, one in the
    # fifth slice and one in the last (partial) one; the figures are worked out by hand
    import sage.bench.correctness as corr

    monkeypatch.setattr(corr, "CHUNK_ELEMENTS", 1000)
    expected = np.full(10003, 2, dtype=np.int8)
    expected[4292] = 0
    actual = expected.copy()
    actual[4292] = 3            # the reference is 0 here: a relative error without bound
    actual[9574] = -2
    s = corr.compare_array(expected, actual)
    assert (s.mismatches, s.correct, s.max_abs_error, s.max_rel_error) == (2, False, 4.0, math.inf)
    # |a - e| = (3, 4) against |e| = 2 at 10,002 places
    assert s.rel_l2_error == pytest.approx(5.0 / math.sqrt(4 * 10002), rel=1e-12)
    # a step of 3 forgives the 3, not the 4; equal outputs give zeros without a float copy
    assert corr.compare_array(expected, actual, int_step=3).mismatches == 1
    same = corr.compare_array(expected, expected.copy())
    assert (same.mismatches, same.max_abs_error, same.max_rel_error, same.rel_l2_error) == (0, 0.0, 0.0, 0.0)
    # an all-zero reference: the error over the square root of the size
    zeros = np.zeros(10003, dtype=np.int8)
    assert corr.compare_array(zeros, actual).rel_l2_error == pytest.approx(
        np.linalg.norm(actual.astype(np.float64)) / math.sqrt(10003), rel=1e-12)
