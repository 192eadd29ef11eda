"""Success feedback gives every case's speedup (issue 27): a line per case, the lowest first,
capped for a task of many cases, with the geometric mean they make; and a MIX launch's pipes
per core type, which the average over all cores hides."""

from __future__ import annotations

import math

from sage.agent.feedback import CASES_SHOWN, case_speedup_lines, slowest_case_lines, success_feedback
from sage.bench.evaluate import CaseResult, TaskEvaluation, evaluate_kernel
from sage.npu.results import PipeStat, Profile
from sage.npu.timeline import Times
from tests.agent.test_loop_openai import _good_kernel


def _case(index: int, yours_us: float, ref_us: float) -> CaseResult:
    return CaseResult(index=index, inputs=[f"float32[{index + 1}, 64]"], correct=True,
                      times=Times(kernel_us=yours_us, device_us=yours_us, end_to_end_us=yours_us),
                      reference_times=Times(kernel_us=ref_us, device_us=ref_us, end_to_end_us=ref_us),
                      speedup=ref_us / yours_us)


def test_a_two_case_task_lists_both_cases_with_their_geomean(tiny_task):
    evaluation = evaluate_kernel(tiny_task, _good_kernel(tiny_task))
    assert evaluation.status == "correct" and len(evaluation.cases) == 2
    text = success_feedback(evaluation, None, {}).content
    low, high = sorted(evaluation.cases, key=lambda c: c.speedup)
    geomean = math.sqrt(low.speedup * high.speedup)
    assert f"the score is their geometric mean, {geomean:.2f}x" in text
    first = text.index(f"- case {low.index} (")
    second = text.index(f"- case {high.index} (")
    assert first < second          # the lowest speedup first
    for c in (low, high):
        line = next(li for li in text.splitlines() if li.startswith(f"- case {c.index} ("))
        assert line.endswith(f"yours {c.times.end_to_end_us:.1f} us vs torch_npu "
                             f"{c.reference_times.end_to_end_us:.1f} us, {c.speedup:.2f}x")
        assert ", ".join(c.inputs) in line


def test_fifty_cases_show_the_eight_lowest_and_count_the_rest():
    # case i takes 10 + i us against a 20 us reference: speedups 2.0x down to 20/59 = 0.34x
    cases = [_case(i, 10.0 + i, 20.0) for i in range(50)]
    geomean = math.exp(sum(math.log(c.speedup) for c in cases) / len(cases))
    evaluation = TaskEvaluation(task="t", status="correct", executed=True, correct=True, speedup=geomean,
                                cases=cases)
    lines = case_speedup_lines(evaluation)
    assert lines[0].endswith(f"the score is their geometric mean, {geomean:.2f}x):")
    listed = [int(li.split()[2]) for li in lines[1:-1]]
    assert listed == list(range(49, 49 - CASES_SHOWN, -1))        # the slowest cases, lowest speedup first
    assert lines[1] == "- case 49 (float32[50, 64]): yours 59.0 us vs torch_npu 20.0 us, 0.34x"
    assert lines[-1] == f"- {50 - CASES_SHOWN} more cases, {20 / 51:.2f}x to 2.00x"
    assert len(lines) == CASES_SHOWN + 2


def test_a_single_case_adds_no_lines():
    evaluation = TaskEvaluation(task="t", status="correct", executed=True, correct=True, speedup=2.0,
                                cases=[_case(0, 10.0, 20.0)])
    assert case_speedup_lines(evaluation) == []


def _mix_profile() -> Profile:
    # 24 AICs copy at 87 % on MTE2, 48 AIVs at 1.5 %: over all 72 cores (0.87*24 + 0.015*48) / 72 = 30 %
    kernel = 10_000
    aic = {"MTE2": PipeStat(busy_cycles=24 * 8700, utilisation=0.87), "M": PipeStat(busy_cycles=24 * 4000,
                                                                                    utilisation=0.40)}
    aiv = {"MTE2": PipeStat(busy_cycles=48 * 150, utilisation=0.015), "V": PipeStat(busy_cycles=48 * 6000,
                                                                                    utilisation=0.60)}
    mte2 = PipeStat(busy_cycles=24 * 8700 + 48 * 150, utilisation=round((0.87 * 24 + 0.015 * 48) / 72, 4))
    return Profile(cycles=kernel, time_us=20.0, launches=1, device_us=10.0, kernel_us=8.0, blocks=24, cores_used=72,
                   pipes={"MTE2": mte2, "M": aic["M"], "V": aiv["V"]}, bytes={}, bottleneck="MTE2",
                   roofline_bound_us=4.0, roofline_fraction=0.5, instructions=100,
                   cores_by_type={"AIC": 24, "AIV": 48}, pipes_by_type={"AIC": aic, "AIV": aiv})


def test_a_mix_launch_reports_each_core_types_pipes():
    case = CaseResult(index=0, inputs=["float16[1024, 1024]"], correct=True, speedup=1.5, device_speedup=1.2,
                      profile=_mix_profile())
    lines = slowest_case_lines(case, None)
    assert "MTE2 216000 (30%)" in lines[2]               # the average over all cores
    assert lines[-1] == ("Per core type (each against its own cores; the pipe profile above averages them): "
                         "AIC (24 cores): MTE2 87%, M 40%; AIV (48 cores): MTE2 2%, V 60%.")


def test_a_single_core_type_adds_no_line():
    profile = _mix_profile()
    profile.pipes_by_type = {"AIV": profile.pipes_by_type["AIV"]}
    case = CaseResult(index=0, inputs=["float16[8]"], correct=True, speedup=1.0, profile=profile)
    assert not any(li.startswith("Per core type") for li in slowest_case_lines(case, None))
