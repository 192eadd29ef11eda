"""Comparing a kernel's outputs with the reference's (DESIGN §4).

Rules, per output:
- count, shape and dtype must match the reference;
- integer and bool outputs must be equal element for element;
- floating outputs: NaN positions must match, ±Inf positions and signs must match; a
  finite element fails only when it breaks BOTH the absolute and the relative tolerance of
  its dtype (|a - e| > tol and |a - e| > tol·|e|); and the relative L2 error of the whole
  output, ‖a − e‖₂ / ‖e‖₂ over the finite positions, must stay under the tolerance too, so
  an all-zero output cannot pass on a reference whose values are all tiny. When the
  reference is all zeros the relative L2 is undefined; the root-mean-square error is used
  instead (a per-element absolute scale, consistent with the element rule).
All arithmetic is in float64 so the check itself adds no rounding.

One documented exception (docs/evaluation.md): quantised integer codes of `quant` tasks may
differ by one step (`int_step=1`). A code is round(x / scale); when x / scale lands within
float rounding of a .5 boundary, a correct fp32 kernel and the reference legitimately pick
neighbouring codes (measured: ~0.7 codes per million), and the vendor's own tests accept ±1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

TOLERANCES: dict[str, float] = {"float32": 1e-4, "float16": 1e-3, "bfloat16": 8e-3}
# Outputs in a float type without an entry (float64) are held to the tightest tolerance.
_DEFAULT_FLOAT_TOL = 1e-4


class OutputStats(BaseModel):
    # An error against a zero reference has an infinite relative error: written to JSON
    # as the string "Infinity" (strict JSON has no infinity), read back as a float.
    model_config = ConfigDict(ser_json_inf_nan="strings")

    index: int
    shape: list[int]
    dtype: str
    tolerance: float | None          # None: compared exactly
    elements: int
    mismatches: int                  # elements outside tolerance (or unequal, or NaN/Inf misplaced)
    max_abs_error: float
    max_rel_error: float
    rel_l2_error: float
    nonfinite_mismatches: int = 0
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
                    int_step: int = 0) -> Comparison:
    """`int_step`: how far integer codes may be off (0 = exact; 1 for quantised outputs)."""
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
        s = compare_array(e, a, index=i, int_step=int_step)
        stats.append(s)
        if not s.correct and reason is None:
            reason = _failure_reason(s)
    return Comparison(correct=reason is None, reason=reason, outputs=stats)


def compare_array(expected: np.ndarray, actual: np.ndarray, *, index: int = 0, int_step: int = 0) -> OutputStats:
    tol = tolerance_for(expected.dtype)
    common = dict(index=index, shape=list(expected.shape), dtype=dtype_name(expected.dtype),
                  tolerance=tol, elements=int(expected.size))
    if tol is None:
        step = int_step if np.issubdtype(expected.dtype, np.integer) else 0
        return _compare_exact(expected, actual, common, step)
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)

    e_nan, a_nan = np.isnan(e), np.isnan(a)
    e_inf, a_inf = np.isinf(e), np.isinf(a)
    nonfinite_bad = (e_nan != a_nan) | (e_inf != a_inf) | (e_inf & a_inf & (np.sign(e) != np.sign(a)))
    finite = np.isfinite(e) & np.isfinite(a)

    diff = np.abs(np.subtract(a, e, where=finite, out=np.zeros_like(e)))
    rel = np.divide(diff, np.abs(e), where=finite & (e != 0), out=np.zeros_like(e))
    # An element with a zero reference and a nonzero error has an unbounded relative error.
    rel[finite & (e == 0) & (diff > 0)] = np.inf
    element_bad = finite & (diff > tol) & (diff > tol * np.abs(e))

    mismatches = int(np.count_nonzero(element_bad | nonfinite_bad))
    rel_l2 = _rel_l2(e[finite], a[finite])
    correct = mismatches == 0 and rel_l2 < tol
    return OutputStats(**common, mismatches=mismatches,
                       max_abs_error=float(diff.max(initial=0.0)),
                       max_rel_error=float(rel.max(initial=0.0)),
                       rel_l2_error=rel_l2,
                       nonfinite_mismatches=int(np.count_nonzero(nonfinite_bad)),
                       correct=correct)


def _compare_exact(expected: np.ndarray, actual: np.ndarray, common: dict, step: int) -> OutputStats:
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    diff = np.abs(a - e)
    mismatches = int(np.count_nonzero(diff > step)) if step else int(np.count_nonzero(expected != actual))
    rel = np.divide(diff, np.abs(e), where=e != 0, out=np.zeros_like(e))
    rel[(e == 0) & (diff > 0)] = np.inf
    return OutputStats(**common, mismatches=mismatches,
                       max_abs_error=float(diff.max(initial=0.0)),
                       max_rel_error=float(rel.max(initial=0.0)),
                       rel_l2_error=_rel_l2(e, a),
                       correct=mismatches == 0)


def _rel_l2(e: np.ndarray, a: np.ndarray) -> float:
    if e.size == 0:
        return 0.0
    err = float(np.linalg.norm(a - e))
    ref = float(np.linalg.norm(e))
    if ref == 0.0:
        return err / math.sqrt(e.size)
    return err / ref


def _failure_reason(s: OutputStats) -> str:
    if s.tolerance is None:
        return f"output {s.index}: {s.mismatches} of {s.elements} elements differ ({s.dtype} compare)"
    if s.nonfinite_mismatches:
        return f"output {s.index}: NaN/Inf at {s.nonfinite_mismatches} positions do not match the reference"
    if s.mismatches:
        return (f"output {s.index}: {s.mismatches} of {s.elements} elements outside tolerance {s.tolerance:g} "
                f"(max abs {s.max_abs_error:.3g}, max rel {s.max_rel_error:.3g})")
    return f"output {s.index}: relative L2 error {s.rel_l2_error:.3g} is not under tolerance {s.tolerance:g}"
