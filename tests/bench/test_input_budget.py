"""Inputs are sized before they are made: a case over the input budget is unsupported with its
size, never allocated, and the run goes on."""

import resource

import torch

from sage.bench.evaluate import evaluate_kernel
from sage.bench.input_size import GB, FactoryRouter, InputsTooLarge, case_bytes, sizes_in_child
from sage.bench.tasks import load_task

# MultiKernelBench's reference/activation files ask for 4096 x 393216 float32 (6.4 GB) in one tensor.
HUGE = '''
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.rand(4096, 393216)]
'''
# Reads a large tensor's value while making its inputs: it cannot be sized on the meta device.
READS_VALUES = '''
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    x = torch.rand(SIZE)
    assert x.sum().item() > 0
    return [x]
'''
KERNEL = "def forward(x):\n    return x\n"


def _rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20)


def test_a_case_over_the_budget_is_unsupported_with_its_size_and_never_made(tmp_path):
    path = tmp_path / "huge_relu.py"
    path.write_text(HUGE)
    before = _rss_gb()
    task = load_task(path, input_budget=GB)            # check_inputs: the case is "made" here
    (case,) = task.cases()
    assert case[0].is_meta and case_bytes(case) == 4096 * 393216 * 4
    # 1.6 G elements: more than a simulated run takes, whatever the machine (said first)
    assert "1,610,612,736 elements" in task.case_support(case)
    evaluation = evaluate_kernel(task, KERNEL)
    assert evaluation.status == "unsupported" and "1,610,612,736 elements" in evaluation.reason
    assert _rss_gb() - before < 1.0                    # nothing near 6 GB was ever allocated
    # a case a simulated run could take, but over this machine's budget: its size in GB
    path.write_text(HUGE.replace("4096, 393216", "4096, 16384"))          # 256 MiB of float32
    task = load_task(path, input_budget=GB // 8)
    (case,) = task.cases()
    assert case[0].is_meta and task.case_support(case) == (
        "its inputs take 0.25 GB, over the input budget of 0.12 GB (--max-input-gb): not made")


def test_within_the_budget_the_inputs_are_made_as_always(tmp_path):
    path = tmp_path / "small_relu.py"
    path.write_text(HUGE.replace("4096, 393216", "64, 128"))
    made = load_task(path, input_budget=GB).cases()
    plain = load_task(path, input_budget=None).cases()
    assert not made[0][0].is_meta and torch.equal(made[0][0], plain[0][0])   # same seed, same values


def test_the_router_makes_small_tensors_and_sizes_large_ones():
    with FactoryRouter(0):
        small, large = torch.ones(4), torch.randn(1024, 1024)
        scale = torch.empty(1).uniform_(1, 2).item()        # task code reading a small value works
    assert not small.is_meta and large.is_meta and 1 <= scale <= 2


def test_task_code_that_reads_large_values_is_sized_in_a_capped_child(tmp_path):
    path = tmp_path / "reads_values.py"
    path.write_text(READS_VALUES.replace("SIZE", "64 * 1024 * 1024"))     # 256 MB of float32
    kind, answer = sizes_in_child(str(path), seed=0, cap_bytes=GB)
    assert kind == "sizes" and answer == [256 << 20]
    kind, answer = sizes_in_child(str(path), seed=0, cap_bytes=GB // 8)
    assert kind == "over" and "needs more than 0.12 GB" in answer
    task = load_task(path, check_inputs=False, input_budget=GB // 8)
    try:
        task.cases()
        raise AssertionError("made over the budget")
    except InputsTooLarge as exc:
        assert "needs more than" in exc.reason


# MultiKernelBench's arch/shallow_wide_mlp: its weights, not its inputs, are what is large.
WIDE = '''
import torch


class Model(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.layer = torch.nn.Linear(width, width)

    def forward(self, x):
        return self.layer(x)


def get_inputs():
    return [torch.rand(2, 16384)]


def get_init_inputs():
    return [16384]
'''


def test_a_model_whose_weights_are_over_the_budget_is_never_built(tmp_path):
    path = tmp_path / "wide_mlp.py"
    path.write_text(WIDE)                               # 16384^2 float32 weights: 1 GiB
    try:
        load_task(path, input_budget=GB // 4)
        raise AssertionError("built over the budget")
    except InputsTooLarge as exc:
        assert exc.reason.startswith("the Model's parameters and buffers take 1.00 GB, over the input budget")
    task = load_task(path, check_inputs=False, input_budget=GB // 4)
    evaluation = evaluate_kernel(task, KERNEL)
    assert evaluation.status == "unsupported" and "parameters and buffers take 1.00 GB" in evaluation.reason
