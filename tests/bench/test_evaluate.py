"""evaluate_kernel end to end: real kernels in the sandboxed simulator against torch references."""

from pathlib import Path

import pytest

from sage.bench.evaluate import evaluate_kernel
from sage.bench.tasks import load_task

FIXTURES = Path(__file__).parents[1] / "fixtures"
KERNELS = FIXTURES / "kernels"
TASKS = FIXTURES / "tasks"


@pytest.fixture(autouse=True)
def _private_reference_cache(monkeypatch, tmp_path_factory):
    # The reference model caches timings on disk; tests keep theirs out of ~/.sage.
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "reference-cache"))


def kernel(name: str) -> str:
    return (KERNELS / name).read_text()


@pytest.fixture(scope="module")
def relu():
    return load_task(TASKS / "relu.py")


def test_correct_kernel_passes_every_case(relu):
    ev = evaluate_kernel(relu, kernel("relu_correct.py"))
    assert ev.status == "correct" and ev.executed and ev.correct and ev.error is None
    assert [c.index for c in ev.cases] == [0, 1, 2]
    assert [c.inputs for c in ev.cases] == [["float32[64, 1024]"], ["float16[8, 301]"], ["float32[4, 2117]"]]
    for case in ev.cases:
        assert case.correct and case.stats[0].mismatches == 0 and case.stats[0].max_abs_error == 0.0
        assert case.cycles > 0 and case.times.end_to_end_us > 0
        assert 0 < case.roofline_fraction <= 1.0
        assert case.profile.pipes["MTE2"].busy_cycles > 0
        if case.reference_times is not None:
            assert case.speedup == pytest.approx(case.reference_times.end_to_end_us / case.times.end_to_end_us)
    assert ev.roofline_fraction == pytest.approx(sum(c.roofline_fraction for c in ev.cases) / 3)
    # where the judging time went: every part measured, together within the evaluation's wall time
    parts = ev.split.model_dump()
    assert all(v > 0 for v in parts.values()) and sum(parts.values()) <= ev.wall_s + 0.01


def test_cases_argument_selects_cases(relu):
    assert [c.index for c in evaluate_kernel(relu, kernel("relu_correct.py"), cases=1).cases] == [0]
    assert [c.index for c in evaluate_kernel(relu, kernel("relu_correct.py"), cases=[2]).cases] == [2]


def test_all_zeros_fails_on_a_normal_reference(relu):
    ev = evaluate_kernel(relu, kernel("zeros.py"), cases=1)
    assert ev.executed and not ev.correct and ev.status == "incorrect"
    assert ev.cases[0].stats[0].mismatches > 0


def test_all_zeros_fails_on_a_tiny_reference_through_rel_l2():
    ev = evaluate_kernel(load_task(TASKS / "tiny_scale.py"), kernel("zeros.py"))
    stats = ev.cases[0].stats[0]
    assert stats.mismatches == 0                       # each element is within atol of 0 ...
    assert stats.rel_l2_error == pytest.approx(1.0)    # ... but the output as a whole is all wrong
    assert not ev.correct and "relative L2" in ev.reason


def test_partial_computation_fails(relu):
    ev = evaluate_kernel(relu, kernel("relu_partial.py"), cases=1)
    assert ev.executed and not ev.correct
    stats = ev.cases[0].stats[0]
    # 64*1024 elements over 48 blocks of 1368: only the first block's range was written.
    assert stats.mismatches == 64 * 1024 - 1368


def test_wrong_output_dtype_is_an_output_spec_error(relu):
    ev = evaluate_kernel(relu, kernel("relu_wrong_dtype.py"))
    assert ev.status == "error" and not ev.executed
    assert ev.error.type == "OutputSpecError"
    assert len(ev.cases) == 1            # evaluation stops at the first kernel error


def test_output_aliasing_an_input_is_refused(relu):
    ev = evaluate_kernel(relu, kernel("relu_alias.py"), cases=1)
    assert ev.status == "error" and ev.error.type == "OutputSpecError"


def test_fp16_row_sum_needs_fp32_accumulation():
    task = load_task(TASKS / "row_sum_fp16.py")
    naive = evaluate_kernel(task, kernel("rowsum_fp16_naive.py"))
    assert naive.executed and not naive.correct, naive.error
    assert naive.cases[0].stats[0].mismatches > 0
    wide = evaluate_kernel(task, kernel("rowsum_fp32_acc.py"))
    assert wide.correct, (wide.error, wide.reason)


def test_model_parameters_reach_the_kernel_as_kwargs():
    task = load_task(FIXTURES / "thirdparty/kernelbench/level2/12_Scale_Bias.py")
    ev = evaluate_kernel(task, kernel("scale_bias.py"))
    assert ev.correct, (ev.error, ev.reason)


def test_sandbox_refusal_is_a_kernel_error(relu):
    ev = evaluate_kernel(relu, "import os\n\ndef forward(x):\n    return x\n", cases=1)
    assert ev.status == "error" and ev.error.type == "SandboxError" and ev.error.line == 1


def test_reference_needing_a_gpu_is_unavailable_not_a_failure():
    task = load_task(FIXTURES / "thirdparty/kernelbench/level1/97_Sync_cuda_forward.py")
    ev = evaluate_kernel(task, kernel("relu_correct.py"))
    assert ev.status == "reference_unavailable" and "CUDA" in ev.reason and ev.cases == []


def test_a_failing_time_model_leaves_correctness_intact(relu, monkeypatch):
    import sage.bench.reference as reference

    def broken(task, args, preset):
        raise NotImplementedError("no vendor model for aten.frobnicate")

    monkeypatch.setattr(reference, "reference_time", broken)
    ev = evaluate_kernel(relu, kernel("relu_correct.py"), cases=1)
    case = ev.cases[0]
    assert ev.correct and case.reference_times is None and case.speedup is None and ev.speedup is None
    assert "NotImplementedError: no vendor model for aten.frobnicate" in case.reference_problem


def test_the_tripwire_takes_the_essential_work_the_time_model_found(relu, monkeypatch):
    # one trace of the reference per case: the time model's essential work (the relu case's
    # 64 x 1024 fp32 input read and output written) is what the tripwire judges...
    import sage.bench.evaluate as evaluate
    import sage.bench.reference as reference

    ref = reference.reference_time(relu, relu.cases()[0], "ascend910b2")
    assert ref.essential is not None and ref.essential.bytes == 2 * 64 * 1024 * 4
    real = evaluate.essential_of
    traced = []
    monkeypatch.setattr(evaluate, "essential_of", lambda *a: traced.append(a) or real(*a))
    assert evaluate_kernel(relu, kernel("relu_correct.py"), cases=1).correct and traced == []
    # ... and without the time model's answer, the forward is traced for it
    monkeypatch.setattr(reference, "reference_time", lambda task, args, preset: None)
    assert evaluate_kernel(relu, kernel("relu_correct.py"), cases=1).correct and len(traced) == 1
