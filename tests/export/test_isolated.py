"""`sage export` runs the kernel it records in a locked-down child (sage/export/isolated.py):
the same IR as an export in this process, and a kernel that never ends costs the deadline,
not the command."""

from __future__ import annotations

import os

import numpy as np

from sage.export.isolated import export_isolated
from tests.export.test_emit import EXAMPLES, SPEC, export_example

from sage.bench.evaluate import select_cases
from sage.bench.tasks import kernel_args, load_task, parameter_kwargs

SPINS = """
from sage.npu.ascendc import *

@kernel
def k(x, y, n):
    i = 0
    while True:
        i = i + 1

def forward(x):
    y = empty_like(x)
    k[1](x, y, x.numel())
    return y
"""


def test_the_child_writes_the_ir_this_process_would():
    t = load_task(EXAMPLES / "softmax_task.py")
    t.seed = 0
    model, [(_, inputs)] = select_cases(t, [1])
    got = export_isolated((EXAMPLES / "softmax.py").read_text(), kernel_args(inputs), parameter_kwargs(model),
                          spec=SPEC, filename="softmax.py")
    want = export_example("softmax.py", "softmax_task.py", 1)
    assert got.refusal is None and got.text == want.text
    assert (got.blocks, got.groups, got.ops, got.launches) == (want.blocks, want.groups, want.ops, len(want.functions))
    assert got.lines == want.lines


def test_a_kernel_that_never_ends_costs_the_deadline_and_this_process_goes_on():
    before = set(os.listdir("/proc/self/fd"))
    got = export_isolated(SPINS, [np.ones(64, np.float32)], None, spec=SPEC, filename="k.py", wall_seconds=3)
    assert got.text is None
    assert "did not finish within 3 s" in got.refusal
    assert set(os.listdir("/proc/self/fd")) <= before          # no descriptor left open
