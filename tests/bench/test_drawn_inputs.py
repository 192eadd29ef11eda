"""References that draw random tensors in forward: the draws become the case's last argument
(sage/bench/drawn_inputs.py), replayed by the reference and visible to a trace as inputs."""

from __future__ import annotations

import textwrap

import pytest
import torch
import torch.nn.functional as F

from sage.bench.drawn_inputs import PURE_DRAWS, DrawMismatch, DrawsAsInputs
from sage.bench.tasks import load_task
from sage.kernels import trace_graph

CONV = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, x, cout, k, bias=True):
            return nn.Conv2d(x.shape[1], cout, k, padding=1, bias=bias)(x)

    def get_input_groups():
        return [[torch.randn(1, 3, 8, 8), 4, 3, True], [torch.randn(2, 3, 6, 6), 4, 3, True],
                [torch.randn(1, 2, 5, 5), 3, 3, False]]
"""

NOISE = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, x):
            return x * 2 + torch.randn_like(x)

    def get_inputs():
        return [torch.randn(4, 5)]
"""

PLAIN = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, x):
            return x * 2

    def get_inputs():
        return [torch.randn(4, 5)]
"""


def _task(tmp_path, name: str, source: str):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return load_task(path)


def test_every_replayed_op_is_one_torch_tags_as_seeded():
    tagged = set()
    for name in PURE_DRAWS:
        packet = getattr(torch.ops.aten, name)
        if any(torch.Tag.nondeterministic_seeded in getattr(packet, ov).tags for ov in packet.overloads()):
            tagged.add(name)
    assert tagged == PURE_DRAWS


def test_a_module_built_in_forward_gets_its_weights_from_the_case(tmp_path):
    task = _task(tmp_path, "conv", CONV)
    assert task.draws and "extra trailing argument" in task.description
    cases = task.cases()
    assert [[tuple(d.shape) for d in c[-1]] for c in cases] == [[(4, 3, 3, 3), (4,)], [(4, 3, 3, 3), (4,)], [(3, 2, 3, 3)]]
    model = task.make_model()
    for case in cases:
        x, *_, bias, draws = case
        want = F.conv2d(x, draws[0], draws[1] if bias else None, padding=1)
        with torch.no_grad():
            assert torch.equal(model(*case), want)
            assert torch.equal(model(*case), want)          # the same weights on every call
    # Each case draws under its own seed: same-shaped cases get other weights; a reload the same.
    assert not torch.equal(cases[0][-1][0], cases[1][-1][0])
    again = _task(tmp_path, "conv", CONV).cases()
    assert all(torch.equal(a, b) for c, d in zip(cases, again) for a, b in zip(c[-1], d[-1]))


def test_a_trace_sees_the_draws_as_inputs_and_captures_nothing(tmp_path):
    task = _task(tmp_path, "conv", CONV)
    case = task.cases()[0]
    graph = trace_graph(task.make_model(), case)
    assert graph.captured == {}
    conv = next(n for n in graph.nodes if n.call.name == "convolution")
    positions = {vid: pos for vid, pos in graph.inputs.items()}
    assert [positions.get(v) for v in conv.args] == [0, 4, 5]   # x, then the two draws (list spliced)
    assert not any(n.call.name in PURE_DRAWS or n.call.name == "copy_" for n in graph.nodes)


def test_an_out_of_place_draw_is_replayed(tmp_path):
    task = _task(tmp_path, "noise", NOISE)
    assert task.draws
    x, draws = task.first_case()
    assert torch.equal(task.make_model()(x, draws), x * 2 + draws[0])


def test_a_forward_that_draws_nothing_is_left_as_it_is(tmp_path):
    task = _task(tmp_path, "plain", PLAIN)
    assert not task.draws
    assert not isinstance(task.make_model(), DrawsAsInputs)
    assert len(task.first_case()) == 1


def test_a_draw_of_another_shape_is_refused(tmp_path):
    task = _task(tmp_path, "conv", CONV)
    x, cout, k, bias, draws = task.cases()[0]
    with pytest.raises(DrawMismatch, match=r"draw 0 of the forward is torch.float32\[4, 3, 3, 3\]"):
        task.make_model()(x, cout, k, bias, [torch.zeros(4, 3, 2, 2), draws[1]])
    with pytest.raises(DrawMismatch, match="drew 1 tensors, the case holds 2"):
        task.make_model()(x, cout, k, False, draws)
