"""A float16 temporary that only a topk ranks is kept in float32 (selection_keys.py): MoE
group scores whose float16 sums tie select the group the exact sums (and the float64 truth)
select."""

from __future__ import annotations

import numpy as np
import torch

# group_mask of public level2/26: the best 4 of 8 groups by the sum of each group's best two
GROUP_MASK = ("(lambda g: torch.zeros_like(g).scatter(1, torch.topk(g, 4, dim=-1, sorted=False)[1], 1))"
              "(torch.topk(x.view(x.shape[0], 8, 32), 2, dim=-1)[0].sum(-1))")

def _scores() -> torch.Tensor:
    x = torch.full((1, 8, 32), -50.0)
    best = [(120.0, 119.0), (118.0, 117.0), (10.0, 9.0), (116.0, 115.0),
            (55.71875, 53.15625),                      # 108.875 exactly, and in float16
            (55.8125, 53.09375),                       # 108.90625: float16 rounds it to 108.875
            (20.0, 19.0), (2.0, 1.0)]
    for g, (a, b) in enumerate(best):
        x[0, g, 3], x[0, g, 17] = a, b
    return x.reshape(1, 256).half()


def test_the_group_scores_stay_float32_and_the_exact_sums_decide(compile_graph):
    x = _scores()
    sums16 = torch.topk(x.view(1, 8, 32), 2, dim=-1)[0].sum(-1)
    assert sums16[0, 4] == sums16[0, 5]                        # the tie the float16 key makes
    compiled, run = compile_graph("x", GROUP_MASK, "torch.randn(1, 256).half()")
    (mask,) = run(x.numpy())
    truth = torch.zeros(1, 8)
    truth[0, [0, 1, 3, 5]] = 1                                 # group 5's exact sum is the larger
    np.testing.assert_array_equal(mask.astype(np.float32), truth.numpy())


def test_a_key_read_by_anything_else_keeps_its_dtype():
    from sage.agent.compiler.build import build_program
    from sage.agent.compiler.selection_keys import wide_selection_keys
    from sage.kernels import trace_graph

    class _Both(torch.nn.Module):
        def forward(self, x):
            g = torch.topk(x.view(x.shape[0], 8, 32), 2, dim=-1)[0].sum(-1)
            return torch.topk(g, 4, dim=-1)[1], g * 2           # g is also read by a multiply

    x = torch.randn(2, 256).half()
    prog = build_program(trace_graph(_Both(), [x], decompose=True), 1).program
    wide_selection_keys(prog)
    sums = next(n for n in prog.nodes if n.op == "sum")
    assert sums.outs[0].dtype == "float16"
