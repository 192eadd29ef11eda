"""A reference that only moves elements has its eager output as its float64 truth
(sage/bench/copy_only.py): each op of the table is checked here against the float64 run the
evaluation would otherwise make, and the evaluation is shown to skip that run for such a
reference and to make it for every other."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sage.bench import evaluate
from sage.bench.copy_only import copies_only
from sage.bench.evaluate import evaluate_kernel, reference_outputs, truth_outputs
from sage.bench.tasks import load_task
from tests.bench.copy_kernel import COPY_KERNEL


class _Forward(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


_IDX = torch.tensor([2, 0, 3, 3])
MOVES = {
    "permute": lambda x: x.permute(2, 0, 1).contiguous(),
    "repeat_interleave": lambda x: torch.repeat_interleave(x, 2, dim=1),
    "repeat_interleave by a tensor": lambda x: torch.repeat_interleave(x, torch.tensor([1, 2, 0, 3]), dim=0),
    "cat and stack": lambda x: (torch.cat([x, x.flip(1)], 1), torch.stack([x, x])),
    "split and chunk": lambda x: torch.split(x, 2, 1) + x.chunk(3, 2),
    "repeat and expand": lambda x: (x.repeat(2, 1, 3), x[:, :1].expand(4, 6, 8).contiguous()),
    "gather and index": lambda x: (torch.gather(x, 2, torch.tensor([[[1, 7]]]).expand(4, 6, 2)), x[_IDX],
                                   x.index_select(1, _IDX), torch.take_along_dim(x, _IDX.view(1, 4, 1), 1)),
    "pad with zero, one half, reflect and replicate": lambda x: (
        F.pad(x, (1, 2)), F.pad(x, (1, 1, 2, 0), value=0.5), F.pad(x, (2, 2), mode="reflect"),
        F.pad(x, (1, 1, 1, 1), mode="replicate"), F.pad(x, (1, 1, 1, 1), mode="circular")),
    "roll, narrow, unfold, transpose": lambda x: (torch.roll(x, 1, 0), x.narrow(1, 1, 2).clone(),
                                                  x.unfold(2, 2, 2).contiguous(), x.transpose(0, 1).reshape(-1)),
    "masked_fill with minus one": lambda x: x.masked_fill(x > 0, -1.0),
}
ARITHMETIC = {
    "a product": lambda x: x * 2,
    "a sum": lambda x: x.sum(1),
    "a narrowing cast": lambda x: x.float().half() if x.dtype == torch.float32 else x.float() * 1.001,
    "a fill value the dtype rounds": lambda x: F.pad(x, (1, 1), value=0.1),
    "an accumulating index_put": lambda x: x.index_put((_IDX,), torch.ones(4, 6, 8, dtype=x.dtype), accumulate=True),
}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("name", list(MOVES))
def test_every_op_of_a_copy_only_reference_gives_the_float64_truth_exactly(name, dtype):
    model = _Forward(MOVES[name])
    case = [(torch.randn(4, 6, 8, generator=torch.Generator().manual_seed(3)) * 100).to(dtype)]
    ops: set[str] = set()
    expected = reference_outputs(model, case, ops)
    assert copies_only(ops), sorted(ops)
    truth = truth_outputs(model, case, len(expected))
    assert truth is not None and len(truth) == len(expected)
    for e, t in zip(expected, truth):
        assert np.array_equal(np.asarray(e, dtype=np.float64), t)


@pytest.mark.parametrize("name", list(ARITHMETIC))
def test_a_reference_that_computes_keeps_its_float64_run(name):
    model = _Forward(ARITHMETIC[name])
    ops: set[str] = set()
    reference_outputs(model, [torch.randn(4, 6, 8).half()], ops)
    assert not copies_only(ops), sorted(ops)


def test_an_inexact_fill_value_is_why_the_run_is_kept():
    # fp16 holds 0.1 as 0.0999755859375: the truth's pad is 0.1, so eager is not the truth
    model, case = _Forward(ARITHMETIC["a fill value the dtype rounds"]), [torch.randn(2, 3).half()]
    (eager,), (truth,) = reference_outputs(model, case), truth_outputs(model, case, 1)
    assert truth[0, 0] == 0.1 and float(eager[0, 0]) != 0.1


MOVE_TASK = '''
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return {body}
def get_init_inputs():
    return []
def get_input_groups():
    return [[torch.randn(16, 32)], [torch.randn(8, 32)]]
'''

@pytest.mark.parametrize("body, runs", [("x.clone().view(-1)", 0), ("(x * 1.0).view(-1)", 2)])
def test_the_evaluation_runs_the_float64_reference_only_where_it_can_differ(tmp_path, monkeypatch, body, runs):
    path = tmp_path / "t.py"
    path.write_text(MOVE_TASK.format(body=body))
    calls = []
    real = evaluate.truth_outputs
    monkeypatch.setattr(evaluate, "truth_outputs", lambda *a: calls.append(1) or real(*a))
    ev = evaluate_kernel(load_task(path), COPY_KERNEL)
    assert ev.correct, ev.reason or ev.error
    assert len(calls) == runs and all(s.truth for case in ev.cases for s in case.stats)


def test_a_reference_that_computes_with_numpy_keeps_its_float64_run():
    # public level1/5_cumsum: np.cumsum of x.numpy() dispatches no aten op at all; taken for a
    # copy, its serial fp16 sums stood in for the truth and failed an exact fp32 kernel
    import numpy

    def host_cumsum(x):
        return torch.from_numpy(numpy.cumsum(x.cpu().numpy(), axis=0, dtype=numpy.float16)).to(x.device)

    ops: set[str] = set()
    reference_outputs(_Forward(host_cumsum), [torch.rand(64, 8).half()], ops)
    assert not copies_only(ops) and "host: numpy" in ops
    assert torch.Tensor.numpy is not None and torch.from_numpy(numpy.zeros(2)).shape == (2,)   # put back
