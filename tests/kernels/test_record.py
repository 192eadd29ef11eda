"""One torch-dispatch recorder: the calls the reference model times and the dataflow graph
the offline compiler reads come from the same recording."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from sage.kernels import record_forward, trace_graph
from sage.kernels.record import TooManyLaunches


class AddThenSoftmax(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.randn(6))

    def forward(self, x):
        y = x + self.bias
        return torch.softmax(y.view(2, 2, 6), -1)


def test_graph_and_calls_are_one_recording():
    x = torch.randn(4, 6)
    model = AddThenSoftmax()
    calls, outputs = record_forward(model, [x])
    graph = trace_graph(model, [x])
    assert [n.call for n in graph.nodes] == calls
    assert [c.name for c in calls if not c.free] == ["add", "_softmax"]
    assert [list(o.shape) for o in outputs] == [[2, 2, 6]]
    add = calls[0]
    assert [t.origin for t in add.inputs] == ["arg:0", "param:bias"]


def test_dataflow_links_each_value_to_its_producer():
    x = torch.randn(4, 6)
    graph = trace_graph(AddThenSoftmax(), [x])
    add, view, softmax = graph.nodes
    (x_id,) = graph.inputs
    (bias_id,) = graph.params
    assert graph.params[bias_id] == "bias" and graph.inputs[x_id] == 0
    assert add.args == [x_id, bias_id]
    assert view.args == add.outs and softmax.args == view.outs
    assert graph.outputs == softmax.outs and graph.producer[graph.outputs[0]] is softmax
    assert view.call.free and graph.shapes[view.outs[0]] == (2, 2, 6)


class InPlace(torch.nn.Module):
    def forward(self, t):
        s = t.sum().reshape(1)
        s.add_(1.0)
        return t * s


def test_an_in_place_op_shows_what_it_read():
    calls, _ = record_forward(InPlace(), [torch.ones(3, 3)])
    add = next(c for c in calls if c.name == "add_")
    assert add.inputs[0].value == 9.0 and add.outputs[0].value == 10.0


def test_recording_does_not_import_dynamo():
    # A dispatch mode's calls are wrapped in dynamo's disable() unless the mode opts out, and
    # the first wrapped call imports torch._dynamo (over a second of CPU in every bench worker).
    code = ("import sys, torch\n"
            "from sage.kernels import record_forward\n"
            "calls, _ = record_forward(torch.nn.Sigmoid(), [torch.randn(4, 4)])\n"
            "assert [c.name for c in calls if not c.free] == ['sigmoid'], calls\n"
            "print('torch._dynamo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert out.stdout.strip() == "False"


class ThreeLaunches(torch.nn.Module):
    def forward(self, x):
        return torch.exp(torch.relu(x).view(-1)) + 1      # the view is free: launches relu, exp, add


def test_max_launches_stops_the_forward_at_the_launch_past_it():
    model = ThreeLaunches()
    calls, _ = record_forward(model, [torch.randn(4, 4)], max_launches=3)
    assert [c.name for c in calls if not c.free] == ["relu", "exp", "add"]
    with pytest.raises(TooManyLaunches):
        record_forward(model, [torch.randn(4, 4)], max_launches=1)


class SwallowsErrors(torch.nn.Module):
    def forward(self, x):
        try:
            y = torch.relu(x) + 1
        except Exception:          # noqa: BLE001 - a reference that hides its own failures
            y = x
        return y * 2


def test_max_launches_holds_when_the_forward_catches_the_stop():
    with pytest.raises(TooManyLaunches):
        record_forward(SwallowsErrors(), [torch.randn(4, 4)], max_launches=1)


def test_equal_operand_metadata_is_one_object_and_a_negative_zero_stays_negative():
    class Twice(torch.nn.Module):
        def forward(self, x, pos):
            zero, negative_zero = pos * 1.0, -pos      # 0.0 first: a -0.0 must not be taken for it
            return (x + zero) * negative_zero + x

    graph = trace_graph(Twice(), [torch.randn(4, 3), torch.tensor(0.0)])
    calls = [n.call for n in graph.nodes]
    assert [c.name for c in calls] == ["mul", "neg", "add", "mul", "add"]
    assert calls[2].inputs[0] is calls[4].inputs[1]              # x, the same content: one object
    assert math.copysign(1.0, calls[2].inputs[1].value) == 1.0
    assert math.copysign(1.0, calls[3].inputs[1].value) == -1.0
