"""Edge cases through the evaluator: rank 0, zero-size, 8-D and int8 cases of MultiKernelBench-format
task files; fp64, complex and oversized cases reported unsupported per case; a reference that
fails on one case; kernels that never launch or never write their output."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from sage.bench.case_support import MAX_CASE_ELEMENTS
from sage.bench.correctness import unwritten_elements
from tests.bench.copy_kernel import COPY_KERNEL
from sage.bench.evaluate import SKIP_STATUSES, describe_inputs, evaluate_kernel
from sage.bench.reference_run import measure_reference
from sage.bench.tasks import load_task

FIXTURES = Path(__file__).parents[1] / "fixtures"
MKB0 = FIXTURES / "mkb_tasks/npukernelbench_level0"
MKB_KERNELS = FIXTURES / "mkb_kernels/level0"


@pytest.fixture(autouse=True)
def _private_reference_cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "reference-cache"))


def _kernel(path: Path) -> str:
    return path.read_text()


def test_rank0_zero_size_and_8d_float_cases_are_all_judged():
    task = load_task(MKB0 / "2_leaky_relu.py")
    ev = evaluate_kernel(task, _kernel(MKB_KERNELS / "2_leaky_relu.py"))
    assert ev.status == "correct", ev.reason or ev.error
    assert [c.inputs[0] for c in ev.cases] == ["float16[]", "float32[0, 301]", "bfloat16[2, 2, 1, 3, 1, 2, 4, 37]",
                                               "float32[64, 2117]"]
    rank0, empty, eight_d, plain = ev.cases
    assert rank0.stats[0].shape == [] and rank0.stats[0].elements == 1      # rank 0 survived the sandbox
    assert eight_d.stats[0].shape == [2, 2, 1, 3, 1, 2, 4, 37]
    # The empty output is correct on shape and dtype, needs no launch, and has no time.
    assert empty.correct and empty.empty and empty.stats[0].elements == 0
    assert empty.times is None and empty.speedup is None
    # ... so it leaves the geometric mean, which is over the three timed cases.
    timed = [rank0.speedup, eight_d.speedup, plain.speedup]
    assert all(s is not None and s > 0 for s in timed)
    assert ev.speedup == pytest.approx(math.exp(sum(map(math.log, timed)) / 3))


def test_int8_cases_pass_and_the_fp64_case_is_unsupported_not_failed():
    task = load_task(MKB0 / "5_clamp.py")
    ev = evaluate_kernel(task, _kernel(MKB_KERNELS / "5_clamp.py"))
    assert ev.status == "correct" and ev.correct, ev.reason or ev.error
    judged = [c for c in ev.cases if c.unsupported is None]
    assert [c.inputs[0] for c in judged] == ["int8[]", "int8[4, 0, 3]", "int8[2, 1, 3, 2, 1, 2, 5, 3]",
                                             "int8[64, 300]", "float16[8, 301]"]
    assert all(c.correct for c in judged)
    fp64 = ev.cases[5]
    assert fp64.unsupported == "argument 0 (float64[4, 5]): the 910B vector unit has no fp64 instructions"
    assert not fp64.correct and fp64.stats == [] and fp64.times is None
    assert ev.speedup is not None                 # the unsupported and empty cases left the mean


def test_a_task_with_only_unsupported_cases_is_skipped_with_the_reason():
    task = load_task(MKB0 / "3_not_equal_scalar.py")
    ev = evaluate_kernel(task, "def forward(x, other):\n    raise AssertionError('never run')\n", cases=[1, 2, 3])
    assert ev.status == "unsupported" and ev.status in SKIP_STATUSES and not ev.executed
    assert ev.reason == "argument 0 (float64[4, 5]): the 910B vector unit has no fp64 instructions"
    assert [c.unsupported.split(":")[0] for c in ev.cases] == ["argument 0 (float64[4, 5])",
                                                              "argument 1 ((2+0j))", "argument 0 (complex64[3, 3])"]


def test_a_reference_that_fails_on_one_case_costs_that_case_only():
    task = load_task(FIXTURES / "edge_tasks/relu_no_cpu_half.py")
    ev = evaluate_kernel(task, _kernel(FIXTURES / "kernels/relu_correct.py"))
    assert ev.status == "correct", ev.reason or ev.error
    failed = ev.cases[1]
    assert failed.reference_error.startswith("case 1 (float16[8, 64]): reference forward raised NotImplementedError")
    assert [c.correct for c in ev.cases] == [True, False, True]
    ref = measure_reference(task, "ascend910b2", None)
    assert ref.status == "reference_ok" and ref.cases[1].reference_error.startswith("case 1 (float16[8, 64])")
    assert ref.total_us == pytest.approx(ref.cases[0].total_us + ref.cases[2].total_us)


def test_a_case_too_large_to_simulate_is_unsupported_and_never_allocated(tmp_path):
    # The public NPUKernelBench has a case of 2.83 G elements; made as data it would need 11 GB.
    (tmp_path / "huge.py").write_text("import torch\n\nclass Model(torch.nn.Module):\n"
                                      "    def forward(self, x):\n        return torch.neg(x)\n")
    shapes = [[4, 8], [2, 1415577600]]
    (tmp_path / "huge.json").write_text("".join(json.dumps({"inputs": [
        {"name": "x", "type": "tensor", "dtype": "float32", "shape": s}]}) + "\n" for s in shapes))
    task = load_task(tmp_path / "huge.py")
    small, huge = task.cases()
    assert huge[0].is_meta and huge[0].numel() == 2 * 1415577600 > MAX_CASE_ELEMENTS
    assert task.case_support(small) is None
    assert task.case_support(huge) == (f"2,831,155,200 elements in its tensors (float32[2, 1415577600]): more than "
                                       f"the {MAX_CASE_ELEMENTS:,} a simulated run can take")
    ref = measure_reference(task, "ascend910b2", None)
    assert ref.status == "reference_ok" and ref.cases[1].unsupported and ref.cases[0].total_us > 0


def test_a_kernel_error_names_the_case_and_its_shapes():
    task = load_task(MKB0 / "2_leaky_relu.py")
    # The plain ReLU kernel divides by its block length, which is 0 for the zero-size case.
    source = _kernel(FIXTURES / "kernels/relu_correct.py").replace("def forward(x):", "def forward(x, slope):")
    ev = evaluate_kernel(task, source, cases=[1])
    assert ev.status == "error"
    assert ev.error.message.startswith("case 1 (float32[0, 301], 0.2): ZeroDivisionError")


def test_a_kernel_never_launched_is_said_and_has_no_speed():
    task = load_task(FIXTURES / "tasks/relu.py")
    ev = evaluate_kernel(task, _kernel(FIXTURES / "kernels/relu_never_launched.py"), cases=[1])
    case = ev.cases[0]
    assert ev.status == "incorrect" and not case.correct
    assert case.reason.startswith("case 1 (float16[8, 301]): the kernel was never launched")
    assert "NaN/Inf" not in case.reason
    assert (case.speedup, case.device_speedup, case.roofline_fraction, ev.speedup, ev.roofline_fraction) == \
        (None,) * 5


def test_an_output_partly_never_written_is_said_with_the_count():
    task = load_task(FIXTURES / "tasks/relu.py")
    ev = evaluate_kernel(task, _kernel(FIXTURES / "kernels/relu_partial.py"), cases=[0])
    case = ev.cases[0]
    assert ev.status == "incorrect"
    # relu_partial computes only block 0's range: 64 * 1024 elements over 48 blocks of 1368 (32-byte aligned).
    assert case.reason == ("case 0 (float32[64, 1024]): output 0 (float32[64, 1024]) was never written: "
                           f"{64 * 1024 - 1368} of {64 * 1024} elements still hold the 0xFF fill of empty() "
                           "(no copy from a kernel reached them)")
    assert case.speedup is None and case.roofline_fraction is None and case.times.end_to_end_us > 0


def test_unwritten_elements_counts_only_fill_bytes_the_reference_does_not_have():
    fill = np.frombuffer(b"\xff\xff\xff\xff", dtype=np.float32)[0]
    out = np.array([1.0, fill, 2.0, fill], dtype=np.float32)
    assert unwritten_elements(out, np.array([1.0, 5.0, 2.0, 6.0], dtype=np.float32)) == 2
    # -1 is the fill of int8 and a legitimate value: where the reference is -1 too it is not counted.
    ints = np.array([-1, -1, 3], dtype=np.int8)
    assert unwritten_elements(ints, np.array([-1, 4, 3], dtype=np.int8)) == 1
    assert unwritten_elements(np.zeros((0, 3), np.float16), np.zeros((0, 3), np.float16)) == 0


def test_describe_inputs_names_every_kind_of_argument():
    case = [torch.zeros(2, 0, dtype=torch.int8), torch.tensor(1.5), 0.5, None, [torch.ones(3), torch.ones(2, 2)],
            (2117,), "mean"]
    assert describe_inputs(case) == ["int8[2, 0]", "float32[]", "0.5", "None", "[float32[3], float32[2, 2]]",
                                      "(2117,)", "'mean'"]


VIEWS_ONLY_TASK = '''
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x.view(-1)


def get_init_inputs():
    return []


def get_input_groups():
    return [[torch.randn(8, 64)], [torch.randn(4, 32)]]
'''

def test_a_views_only_reference_is_judged_but_not_timed(tmp_path):
    """torch.split-like references dispatch no kernel: the model gives them no time, so a correct
    kernel is correct with no speedup (not a speedup of 0), and each case says why."""
    path = tmp_path / "view_flat.py"
    path.write_text(VIEWS_ONLY_TASK)
    ev = evaluate_kernel(load_task(path), COPY_KERNEL)
    assert ev.status == "correct" and ev.correct, ev.reason or ev.error
    assert ev.speedup is None and ev.device_speedup is None
    for case in ev.cases:
        assert case.correct and case.speedup is None and case.times is not None
        assert "dispatches no kernel" in case.reference_problem
