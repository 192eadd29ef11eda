"""Kernel paths (sage/bench/reference/kernel_paths.py, aicpu.py): which kernels torch_npu
launches for an aten call, on which unit, and what an AI CPU kernel costs."""

import pytest
import torch

from sage.bench.input_size import on_meta
from sage.bench.reference import reference_time
from sage.bench.reference.aicpu import aicpu_kernel_us, fit
from sage.bench.reference.kernel_paths import Unit, path_of
from sage.bench.tasks import load_task, suite_files
from sage.kernels import record_aten
from sage.npu.hardware import load_preset

FIXED_US = load_preset("ascend910b2").launch.device_fixed_us


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


class _Task:
    name, fused_op = "t", None

    def __init__(self, fn):
        self.fn = fn

    def make_model(self):
        return _Fn(self.fn)


def _call(fn, *args):
    """The one kernel-launching aten call of fn(*args), as the recorder sees it."""
    (call,) = record_aten(_Fn(fn), list(args), include_free=False)
    return call


def _kernels(fn, *args) -> list[tuple[str, Unit]]:
    return [(k.name, k.unit) for k in path_of(_call(fn, *args)).kernels]


def test_integer_cumsum_runs_on_the_ai_cpu_and_float_cumsum_on_the_ai_core():
    cumsum = lambda x: torch.cumsum(x, 0)  # noqa: E731
    assert _kernels(cumsum, torch.ones(8, dtype=torch.int64)) == [("CumsumAiCpu", Unit.AICPU)]
    assert _kernels(cumsum, torch.ones(8, dtype=torch.float16)) == [("Cumsum", Unit.AICORE)]
    # int32 in, int64 out (torch's integer promotion): aclnnCumsum casts to int64 first
    assert _kernels(cumsum, torch.ones(8, dtype=torch.int32)) == [("Cast", Unit.AICORE), ("CumsumAiCpu", Unit.AICPU)]
    # an int32 result stays on the AI core (int32 is in the 910B list)
    assert _kernels(lambda x: torch.cumsum(x, 0, dtype=torch.int32),
                    torch.ones(8, dtype=torch.int32)) == [("Cumsum", Unit.AICORE)]


def test_integer_topk_and_sort_run_on_the_ai_cpu():
    x = torch.arange(64, dtype=torch.int32).reshape(4, 16)
    assert _kernels(lambda t: torch.topk(t, 3), x) == [("TopKV2AiCpu", Unit.AICPU)]
    assert _kernels(lambda t: torch.topk(t, 3), x.float()) == [("TopKV2", Unit.AICORE)]
    assert _kernels(lambda t: torch.sort(t), x) == [("SortAiCpu", Unit.AICPU)]
    assert _kernels(lambda t: torch.argsort(t), x.half()) == [("Sort", Unit.AICORE)]


def test_an_op_without_a_row_is_one_ai_core_kernel_by_default():
    path = path_of(_call(torch.add, torch.ones(4), torch.ones(4)))
    assert path.rule == "default" and [k.unit for k in path.kernels] == [Unit.AICORE]
    # a row's op in a dtype its AI-core kernel takes: one kernel, the call's own work
    call = _call(torch.mul, torch.ones(4, dtype=torch.int32), torch.ones(4, dtype=torch.int32))
    (kernel,) = path_of(call).kernels
    assert kernel.unit is Unit.AICORE and kernel.call is call


def test_pow_takes_the_pows_kernel_for_the_exponents_cann_specialises():
    x = torch.rand(8) + 0.5
    assert _kernels(lambda t: t.pow(2), x) == [("Pows", Unit.AICORE)]
    assert _kernels(lambda t: torch.pow(t, -3), x) == [("Pow", Unit.AICORE)]
    assert _kernels(lambda t: torch.pow(t, 6.6), x) == [("Pow", Unit.AICORE)]


def test_logical_ops_cast_every_non_bool_input_first():
    a, b = torch.ones(4, dtype=torch.int32), torch.zeros(4, dtype=torch.float16)
    assert _kernels(torch.logical_and, a, b) == [("Cast", Unit.AICORE)] * 2 + [("LogicalAnd", Unit.AICORE)]
    assert _kernels(torch.logical_or, a > 0, b) == [("Cast", Unit.AICORE), ("LogicalOr", Unit.AICORE)]
    assert _kernels(torch.logical_not, a > 0) == [("LogicalNot", Unit.AICORE)]


def test_the_ai_cpu_fit_is_the_least_squares_line_of_pr_818():
    # By hand over the eight stress rows (n: 1 2 17 19 32 36 96 576; us: 31 30 31 31 31 31 31 32):
    # mean n = 779 / 8 = 97.375, mean us = 31; only n = 2 (-1) and n = 576 (+1) are off the mean, so
    # Sxy = 95.375 + 478.625 = 574; Sxx = sum n^2 - 8 x 97.375^2 = 343967 - 75855.125 = 268111.875;
    # slope = 574 / 268111.875 = 2.14089e-3 us per element; intercept = 31 - slope x 97.375 = 30.79153.
    fixed, per_element = fit()
    assert fixed == pytest.approx(30.79153, abs=1e-4)
    assert per_element == pytest.approx(2.14089e-3, rel=1e-4)
    assert aicpu_kernel_us(576) == pytest.approx(30.79153 + 576 * 2.14089e-3, rel=1e-5)   # 32.0 published


def test_the_per_element_rate_is_not_extrapolated_past_the_measured_sizes():
    # 576 elements is PR 818's largest; beyond it: the fit there (32.0) plus the AI-core time
    at_576 = 30.79153 + 576 * 2.14089e-3
    assert aicpu_kernel_us(1_000_000, aicore_us=7.5) == pytest.approx(at_576 + 7.5, rel=1e-5)
    assert aicpu_kernel_us(577, aicore_us=0.0) == pytest.approx(at_576, rel=1e-5)
    assert aicpu_kernel_us(100, aicore_us=7.5) == pytest.approx(30.79153 + 100 * 2.14089e-3, rel=1e-5)


def test_a_small_int64_cumsum_costs_the_ai_cpu_time_not_the_ai_core_time():
    task = _Task(lambda x: torch.cumsum(x, 0))
    args = [torch.ones(18, dtype=torch.int64)]
    ref = reference_time(task, args)
    # PR 818 publishes kernel durations (kernel_details): 30-32 us for n <= 576; the event-timed
    # device span adds the launch's fixed cost
    assert ref.kernel_us == pytest.approx(31.0, abs=1.0)
    assert ref.device_us == pytest.approx(ref.kernel_us + FIXED_US)
    (row,) = ref.ops
    assert (row.unit, row.kernels, row.path, row.group) == ("aicpu", 1, "cumsum", "aicpu")
    assert reference_time(task, args, kernel_paths=False).kernel_us < 15.0   # the AI-core figure


def test_a_multi_kernel_path_is_one_timeline_step_per_kernel():
    task = _Task(torch.logical_and)
    args = [torch.ones(4096, dtype=torch.int32), torch.ones(4096, dtype=torch.int32)]
    ref = reference_time(task, args)
    (row,) = ref.ops
    assert ref.launches == 3 and row.kernels == 3 and row.unit == "aicore"
    assert [k["name"] for k in row.path_kernels] == ["Cast", "Cast", "LogicalAnd"]
    assert ref.kernel_us == pytest.approx(sum(k["device_us"] for k in row.path_kernels) - 3 * FIXED_US)
    assert reference_time(task, args, kernel_paths=False).launches == 1


@pytest.mark.parametrize("name, cases",
                         [("05_cumsum", [0, 1, 2]), ("01_gelu", None), ("07_sum", None), ("04_abs", None)])
def test_suite_cases_without_an_exception_keep_their_reference_time(name, cases):
    (path,) = [p for p in suite_files() if p.stem == name and p.parent.name == "level1"]
    task = load_task(path, check_inputs=False, input_budget=None)
    sized = task.sized_cases()
    for i in cases if cases is not None else range(len(sized)):
        args = on_meta(sized[i])
        new, old = reference_time(task, args), reference_time(task, args, kernel_paths=False)
        assert (new.end_to_end_us, new.device_us, new.kernel_us, new.launches) == \
            (old.end_to_end_us, old.device_us, old.kernel_us, old.launches)
