"""A kernel's host tiling function tests the conditions all its variants share once, before
any variant (generic/tilingfn.py): the variants of one kernel differ in a few guards (how
often a tile halved) and share the rest (each size's 0 / 1 / many pattern, its bounds),
which every branch wrote out again (public level1/31_iou: 170 KB of tiling functions).
Conditions that divide by a size stay in the branches, behind the guard that makes their
divisor positive."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

# IoU of every pair of boxes [x0, y0, x1, y1]: eight column leaves broadcast against each
# other, so the tile's rows halve a different number of times for each pair of sizes
IOU = ("(i := (torch.min(a[:, 2:3], b[:, 2].unsqueeze(0)) - torch.max(a[:, 0:1], b[:, 0].unsqueeze(0))).clamp(min=0)"
       " * (torch.min(a[:, 3:4], b[:, 3].unsqueeze(0)) - torch.max(a[:, 1:2], b[:, 1].unsqueeze(0))).clamp(min=0))"
       " / (((a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])).unsqueeze(1)"
       " + ((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])).unsqueeze(0) - i).clamp(min=1e-10)")
SIZES = [(100, 200), (1024, 50), (4096, 10), (8192, 100)]


def _boxes(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    lo = torch.rand(n, 2, generator=g) * 10
    return torch.cat([lo, lo + torch.rand(n, 2, generator=g) * 5], dim=1)


def _want(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    a, b = a.double(), b.double()
    return eval(IOU, {"torch": torch, "a": a, "b": b}).numpy()


@pytest.fixture(scope="module")
def iou_file(tmp_path_factory):
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.bench.tasks import load_task
    from sage.kernels import target_for
    from tests.agent.compiler.conftest import write_task

    path = write_task(tmp_path_factory.mktemp("t") / "t.py", "a, b", IOU,
                      [f"torch.rand({n}, 4), torch.rand({m}, 4)" for n, m in SIZES])
    return compile_cases(trace_cases(load_task(path)), None, target_for("ascend910b2"), "t")


def _branches(source: str) -> list[list[set[str]]]:
    """Per tiling function, each variant branch's conditions (the `if ...:` lines before a
    `return (`; the shared test is an `if not (...)`)."""
    out = []
    for fn in re.split(r"^def ", source, flags=re.M):
        if not fn.startswith("tiling"):
            continue
        lines = fn.splitlines()
        conds = [set(line.strip()[3:-1].split(" and ")) for line, nxt in zip(lines, lines[1:])
                 if line.startswith("    if ") and not line.startswith("    if not (") and "return (" in nxt]
        out.append(conds)
    return out


def test_no_condition_is_written_in_every_branch_unless_it_divides_by_a_size(iou_file):
    several = [conds for conds in _branches(iou_file.source) if len(conds) >= 2]
    assert several, "the sizes were chosen to give a kernel several tiling variants"
    for conds in several:
        common = set.intersection(*conds)
        assert all(re.search(r"//|%|/", c) for c in common), common


@pytest.mark.parametrize("n, m", [*SIZES, (2048, 30), (300, 7)])
def test_the_file_is_correct_on_traced_and_untraced_sizes(iou_file, n, m):
    from sage.npu.sandbox import run_sandboxed

    a, b = _boxes(n, n), _boxes(m, m + 1)
    run = run_sandboxed(iou_file.source, [a.numpy(), b.numpy()])
    if (n, m) not in SIZES and run.error is not None:
        assert "no compiled case class" in run.error.message     # refused, never wrong
        return
    assert run.error is None, run.error.message
    np.testing.assert_allclose(run.outputs[0], _want(a, b), rtol=1e-5, atol=1e-6)
