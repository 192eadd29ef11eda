"""Integer floor division by a divisor the kernel holds as a scalar (a [1] tensor, a Python
number): the kernel divides through the divisor's reciprocal, and an exact quotient can land
just past an integer (-18 * (1/3) = -6.0000005 in float32, which floors to -7). The results
are checked against torch on random dividends and divisors of both signs, exact multiples
among them. Values stay within float32's exact integers (the kernel computes in float32)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.agent.compiler.kernel_text import sandbox_outputs

SHAPE = (3, 37)
# (dtype, smallest, largest value drawn); uint8 has no negatives
RANGES = {"int8": (-128, 127), "int16": (-32768, 32767), "int32": (-10 ** 6, 10 ** 6),
          "int64": (-10 ** 6, 10 ** 6), "uint8": (0, 255)}
_COMPILED: dict[str, str] = {}


def _kernel(task_file, dtype: str) -> str:
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.kernels import target_for

    if dtype not in _COMPILED:
        lo, hi = RANGES[dtype]
        task = task_file("a, b", "torch.floor_divide(a, b)",
                         [f"torch.randint({max(lo, -50)}, 50, {SHAPE}, dtype=torch.{dtype}), "
                          f"torch.randint(1, 9, (1,), dtype=torch.{dtype})"])
        _COMPILED[dtype] = compile_cases(trace_cases(task), None, target_for("ascend910b2"), "t").source
    return _COMPILED[dtype]


@pytest.mark.parametrize("dtype", list(RANGES))
def test_the_public_failure_minus_18_by_3(task_file, dtype):
    lo, _ = RANGES[dtype]
    values = np.array([-18, 18, -17, 17, -1, 0, 21, -21] * 40)[:SHAPE[0] * SHAPE[1]]
    a = (np.abs(values) if lo == 0 else values).astype(dtype).reshape(SHAPE)
    for divisor in ([3, 7] if lo == 0 else [3, -3, 7, -7]):
        b = np.array([divisor], dtype=dtype)
        (out,) = sandbox_outputs(_kernel(task_file, dtype), [a, b])
        np.testing.assert_array_equal(out, torch.floor_divide(torch.from_numpy(a), torch.from_numpy(b)).numpy())


@pytest.mark.parametrize("dtype", list(RANGES))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_dividends_and_divisors_agree_with_torch(task_file, dtype, data):
    lo, hi = RANGES[dtype]
    divisor = data.draw(st.integers(lo, hi).filter(lambda v: v != 0), label="divisor")
    n = SHAPE[0] * SHAPE[1]
    drawn = data.draw(st.lists(st.integers(lo, hi), min_size=n // 2, max_size=n // 2), label="dividends")
    # exact multiples of the divisor: where the reciprocal's rounding shows
    multiples = [k * divisor for k in range(-(n - len(drawn)) // 2, n - len(drawn) - (n - len(drawn)) // 2)]
    multiples = [m if lo <= m <= hi else m % (hi + 1) for m in multiples]
    a = np.array(drawn + multiples, dtype=dtype).reshape(SHAPE)
    b = np.array([divisor], dtype=dtype)
    (out,) = sandbox_outputs(_kernel(task_file, dtype), [a, b])
    np.testing.assert_array_equal(out, torch.floor_divide(torch.from_numpy(a), torch.from_numpy(b)).numpy())


def test_a_python_number_divisor_of_either_sign(compile_graph):
    for divisor in (7, -7):
        _, run = compile_graph("a", f"torch.floor_divide(a, {divisor})",
                               "torch.randint(-100, 100, (4, 40), dtype=torch.int32)")
        a = (np.arange(160, dtype=np.int32).reshape(4, 40) - 80) * 7 // 3
        (out,) = run(a)
        np.testing.assert_array_equal(out, torch.floor_divide(torch.from_numpy(a), divisor).numpy())
