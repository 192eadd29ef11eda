"""The attention rewrite (sage/agent/compiler/attention.py): it takes matmul -> scale -> mask ->
softmax -> matmul as the level-4 references spell it, lowers it to one flash-attention group,
and leaves alone what it must not take. Outputs are checked against torch."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import torch

from sage.bench.correctness import TOLERANCES

SUITE = Path(__file__).resolve().parents[3] / "sage" / "bench" / "npukernelbench" / "level4"

# the level-4 reference's body, as a one-expression forward (GQA by repeat_interleave, bool mask)
ATTENTION = ("torch.matmul(torch.softmax((torch.matmul(q.float(), k.float().repeat_interleave(q.shape[1] // "
             "k.shape[1], dim=1).transpose(-1, -2)) * {scale}).masked_fill(m, float('-inf')), dim=-1), "
             "v.float().repeat_interleave(q.shape[1] // k.shape[1], dim=1)).to(q.dtype)")


def kinds(compiled) -> list[str]:
    return [g.kind for _, g in compiled.groups]


def composite(q, k, v, m, scale):
    g = q.shape[1] // k.shape[1]
    k, v = (t.float().repeat_interleave(g, dim=1) for t in (k, v))
    s = (q.float() @ k.transpose(-1, -2) * scale).masked_fill(m, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def check(out: np.ndarray, expected: torch.Tensor, dtype: torch.dtype) -> None:
    tol = TOLERANCES[str(dtype).split(".")[1]]
    want = expected.to(dtype).double().numpy()
    got = np.asarray(out).astype(np.float64)
    err = np.abs(got - want)
    assert got.shape == want.shape
    assert not ((err > tol) & (err > tol * np.abs(want))).any(), f"max error {err.max():.3g}"


def test_the_rule_fires_on_each_half_case_of_level4_fusion_attention_and_not_on_float32():
    from sage.agent.compiler.compiler import trace_cases
    from sage.bench.tasks import load_task

    cases = trace_cases(load_task(SUITE / "03_fusion_attention.py"))
    by_dtype = {c.signature[0][2]: [g.kind for g in c.plan.groups] for c in cases}
    assert by_dtype["float16"] == ["attention"] and by_dtype["bfloat16"] == ["attention"]
    # float32 operands: the flash kernel multiplies half tiles on the cube, so today's path stays
    assert "attention" not in by_dtype["float32"] and "matmul" in by_dtype["float32"]
    bf16 = next(c for c in cases if c.signature[0][2] == "bfloat16")
    node = bf16.plan.groups[0].nodes[0]
    assert [r.shape for r in node.ins] == [(2, 8, 512, 128), (2, 2, 512, 128), (2, 2, 512, 128), (512, 512)]
    assert node.scalars == [pytest.approx(128 ** -0.5)]


@pytest.mark.parametrize("dtype, heads, kv_heads, s, mshape", [
    (torch.float16, 2, 1, 200, (200, 200)),          # GQA, ragged tiles, a mask shared by every head
    (torch.bfloat16, 2, 2, 130, (2, 1, 130, 130)),   # a per-batch mask
])
def test_fused_attention_matches_torch(compile_graph, dtype, heads, kv_heads, s, mshape):
    body = ATTENTION.format(scale=0.125)
    inputs = (f"torch.randn(2, {heads}, {s}, 64).to({dtype}), torch.randn(2, {kv_heads}, {s}, 64).to({dtype}), "
              f"torch.randn(2, {kv_heads}, {s}, 64).to({dtype}), torch.rand{mshape} < 0.5")
    compiled, run = compile_graph("q, k, v, m", body, inputs)
    assert kinds(compiled) == ["attention"]
    torch.manual_seed(3)
    q, k, v = torch.randn(2, heads, s, 64), torch.randn(2, kv_heads, s, 64), torch.randn(2, kv_heads, s, 64)
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    m = torch.rand(*mshape) < 0.5
    m[..., 3] = False                                # every query sees key 3 (else torch gives NaN)

    def arr(t):
        return t.float().numpy().astype(ml_dtypes.bfloat16) if t.dtype == torch.bfloat16 else t.numpy()

    (out,) = run(arr(q), arr(k), arr(v), m.numpy())
    check(out, composite(q, k, v, m, 0.125), dtype)


def test_unscaled_unmasked_attention_with_one_tensor_as_keys_and_values_fuses(compile_graph):
    body = "(torch.softmax(q.float() @ k.float().transpose(-1, -2), dim=-1) @ k.float()).half()"
    compiled, run = compile_graph("q, k", body, "torch.randn(1, 2, 100, 64).half(), torch.randn(1, 2, 140, 64).half()")
    assert kinds(compiled) == ["attention"]
    torch.manual_seed(5)
    q, k = torch.randn(1, 2, 100, 64).half() / 4, torch.randn(1, 2, 140, 64).half()
    (out,) = run(q.numpy(), k.numpy())
    check(out, torch.softmax(q.float() @ k.float().transpose(-1, -2), dim=-1) @ k.float(), torch.float16)


HALF_QKV = "torch.randn(1, 2, 128, 64).half(), torch.randn(1, 2, 128, 64).half(), torch.randn(1, 2, 128, 64).half()"


@pytest.mark.parametrize("body, why", [
    ("(torch.softmax(q.float() @ k.float().transpose(-1, -2), dim=-2) @ v.float()).half()", "softmax over queries"),
    ("(torch.softmax(q.float() @ k.float().transpose(-1, -2), dim=-1) @ v.float())", "a float32 result"),
    ("((lambda p: (p * (p > 0.01)) @ v.float())(torch.softmax(q.float() @ k.float().transpose(-1, -2), dim=-1))"
     ").half()", "a mask computed from P"),
    ("(lambda s: ((torch.softmax(s, dim=-1) @ v.float()).half(), s))(q.float() @ k.float().transpose(-1, -2))",
     "the scores are a result too"),
    ("(torch.softmax(q.float() @ k.float().transpose(-1, -2) * -0.5, dim=-1) @ v.float()).half()",
     "a negative scale"),
])
def test_the_rule_leaves_what_it_must_not_take_to_the_existing_path(compile_graph, body, why):
    compiled, run = compile_graph("q, k, v", body, HALF_QKV)
    assert "attention" not in kinds(compiled), why
    torch.manual_seed(4)
    q, k, v = (torch.randn(1, 2, 128, 64).half() for _ in range(3))
    model = eval(f"lambda q, k, v: {body}")
    outs = run(q.numpy(), k.numpy(), v.numpy())
    want = model(q, k, v)
    want = want if isinstance(want, tuple) else (want,)
    for got, exp in zip(outs, want):
        check(got, exp.float(), exp.dtype)


def test_the_rule_fires_on_level4_infer_attention_with_a_per_batch_mask_and_decode():
    # the kv lengths become a [B, 1, Sq, Skv] mask (a tile launch); prefill and decode (Sq = 1,
    # where the mask's size-1 query axis may have any stride) both fuse; float32 does not
    from sage.agent.compiler.compiler import trace_cases
    from sage.bench.tasks import load_task

    cases = trace_cases(load_task(SUITE / "10_fused_infer_attention_score.py"))
    kinds_by_case = [[g.kind for g in c.plan.groups] for c in cases]
    assert kinds_by_case[:3] == [["tile", "attention"]] * 3
    assert "attention" not in kinds_by_case[3]
    decode = cases[1].plan.groups[1].nodes[0]
    assert decode.ins[3].shape == (4, 1, 1, 1024) and decode.kwargs == {"mask_batch": 4, "mask_heads": 1}
