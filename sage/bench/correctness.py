"""Comparing a kernel's outputs with the reference's (docs/evaluation.md).

The truth is the same reference on the same inputs with every floating input and
parameter promoted to float64 (explicit casts written inside the reference stay as
written); the eager reference is the reference as torch runs it in the task's dtypes,
rounding after every op. `RULE` states the rule in words; it is the text failure messages,
docs/evaluation.md and the agent's prompt use.

Per output:
- count, shape and dtype must match the eager reference;
- integer and bool outputs equal the eager reference element for element (quantised codes
  of `quant` tasks may be one step off, `int_step=1`: see below);
- floating outputs, element by element against the truth t (eager e, kernel a):
  |a − t| ≤ max(tol · max(1, |t|), min(C · |e − t|, CAP_ULPS ulp of the output dtype at t)).
  The first term is the dtype tolerance (fp32 1e-4, fp16 1e-3, bf16 8e-3, absolute below 1,
  relative above); the second lets a kernel be as inaccurate as eager torch itself (C = 2),
  never more than 8 ulp, so a more accurate fused kernel is never failed for disagreeing
  with eager rounding. Where eager overflowed to inf/NaN but the truth is finite, |e − t| is
  infinite and the cap applies: the kernel is judged against the truth;
- NaN and ±Inf positions (and signs) must match the truth rounded to the output dtype;
- the relative L2 error of the whole output against the truth must stay under
  max(tol, C · the eager reference's own relative L2 error), so an all-zero output cannot pass
  on a tiny-valued reference (an all-zero truth: the RMS error stands in).
All arithmetic is in float64 so the check itself adds no rounding. Without a truth (the
float64 reference could not run) the eager output stands in for it and the rule reduces to
the dtype tolerance.

One documented exception (docs/evaluation.md): quantised integer codes of `quant` tasks may
differ by one step (`int_step=1`). A code is round(x / scale); when x / scale lands within
float rounding of a .5 boundary, a correct fp32 kernel and the reference legitimately pick
neighbouring codes (measured: ~0.7 codes per million), and the vendor's own tests accept ±1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict

TOLERANCES: dict[str, float] = {"float32": 1e-4, "float16": 1e-3, "bfloat16": 8e-3}
# Outputs in a float type without an entry (float64) are held to the tightest tolerance.
_DEFAULT_FLOAT_TOL = 1e-4
C = 2.0                 # a kernel may be this many times as far from the truth as eager torch is ...
CAP_ULPS = 8            # ... but never by more than this many ulp of the output dtype
_MANTISSA_BITS = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}
_MIN_EXPONENT = {"float16": -14, "bfloat16": -126, "float32": -126, "float64": -1022}
FIRST_SHOWN = 3         # failing elements listed in a failure message

RULE = (
    "Correctness rule: integer and bool outputs must equal the eager reference (quantised codes may be one step "
    "off). A floating element passes when |kernel - truth| <= max(tol * max(1, |truth|), "
    f"min({C:g} * |eager - truth|, {CAP_ULPS} ulp of the output dtype)), where truth is the same reference run "
    "with floating inputs and parameters promoted to float64 (explicit casts inside it kept), eager is the "
    "reference in the task's dtypes, and tol is 1e-4 for float32, 1e-3 for float16, 8e-3 for bfloat16. So "
    "computing in float32 and rounding once is always fine; being less accurate than eager torch is not. "
    "NaN/Inf positions must match the truth, and the relative L2 error of each output against the truth must stay "
    f"under max(tol, {C:g} * eager's own)."
)


class OutputStats(BaseModel):
    # An error against a zero reference has an infinite relative error: written to JSON
    # as the string "Infinity" (strict JSON has no infinity), read back as a float.
    model_config = ConfigDict(ser_json_inf_nan="strings")

    index: int
    shape: list[int]
    dtype: str
    tolerance: float | None          # None: compared exactly
    elements: int
    mismatches: int                  # elements outside the rule (or unequal, or NaN/Inf misplaced)
    max_abs_error: float             # against the truth (the eager reference for exact types)
    max_rel_error: float
    rel_l2_error: float
    rel_l2_limit: float | None = None          # what rel_l2_error had to stay under
    reference_rel_l2_error: float | None = None  # the eager reference's own error against the truth
    nonfinite_mismatches: int = 0
    first_failures: list[str] = []   # "[i, j]: kernel=…, eager=…, truth=… (eager error …)"
    truth: bool = False              # judged against the float64 truth (else the eager output stood in)
    correct: bool


class Comparison(BaseModel):
    correct: bool
    reason: str | None = None        # the first thing that failed, in words
    outputs: list[OutputStats] = []


def dtype_name(dtype: np.dtype) -> str:
    """numpy's name, with ml_dtypes' bfloat16 spelled "bfloat16"."""
    return "bfloat16" if np.dtype(dtype).name == "bfloat16" else np.dtype(dtype).name


def tolerance_for(dtype: np.dtype) -> float | None:
    """The dtype's tolerance, or None for types compared exactly (ints, bool)."""
    name = dtype_name(dtype)
    if name in TOLERANCES:
        return TOLERANCES[name]
    if np.issubdtype(np.dtype(dtype), np.floating) or np.issubdtype(np.dtype(dtype), np.complexfloating):
        return _DEFAULT_FLOAT_TOL
    return None


def compare_outputs(expected: Sequence[np.ndarray], actual: Sequence[np.ndarray], *,
                    truth: Sequence[np.ndarray] | None = None, int_step: int = 0) -> Comparison:
    """`expected`: the eager reference's outputs; `truth`: the float64 reference's (None: the
    eager outputs stand in); `int_step`: how far integer codes may be off (0 = exact; 1 for
    quantised outputs)."""
    if truth is not None and len(truth) != len(expected):
        truth = None
    if len(actual) != len(expected):
        return Comparison(correct=False, reason=f"expected {len(expected)} outputs, got {len(actual)}")
    stats: list[OutputStats] = []
    reason = None
    for i, (e, a) in enumerate(zip(expected, actual)):
        e, a = np.asarray(e), np.asarray(a)
        if a.shape != e.shape:
            return Comparison(correct=False, outputs=stats,
                              reason=f"output {i}: shape {list(a.shape)}, expected {list(e.shape)}")
        if dtype_name(a.dtype) != dtype_name(e.dtype):
            return Comparison(correct=False, outputs=stats,
                              reason=f"output {i}: dtype {dtype_name(a.dtype)}, expected {dtype_name(e.dtype)}")
        t = None if truth is None or np.shape(truth[i]) != e.shape else np.asarray(truth[i])
        s = compare_array(e, a, truth=t, index=i, int_step=int_step)
        stats.append(s)
        if not s.correct and reason is None:
            reason = _failure_reason(s)
    return Comparison(correct=reason is None, reason=reason, outputs=stats)


def ulp(values: np.ndarray, dtype: str) -> np.ndarray:
    """The spacing of `dtype` at each value (subnormal spacing near zero)."""
    mant = _MANTISSA_BITS.get(dtype, 23)
    lo = _MIN_EXPONENT.get(dtype, -126)
    with np.errstate(divide="ignore", invalid="ignore"):
        exp = np.floor(np.log2(np.abs(values)))
    exp = np.where(np.isfinite(exp), np.maximum(exp, lo), lo)
    return np.exp2(exp - mant)


def compare_array(expected: np.ndarray, actual: np.ndarray, *, truth: np.ndarray | None = None, index: int = 0,
                  int_step: int = 0) -> OutputStats:
    tol = tolerance_for(expected.dtype)
    name = dtype_name(expected.dtype)
    common = dict(index=index, shape=list(expected.shape), dtype=name, tolerance=tol, elements=int(expected.size))
    if tol is None:
        step = int_step if np.issubdtype(expected.dtype, np.integer) else 0
        return _compare_exact(expected, actual, common, step)
    acc = _Sums()
    e_all, a_all = expected.reshape(-1), actual.reshape(-1)
    t_all = None if truth is None else np.asarray(truth).reshape(-1)
    # In slices: the float64 temporaries of a whole 268M-element output came to over 20 GB.
    for lo in range(0, expected.size, CHUNK_ELEMENTS):
        hi = lo + CHUNK_ELEMENTS
        _compare_slice(acc, e_all[lo:hi], a_all[lo:hi], None if t_all is None else t_all[lo:hi], lo,
                       expected.dtype, name, tol)
    rel_l2 = math.inf if acc.unbounded else _l2_ratio(acc.err_sq, acc.ref_sq, acc.finite)
    ref_l2 = _l2_ratio(acc.eager_err_sq, acc.eager_ref_sq, acc.both) if truth is not None else 0.0
    l2_limit = max(tol, C * ref_l2)
    first = [_failure_text(expected.shape, *f) for f in acc.first]
    return OutputStats(**common, mismatches=acc.mismatches,
                       max_abs_error=math.inf if acc.unbounded else acc.max_abs,
                       max_rel_error=math.inf if acc.unbounded else acc.max_rel,
                       rel_l2_error=rel_l2, rel_l2_limit=l2_limit,
                       reference_rel_l2_error=ref_l2 if truth is not None else None,
                       nonfinite_mismatches=acc.nonfinite,
                       first_failures=first, truth=truth is not None,
                       correct=acc.mismatches == 0 and rel_l2 < l2_limit)


# Elements compared per pass: each float64 temporary of a slice is 32 MB.
CHUNK_ELEMENTS = 1 << 22


@dataclass
class _Sums:
    """What compare_array gathers over the slices of one output."""
    mismatches: int = 0
    nonfinite: int = 0
    unbounded: bool = False
    max_abs: float = 0.0
    max_rel: float = 0.0
    err_sq: float = 0.0          # kernel against truth, over the finite elements
    ref_sq: float = 0.0
    finite: int = 0
    eager_err_sq: float = 0.0    # eager against truth, where both are finite
    eager_ref_sq: float = 0.0
    both: int = 0
    first: list = field(default_factory=list)     # (flat index, kernel, eager, truth, eager error)


def _compare_slice(acc: _Sums, expected: np.ndarray, actual: np.ndarray, truth: np.ndarray | None, offset: int,
                   dtype: np.dtype, name: str, tol: float) -> None:
    t = expected.astype(np.float64) if truth is None else np.asarray(truth, dtype=np.float64)
    if _exact_slice(acc, expected, actual, t, truth is not None):
        return
    with np.errstate(over="ignore", invalid="ignore"):
        t_out = t.astype(dtype)         # where the truth does not fit the output dtype, it is inf
    if np.isfinite(actual).all() and np.isfinite(t_out).all() and np.isfinite(expected).all():
        _finite_slice(acc, expected, actual, t, truth is not None, offset, name, tol)
    else:
        e = t if truth is None else expected.astype(np.float64)
        _general_slice(acc, e, actual.astype(np.float64), t, t_out.astype(np.float64), truth is not None, offset,
                       name, tol)


def _exact_slice(acc: _Sums, expected: np.ndarray, actual: np.ndarray, t: np.ndarray, has_truth: bool) -> bool:
    """A slice where kernel, eager and truth are the same finite values (a copy: cat, pad,
    permute): what _finite_slice sums for it, in four passes instead of about fourteen (its
    errors are all zero, so only the truth's norm is left); False, and nothing summed, when
    they differ anywhere. level1/13_cat's 268M-element case spent 32 s comparing."""
    if not (np.array_equal(actual, expected) and np.array_equal(t, expected) and np.isfinite(t).all()):
        return False
    ref_sq = float(np.dot(t, t))
    acc.ref_sq += ref_sq
    acc.finite += t.size
    if has_truth:
        acc.eager_ref_sq += ref_sq
        acc.both += t.size
    return True


def _finite_slice(acc: _Sums, expected: np.ndarray, actual: np.ndarray, t: np.ndarray, has_truth: bool, offset: int,
                  name: str, tol: float) -> None:
    """_general_slice where kernel, eager and rounded truth are all finite (the usual case), in
    fewer float64 passes and temporaries: the eager/ulp term of the rule is computed only for
    the elements outside the dtype tolerance, since an element inside it passes whatever that
    term is. `expected` and `actual` in the output dtype, `t` in float64."""
    d = np.subtract(actual, t, dtype=np.float64)          # kernel - truth
    ref_sq = float(np.dot(t, t))
    acc.err_sq += float(np.dot(d, d))
    diff = np.abs(d, out=d)
    scale = np.abs(t)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.divide(diff, scale)
    # A zero truth gives inf where the error is nonzero (unbounded) and NaN where it is zero
    # (no error): fmax skips the NaN.
    max_rel = float(np.fmax.reduce(rel, initial=0.0))
    np.maximum(scale, 1.0, out=scale)
    scale *= tol
    bad = np.flatnonzero(diff > scale)
    ref_err = np.abs(np.subtract(expected[bad], t[bad], dtype=np.float64))
    keep = diff[bad] > np.minimum(C * ref_err, CAP_ULPS * ulp(t[bad], name))
    bad, ref_err = bad[keep], ref_err[keep]
    acc.mismatches += int(bad.size)
    acc.max_abs = max(acc.max_abs, float(diff.max(initial=0.0)))
    acc.max_rel = max(acc.max_rel, max_rel)
    acc.ref_sq += ref_sq
    acc.finite += t.size
    if has_truth:
        de = np.subtract(expected, t, dtype=np.float64)
        acc.eager_err_sq += float(np.dot(de, de))
        acc.eager_ref_sq += ref_sq
        acc.both += t.size
    shown = FIRST_SHOWN - len(acc.first)
    for k, err in zip(bad[:shown], ref_err[:shown]):
        acc.first.append((offset + int(k), np.float64(actual[k]), np.float64(expected[k]), t[k], err))


def _general_slice(acc: _Sums, e: np.ndarray, a: np.ndarray, t: np.ndarray, t_out: np.ndarray, has_truth: bool,
                   offset: int, name: str, tol: float) -> None:
    """One slice of compare_array: the rule element by element, and the sums of its figures."""
    t_nan, a_nan = np.isnan(t_out), np.isnan(a)
    t_inf, a_inf = np.isinf(t_out), np.isinf(a)
    nonfinite_bad = (t_nan != a_nan) | (t_inf != a_inf) | (t_inf & a_inf & (np.sign(t_out) != np.sign(a)))
    finite = np.isfinite(t_out) & np.isfinite(a)

    diff = np.abs(np.subtract(a, t, where=finite, out=np.zeros_like(t)))
    ref_err = np.full_like(t, np.inf)
    np.subtract(e, t, where=finite & np.isfinite(e), out=ref_err)
    ref_err = np.abs(ref_err)
    allowed = np.maximum(tol * np.maximum(1.0, np.abs(t)), np.minimum(C * ref_err, CAP_ULPS * ulp(t, name)))
    rel = np.divide(diff, np.abs(t), where=finite & (t != 0), out=np.zeros_like(t))
    # An element with a zero truth and a nonzero error has an unbounded relative error.
    rel[finite & (t == 0) & (diff > 0)] = np.inf
    bad = (finite & (diff > allowed)) | nonfinite_bad

    acc.mismatches += int(np.count_nonzero(bad))
    acc.nonfinite += int(np.count_nonzero(nonfinite_bad))
    # A NaN or inf where the truth is finite (an output never written holds NaN) is an
    # unbounded error: the figures say so instead of measuring only the finite elements.
    acc.unbounded = acc.unbounded or bool(np.any(nonfinite_bad & np.isfinite(t_out)))
    acc.max_abs = max(acc.max_abs, float(diff.max(initial=0.0)))
    acc.max_rel = max(acc.max_rel, float(rel.max(initial=0.0)))
    tf, af = t[finite], a[finite]
    acc.err_sq += float(np.dot(af - tf, af - tf))
    acc.ref_sq += float(np.dot(tf, tf))
    acc.finite += tf.size
    if has_truth:
        both = finite & np.isfinite(e)
        tb, eb = t[both], e[both]
        acc.eager_err_sq += float(np.dot(eb - tb, eb - tb))
        acc.eager_ref_sq += float(np.dot(tb, tb))
        acc.both += tb.size
    for k in np.flatnonzero(bad)[:FIRST_SHOWN - len(acc.first)]:
        acc.first.append((offset + int(k), a[k], e[k], t[k], ref_err[k]))


def _l2_ratio(err_sq: float, ref_sq: float, n: int) -> float:
    """The relative L2 error from its sums (over n elements): |a - e| / |e|, or |a - e| / sqrt(n)
    when e is all zeros."""
    if n == 0:
        return 0.0
    return math.sqrt(err_sq) / (math.sqrt(ref_sq) if ref_sq else math.sqrt(n))


def _failure_text(shape: tuple, flat: int, a: float, e: float, t: float, ref_err: float) -> str:
    at = [int(i) for i in np.unravel_index(flat, shape)] if shape else []
    return f"{at}: kernel={a:.6g}, eager={e:.6g}, truth={t:.6g} (eager error {ref_err:.3g})"


def unwritten_elements(actual: np.ndarray, expected: np.ndarray) -> int:
    """Elements of a kernel output whose every byte is still 0xFF, the fill of the DSL's
    `empty()` (NaN in float types, -1 or the maximum in integer ones), where the eager
    reference differs: elements no copy from the kernel ever reached."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape or actual.dtype.itemsize == 0 or actual.size == 0:
        return 0
    fill = _all_ones(actual)
    if expected.dtype.itemsize == actual.dtype.itemsize:
        fill &= ~_all_ones(expected)
    return int(np.count_nonzero(fill))


# Per element, "every byte is 0xFF" as one compare of an unsigned word of its width (a
# reduction over the bytes of each element took 23 s on a 536M-element fp16 output).
_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _all_ones(a: np.ndarray) -> np.ndarray:
    flat = np.ascontiguousarray(a).reshape(-1)
    word = _WORDS.get(a.dtype.itemsize)
    if word is not None:
        return flat.view(word) == np.iinfo(word).max
    return np.all(flat.view(np.uint8).reshape(a.size, a.dtype.itemsize) == 0xFF, axis=1)


def _compare_exact(expected: np.ndarray, actual: np.ndarray, common: dict, step: int) -> OutputStats:
    """Integers and bools: compared in slices, and in float64 only where they differ (the
    float64 copies of a whole 141M-element int8 output took 200 s of a 42-case task)."""
    e_all, a_all = expected.reshape(-1), actual.reshape(-1)
    mismatches, max_abs, max_rel, err_sq = 0, 0.0, 0.0, 0.0
    for lo in range(0, e_all.size, CHUNK_ELEMENTS):
        es, acts = e_all[lo:lo + CHUNK_ELEMENTS], a_all[lo:lo + CHUNK_ELEMENTS]
        at = np.flatnonzero(es != acts)
        if not at.size:
            continue
        e, a = es[at].astype(np.float64), acts[at].astype(np.float64)
        diff = np.abs(a - e)
        mismatches += int(np.count_nonzero(diff > step)) if step else int(at.size)
        rel = np.divide(diff, np.abs(e), where=e != 0, out=np.zeros_like(e))
        rel[(e == 0) & (diff > 0)] = np.inf
        max_abs, max_rel = max(max_abs, float(diff.max())), max(max_rel, float(rel.max()))
        err_sq += float(np.dot(diff, diff))
    return OutputStats(**common, mismatches=mismatches, max_abs_error=max_abs, max_rel_error=max_rel,
                       rel_l2_error=_rel_l2(e_all, err_sq), correct=mismatches == 0)


def _rel_l2(e: np.ndarray, err_sq: float) -> float:
    """sqrt(err_sq) over the norm of e (over sqrt(e.size) when e is all zero)."""
    if e.size == 0 or err_sq == 0.0:
        return 0.0
    ref_sq = 0.0
    for lo in range(0, e.size, CHUNK_ELEMENTS):
        chunk = e[lo:lo + CHUNK_ELEMENTS].astype(np.float64)
        ref_sq += float(np.dot(chunk, chunk))
    return _l2_ratio(err_sq, ref_sq, e.size)


def _failure_reason(s: OutputStats) -> str:
    if s.tolerance is None:
        return f"output {s.index}: {s.mismatches} of {s.elements} elements differ ({s.dtype} compare)"
    against = "the float64 truth" if s.truth else "the eager reference (no float64 truth)"
    where = f"; first: {'; '.join(s.first_failures)}" if s.first_failures else ""
    if s.nonfinite_mismatches:
        return (f"output {s.index}: NaN/Inf at {s.nonfinite_mismatches} positions do not match {against}{where}. "
                f"{RULE}")
    if s.mismatches:
        return (f"output {s.index}: {s.mismatches} of {s.elements} elements break the rule against {against} "
                f"(tol {s.tolerance:g}, max abs {s.max_abs_error:.3g}, max rel {s.max_rel_error:.3g}){where}. {RULE}")
    return (f"output {s.index}: relative L2 error {s.rel_l2_error:.3g} against {against} is not under "
            f"{s.rel_l2_limit or s.tolerance:g} (the eager reference's own: {s.reference_rel_l2_error or 0:.3g}). "
            f"{RULE}")
