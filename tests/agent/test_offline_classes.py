"""Operator classes the offline compiler covers beyond plain arithmetic: comparisons with
bool outputs, selects, floor division on int32, grouped broadcasts, several outputs,
transposed and batched matrix products.
Each kernel goes through the sandbox and is judged against torch like any answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from sage.agent.backends.offline import OfflineBackend
from sage.agent.loop import AgentConfig, synthesize

TASK = '''
import torch
DESCRIPTION = "{description}"
TAGS = ["test"]
class Model(torch.nn.Module):
    def forward(self, {args}):
        return {body}
def get_input_groups():
    return [{groups}]
def get_inputs():
    return get_input_groups()[0]
def get_init_inputs():
    return []
'''

CASES = {
    # bool output from a comparison; a bool input in logic; where with a scalar branch
    "gt_bool": ("a, b", "a > b", "[torch.randn(64, 301), torch.randn(64, 301)], "
                "[torch.randn(128, 256).half(), torch.randn(128, 256).half()]"),
    "logic": ("a, b", "torch.logical_or(a, torch.logical_not(b))",
              "[torch.rand(64, 301) < 0.5, torch.rand(64, 301) < 0.5], "
              "[torch.randint(-2, 3, (96, 77), dtype=torch.int32), torch.rand(96, 77) < 0.5]"),
    "where": ("g, x", "torch.where(x.abs() < 1.0, g * 2.0, 0.5)",
              "[torch.randn(64, 301), torch.randn(64, 301)], [torch.randn(32, 1, 257).half(), torch.randn(32, 1, 257).half()]"),
    "floor_divide": ("a, b", "torch.floor_divide(a, b)",
                     "[torch.randint(-1000, 1000, (64, 301), dtype=torch.int32), "
                     "torch.randint(1, 50, (64, 301), dtype=torch.int32) * (1 - 2 * torch.randint(0, 2, (64, 301), dtype=torch.int32))]"),
    "matmul_trans": ("a, b", "a.T @ b.T", "[torch.randn(96, 80), torch.randn(48, 96)], "
                     "[torch.randn(64, 33).half(), torch.randn(40, 64).half()]"),
    # [B, 1, N] over [B, M, N] and [B, 1, N] + [1, M, N]: the grouped broadcast layout
    "grouped_add": ("a, b", "a + b", "[torch.randn(6, 40, 77), torch.randn(6, 1, 77)], "
                    "[torch.randn(5, 1, 33).half(), torch.randn(1, 12, 33).half()]"),
    # several outputs: one kernel each
    "two_outputs": ("a, b", "a * b, torch.sigmoid(a) - b", "[torch.randn(64, 301), torch.randn(64, 301)]"),
    # a string argument picks the variant (the same dtype in both cases)
    "gelu_mode": ("x, approximate", "torch.nn.functional.gelu(x, approximate=approximate)",
                  "[torch.randn(64, 301), 'none'], [torch.randn(32, 77), 'tanh']"),
    "bmm": ("a, b", "torch.bmm(a, b)", "[torch.randn(3, 40, 64), torch.randn(3, 64, 24)]"),
}


def _task(tmp_path: Path, name: str):
    from sage.bench.tasks import load_task

    args, body, groups = CASES[name]
    path = tmp_path / f"{name}.py"
    path.write_text(TASK.format(description=name, args=args, body=body, groups=groups))
    return load_task(path)


@pytest.mark.parametrize("name", sorted(CASES))
def test_new_classes_are_correct_against_torch(tmp_path: Path, name: str):
    task = _task(tmp_path, name)
    result = synthesize(task, OfflineBackend(task, seed=0), None, AgentConfig(iterations=0, memory_mode="none"))
    assert result.status == "correct", (result.reason, [t.message for t in result.turns])
    assert result.turns[0].speedup and result.turns[0].speedup > 0


def test_comparison_kernels_use_compare_and_select(tmp_path: Path):
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.kernels import target_for

    task = _task(tmp_path, "where")
    source = compile_cases(trace_cases(task), None, target_for(), task.key).source
    assert "CompareScalar(mk" in source and "Select(" in source
    assert "torch" not in source
