"""npukernelbench Level 2 (fused LLM operators), Level 3 (matmul / conv) and Level 4 (blocks).

Checks the task-file format and case rules of docs/tasks.md, that every reference runs on
CPU within the size limit, and the references against independent computations: autograd for
the backward operators, float64 formulas, naive loops, torch.nn modules and SDPA.
"""

from __future__ import annotations

import ast
import importlib.util
import math
from pathlib import Path
from types import ModuleType

import pytest
import torch
import torch.nn.functional as F

from sage.bench.npukernelbench import suite_root
from sage.bench.tasks import accelerator_reason

LEVEL2 = [
    "rotary_mul", "group_norm_swish", "advance_step_flashattn", "moe_compute_expert_tokens",
    "moe_init_routing", "moe_finalize_routing", "moe_gating_top_k_softmax", "quant_scatter",
    "top_k_top_p", "swiglu_quant", "dequant_swiglu_quant", "kv_rmsnorm_rope_cache",
    "interleave_rope", "adaptive_instance_normalization2d_backward",
    "attention_softmax_with_softcapping_and_dropout", "batched2d_rope_position_encoding_backward",
    "embedding_with_initial_layernorm_backward", "fused_add_rmsnorm",
    "fused_residual_rms_norm_backward", "fused_rope_with_qk_norm_and_kv_cache_update",
    "gaussian_topk_sparse_activation", "hybrid_attention_mask_preparation",
    "hyena_fft_size_padding_rfft", "kv_cache_update_with_rope_backward",
    "masked_softmax_with_attention_dropout_backward", "moe_group_score_aggregation_and_masking",
    "multi_mask_attention_aggregation", "multimodal_rope_position_computation_with_grid_based_indexing",
    "tanh_gated_residual_add_backward", "time_decay_exponential_stabilization",
]
LEVEL3 = [
    "batch_matmul", "grouped_matmul", "matmul_both_trans", "matmul_trans_a", "matmul_trans_b",
    "conv_standard1d", "conv_standard2d", "conv_standard3d", "conv_depthwise2d", "conv_transpose2d",
]
LEVEL4 = [
    "lstm", "ffn", "fusion_attention", "grouped_matmul_swiglu_quant", "lightning_indexer",
    "quant_matmul", "sparse_flash_attention", "weight_quant_batchmatmul", "quant_matmul_reduce_sum",
    "fused_infer_attention_score", "msda",
]
# The public operators that are one torch_npu call; everything else is plain torch.
# FUSED_OP exactly where the public NPUKernelBench reference calls one torch_npu operator (or one
# aten op the CPU cannot run as the NPU does); plain-torch public references are eager chains.
FUSED = {
    "level2/" + n: "torch_npu.npu_" + n for n in LEVEL2[:13] if n != "dequant_swiglu_quant"
} | {
    "level3/grouped_matmul": "torch._grouped_mm",
    **{f"level4/{n}": f"torch_npu.npu_{n}" for n in (
        "lstm", "ffn", "fusion_attention", "grouped_matmul_swiglu_quant", "lightning_indexer", "quant_matmul",
        "sparse_flash_attention", "weight_quant_batchmatmul", "quant_matmul_reduce_sum",
        "fused_infer_attention_score")},
}
# Outputs that legitimately hold -inf (filtered logits).
NON_FINITE_OK = {"level2/top_k_top_p"}
MAX_ELEMENTS = 16 * 1024 * 1024

ROOT = suite_root()
TASK_FILES = [p for level in ("level2", "level3", "level4") for p in sorted(ROOT.glob(f"{level}/[0-9]*.py"))]
_modules: dict[Path, ModuleType] = {}
_cases: dict[str, list[list]] = {}


def _task_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem.split('_', 1)[1]}"


def load(task_id: str) -> ModuleType:
    folder, name = task_id.split("/")
    (path,) = ROOT.glob(f"{folder}/[0-9][0-9]_{name}.py")
    if path not in _modules:
        spec = importlib.util.spec_from_file_location(f"npukb_{folder}_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _modules[path] = module
    return _modules[path]


def cases(task_id: str) -> list[list]:
    """One call of get_input_groups per task, shared by the tests that only read the cases."""
    if task_id not in _cases:
        _cases[task_id] = load(task_id).get_input_groups()
    return _cases[task_id]


def run(task_id: str, *args) -> tuple:
    module = load(task_id)
    out = module.Model(*module.get_init_inputs())(*args)
    return out if isinstance(out, tuple) else (out,)


def tensors(case: list) -> list[torch.Tensor]:
    return [a for a in case if isinstance(a, torch.Tensor)]


def unit(angle: torch.Tensor) -> torch.Tensor:
    """exp(i * angle) in complex128."""
    return torch.polar(torch.ones_like(angle, dtype=torch.float64), angle.double())


def close(actual: torch.Tensor, expected: torch.Tensor, tol: float = 1e-5) -> None:
    torch.testing.assert_close(actual.double(), expected.double(), rtol=tol, atol=tol)


# ---------------------------------------------------------------- format and case rules


def test_level_folders_hold_the_published_operators_in_order():
    for level, names in (("level2", LEVEL2), ("level3", LEVEL3), ("level4", LEVEL4)):
        stems = sorted(p.stem for p in ROOT.glob(f"{level}/*.py"))
        assert stems == [f"{i:02d}_{n}" for i, n in enumerate(names, start=1)]
    assert len(LEVEL2) == 30 and len(LEVEL3) == 10 and len(LEVEL4) == 11


@pytest.mark.parametrize("path", TASK_FILES, ids=_task_id)
def test_task_file_format(path):
    module = load(_task_id(path))
    assert issubclass(module.Model, torch.nn.Module)
    assert module.get_init_inputs() == []
    assert isinstance(module.DESCRIPTION, str) and len(module.DESCRIPTION) > 60
    assert isinstance(module.TAGS, list) and module.TAGS and all(isinstance(t, str) for t in module.TAGS)
    assert getattr(module, "FUSED_OP", None) == FUSED.get(_task_id(path))
    assert accelerator_reason(ast.parse(path.read_text())) is None  # runs on a CPU-only torch


@pytest.mark.parametrize("path", TASK_FILES, ids=_task_id)
def test_references_run_on_cpu_within_limits(path):
    task_id = _task_id(path)
    module = load(task_id)
    groups = cases(task_id)
    assert 2 <= len(groups) <= 4
    first = module.get_inputs()
    assert [type(a) for a in first] == [type(a) for a in groups[0]]
    for case in groups:
        assert sum(t.numel() for t in tensors(case)) < MAX_ELEMENTS
        for out in run(task_id, *case):
            assert isinstance(out, torch.Tensor) and out.numel() > 0
            if out.is_floating_point():
                assert not torch.isnan(out).any()
                if task_id not in NON_FINITE_OK:
                    assert torch.isfinite(out).all()


@pytest.mark.parametrize("path", TASK_FILES, ids=_task_id)
def test_each_call_makes_fresh_data(path):
    first, second = cases(_task_id(path)), load(_task_id(path)).get_input_groups()
    for a, b in zip(first, second):
        assert any(x.shape != y.shape or not torch.equal(x, y) for x, y in zip(tensors(a), tensors(b)))


def test_cases_vary_dtype_and_alignment():
    """Over each level, float cases use fp32, fp16 and bf16, and most tasks have a last
    dimension whose byte size is not a multiple of 32."""
    for level in ("level2", "level3", "level4"):
        dtypes, unaligned = set(), 0
        paths = sorted(ROOT.glob(f"{level}/[0-9]*.py"))
        for path in paths:
            found = False
            for t in (t for case in cases(_task_id(path)) for t in tensors(case)):
                dtypes.add(t.dtype)
                found |= t.dim() > 0 and (t.shape[-1] * t.element_size()) % 32 != 0
            unaligned += found
        assert {torch.float32, torch.float16, torch.bfloat16} <= dtypes
        assert unaligned >= 0.7 * len(paths)


# ---------------------------------------------------------------- backward vs autograd


def _grads(forward, inputs: list[torch.Tensor], grad_out, wrt: list[int]):
    leaves = [t.detach().double().requires_grad_(i in wrt) for i, t in enumerate(inputs)]
    outs = forward(*leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    grad_out = grad_out if isinstance(grad_out, tuple) else (grad_out,)
    torch.autograd.backward(outs, [g.double() for g in grad_out])
    return [leaves[i].grad for i in wrt]


def test_adain_backward_matches_autograd():
    x, g = torch.randn(2, 3, 5, 7) * 2 + 1, torch.randn(2, 3, 5, 7)
    mean, std, eps = torch.randn(2, 3), 0.5 + torch.rand(2, 3), 1e-5

    def adain(x, mean, std):
        s = torch.rsqrt(x.var(dim=(2, 3), keepdim=True) + eps)  # unbiased, as the task states
        return std[..., None, None] * (x - x.mean(dim=(2, 3), keepdim=True)) * s + mean[..., None, None]

    expected = _grads(adain, [x, mean, std], g, [0, 1, 2])
    for got, want in zip(run("level2/adaptive_instance_normalization2d_backward", g, x, mean, std, eps), expected):
        close(got, want, 1e-4)


def test_2d_rope_backward_matches_autograd():
    b, s, h, d, theta = 2, 12, 3, 16, 100.0
    pos_h, pos_w = torch.randint(0, 5, (b, s)), torch.randint(0, 7, (b, s))
    x, g = torch.randn(b, s, h, d), torch.randn(b, s, h, d)

    def rope_2d(x):
        freqs = theta ** (-torch.arange(d // 4, dtype=torch.float64) * 4 / d)
        out = []
        for part, pos in zip(x.chunk(2, dim=-1), (pos_h, pos_w)):
            a = pos.double()[..., None] * freqs
            a = torch.cat((a, a), -1)[:, :, None]
            p1, p2 = part.chunk(2, dim=-1)
            out.append(part * a.cos() + torch.cat((-p2, p1), -1) * a.sin())
        return torch.cat(out, -1)

    (expected,) = _grads(rope_2d, [x], g, [0])
    (got,) = run("level2/batched2d_rope_position_encoding_backward", g, pos_h, pos_w, theta)
    close(got, expected, 1e-4)


def test_embedding_layernorm_backward_matches_autograd():
    ids = torch.tensor([[0, 3, 3, 5], [1, 3, 0, 0]])
    weight, gamma, g = torch.randn(7, 10), 1 + 0.1 * torch.randn(10), torch.randn(2, 4, 10)
    beta = torch.randn(10)

    def forward(weight, gamma, beta):
        return F.layer_norm(weight[ids], (10,), gamma, beta, eps=1e-5)

    expected = _grads(forward, [weight, gamma, beta], g, [0, 1, 2])
    got = run("level2/embedding_with_initial_layernorm_backward", g, ids, weight, gamma, 1e-5)
    for a, b in zip(got, expected):
        close(a, b, 1e-4)
    assert torch.all(got[0][[2, 4, 6]] == 0)  # ids never looked up get no gradient


def test_residual_rmsnorm_backward_matches_autograd():
    eps, x, res, w = 1e-6, torch.randn(6, 33), torch.randn(6, 33), 1 + 0.1 * torch.randn(33)
    g_y, g_h = torch.randn(6, 33), torch.randn(6, 33)

    def forward(x, res, w):
        h = x + res
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * w, h

    gx, gres, gw = _grads(forward, [x, res, w], (g_y, g_h), [0, 1, 2])
    h = x + res
    rstd = torch.rsqrt(h.pow(2).mean(-1) + eps)
    grad_h, grad_w = run("level2/fused_residual_rms_norm_backward", g_y, g_h, h, rstd, w)
    close(grad_h, gx, 1e-4)
    close(grad_h, gres, 1e-4)
    close(grad_w, gw, 1e-4)


def test_kv_cache_rope_backward_matches_autograd():
    t, slots, hk, d = 5, 9, 2, 8
    slot_mapping, positions = torch.randperm(slots)[:t], torch.randint(0, 20, (t,))
    angles = torch.arange(20.0)[:, None] * 10.0 ** (-torch.arange(0, d, 2) / d)
    cos_sin = torch.cat((angles.cos(), angles.sin()), -1)
    key, value = torch.randn(t, hk, d), torch.randn(t, hk, d)
    kc, vc, gk, gv = (torch.randn(slots, hk, d) for _ in range(4))

    def forward(key, value, kc, vc):
        cos, sin = cos_sin.double()[positions][:, None].chunk(2, -1)
        k1, k2 = key.chunk(2, -1)
        rot = key * torch.cat((cos, cos), -1) + torch.cat((-k2, k1), -1) * torch.cat((sin, sin), -1)
        return kc.index_copy(0, slot_mapping, rot), vc.index_copy(0, slot_mapping, value)

    expected = _grads(forward, [key, value, kc, vc], (gk, gv), [0, 1, 2, 3])
    got = run("level2/kv_cache_update_with_rope_backward", gk, gv, slot_mapping, positions, cos_sin)
    for a, b in zip(got, expected):
        close(a, b, 1e-5)


def test_masked_softmax_dropout_backward_matches_autograd():
    scale, p_drop = 0.125, 0.25
    scores = torch.randn(2, 3, 4, 6) * 3
    attn_mask = torch.rand(2, 1, 4, 6) < 0.7
    attn_mask[..., 0] = True
    keep, g = torch.rand(2, 3, 4, 6) >= p_drop, torch.randn(2, 3, 4, 6)

    def forward(scores):
        p = torch.softmax((scores * scale).masked_fill(~attn_mask, float("-inf")), -1)
        return p * keep / (1 - p_drop)

    (expected,) = _grads(forward, [scores], g, [0])
    p = torch.softmax((scores * scale).masked_fill(~attn_mask, float("-inf")), -1)
    (got,) = run("level2/masked_softmax_with_attention_dropout_backward", g, p, attn_mask, keep, scale, p_drop)
    close(got, expected, 1e-5)
    assert torch.all(got[~attn_mask.expand_as(got)] == 0)


def test_tanh_gate_backward_matches_autograd():
    x, res, gate, g = torch.randn(2, 3, 8), torch.randn(2, 3, 8), torch.randn(8), torch.randn(2, 3, 8)
    expected = _grads(lambda x, r, gt: r + torch.tanh(gt) * x, [x, res, gate], g, [0, 2])
    for a, b in zip(run("level2/tanh_gated_residual_add_backward", g, x, gate), expected):
        close(a, b, 1e-5)


# ---------------------------------------------------------------- level 2 formulas


def test_rotary_mul_is_a_rotation_of_dimension_pairs():
    x, angle = torch.randn(2, 5, 3, 8), torch.rand(1, 5, 1, 4) * 6
    cos, sin = torch.cat((angle.cos(),) * 2, -1), torch.cat((angle.sin(),) * 2, -1)
    pair = torch.complex(x[..., :4].double(), x[..., 4:].double()) * unit(angle)
    (y,) = run("level2/rotary_mul", x, cos, sin)
    close(y, torch.cat((pair.real, pair.imag), -1))


def test_interleave_rope_rotates_adjacent_pairs_into_halves():
    x, angle = torch.randn(2, 3, 4, 64), torch.rand(2, 1, 4, 32) * 6
    cos, sin = torch.cat((angle.cos(),) * 2, -1), torch.cat((angle.sin(),) * 2, -1)
    pair = torch.complex(x[..., 0::2].double(), x[..., 1::2].double()) * unit(angle)
    (y,) = run("level2/interleave_rope", x, cos, sin)
    close(y, torch.cat((pair.real, pair.imag), -1))


def test_group_norm_swish_matches_aten_group_norm():
    x, w, b = torch.randn(2, 12, 5, 3), torch.randn(12), torch.randn(12)
    y, mean, rstd = run("level2/group_norm_swish", x, w, b, 4, 1e-5, 1.5)
    z = F.group_norm(x.double(), 4, w.double(), b.double(), eps=1e-5)
    close(y, z * torch.sigmoid(1.5 * z))
    close(mean, x.double().reshape(2, 4, -1).mean(-1))
    close(rstd, 1 / torch.sqrt(x.double().reshape(2, 4, -1).var(-1, unbiased=False) + 1e-5))


def test_advance_step_matches_the_vllm_loop():
    for case in cases("level2/advance_step_flashattn"):
        tokens, sampled, positions, lens, slots, tables, num_seqs, num_queries, block_size = case
        got = run("level2/advance_step_flashattn", *case)
        want = [t.clone() for t in (tokens, positions, lens, slots)]
        for i in range(num_queries):
            pos = int(lens[i])
            want[0][i], want[1][i], want[2][i] = sampled[i, 0], pos, pos + 1
            want[3][i] = tables[i, pos // block_size] * block_size + pos % block_size
        for a, b in zip(got, want):
            assert a.dtype == torch.int64 and torch.equal(a, b)


def test_moe_routing_chain_round_trips_tokens():
    """init_routing -> compute_expert_tokens -> finalize_routing with identity experts gives
    back each token scaled by the sum of its gate weights."""
    x, row_idx, expert_idx, active = cases("level2/moe_init_routing")[2]
    n, k = expert_idx.shape
    expanded_x, expanded_row_idx, expanded_expert_idx = run("level2/moe_init_routing", x, row_idx, expert_idx, n)
    assert torch.equal(expanded_expert_idx, torch.sort(expert_idx.flatten()).values)
    for i, j in ((0, 0), (n - 1, k - 1), (n // 2, 1)):
        assert torch.equal(expanded_x[expanded_row_idx[j * n + i]], x[i])
        assert expanded_expert_idx[expanded_row_idx[j * n + i]] == expert_idx[i, j]
    (ends,) = run("level2/moe_compute_expert_tokens", expanded_expert_idx, 64)
    assert torch.equal(ends.long(), torch.bincount(expert_idx.flatten().long(), minlength=64).cumsum(0))
    scales = torch.rand(n, k)
    zeros = torch.zeros(n, x.shape[1])
    (out,) = run("level2/moe_finalize_routing", expanded_x, zeros, zeros, torch.zeros(64, x.shape[1]),
                 scales, expanded_row_idx, expert_idx)
    close(out, x.double() * scales.double().sum(-1, keepdim=True))
    partial = run("level2/moe_init_routing", x, row_idx, expert_idx, active)[0]
    assert partial.shape[0] == min(active, n) * k


def test_moe_gating_top_k_softmax_values_and_layout():
    x = cases("level2/moe_gating_top_k_softmax")[2][0]
    y, experts, rows = run("level2/moe_gating_top_k_softmax", x, 2)
    p = torch.softmax(x.double(), -1)
    close(y, p.gather(1, experts.long()))
    assert torch.all(y[:, 0] > y[:, 1])
    assert torch.equal(experts.long()[:, 0], p.argmax(-1))
    assert rows[5, 1] == x.shape[0] + 5 and rows.dtype == torch.int32


def test_quant_scatter_writes_quantised_rows_only():
    var, idx, upd, scale, zero = cases("level2/quant_scatter")[2]
    (out,) = run("level2/quant_scatter", var, idx, upd, scale, zero)
    span = upd.shape[1]
    for b in range(var.shape[0]):
        rows = slice(int(idx[b]), int(idx[b]) + span)
        q = torch.round(upd[b].double() / scale.double() + zero.double()).clamp(-128, 127)
        assert torch.equal(out[b, rows].double(), q)
        untouched = torch.ones(var.shape[1], dtype=torch.bool)
        untouched[rows] = False
        assert torch.equal(out[b, untouched], var[b, untouched])


def test_top_k_top_p_keeps_the_smallest_nucleus_inside_the_top_k():
    for logits, p, k in cases("level2/top_k_top_p"):
        (out,) = run("level2/top_k_top_p", logits, p, k)
        for row in range(logits.shape[0]):
            order = torch.argsort(logits[row].double(), descending=True)
            kept = torch.isfinite(out[row])
            count = int(kept.sum())
            assert torch.all(kept[order[:count]]) and count <= int(k[row])
            assert torch.equal(out[row][kept], logits[row][kept])
            probs = torch.softmax(logits[row].double()[order[: int(k[row])]], 0)
            mass = probs.cumsum(0)
            # Smallest prefix whose mass reaches p (the threshold is well inside a step).
            assert count == int((mass < float(p[row])).sum()) + 1


@pytest.mark.parametrize("task_id", ["level2/swiglu_quant", "level2/dequant_swiglu_quant",
                                     "level4/grouped_matmul_swiglu_quant"])
def test_dynamic_quant_outputs_dequantise_to_the_activation(task_id):
    case = cases(task_id)[1]
    q, scale = run(task_id, *case)
    assert q.dtype == torch.int8 and scale.dtype == torch.float32
    assert torch.all(q.abs().amax(-1) == 127)
    if task_id == "level2/swiglu_quant":
        x, smooth, group_index = case
        a, b = x.double().chunk(2, -1)
        sizes = torch.diff(group_index, prepend=torch.tensor([0]))
        groups = torch.repeat_interleave(torch.arange(len(group_index)), sizes)
        act = F.silu(a) * b * smooth.double()[groups]
    elif task_id == "level2/dequant_swiglu_quant":
        x, ws, act_s, qs = case
        d = x.double() * ws.double() * act_s.double()[:, None]
        act = F.silu(d[:, : d.shape[1] // 2]) * d[:, d.shape[1] // 2:] * qs.double()
    else:
        x, w, ws, xs, group_list = case
        rows = []
        start = 0
        for e, end in enumerate(group_list.tolist()):
            rows.append((x[start:end].long() @ w[e].long()).double() * xs[start:end, None].double() * ws[e].double())
            start = end
        c = torch.cat(rows)
        act = F.silu(c[:, : c.shape[1] // 2]) * c[:, c.shape[1] // 2:]
    close(scale, act.abs().amax(-1) / 127, 1e-5)
    # Evaluated in float64 the same formula differs from the fp32 reference by at most one
    # step, and only for values within rounding error of a .5 boundary.
    q64 = torch.round(act * (127 / act.abs().amax(-1))[:, None])
    off = (q.double() - q64).abs()
    assert off.max() <= 1 and float(off.mean()) < 1e-3


def test_kv_rmsnorm_rope_cache_writes_normed_and_rotated_rows():
    kv, gamma, cos, sin, index, k_cache, ckv_cache, eps = cases("level2/kv_rmsnorm_rope_cache")[0]
    k_out, ckv_out = run("level2/kv_rmsnorm_rope_cache", kv, gamma, cos, sin, index, k_cache, ckv_cache, eps)
    b, s = 1, int(torch.nonzero(index[1] >= 0)[0])
    row = int(index[b, s])
    c = kv[b, 0, s, :512].double()
    close(ckv_out[b, 0, row], c / torch.sqrt(c.pow(2).mean() + eps) * gamma.double(), 2e-3)
    r = kv[b, 0, s, 512:].double()
    angle = torch.atan2(sin[b, 0, s, :32].double(), cos[b, 0, s, :32].double())
    pair = torch.complex(r[0::2], r[1::2]) * torch.polar(torch.ones_like(angle), angle)
    close(k_out[b, 0, row], torch.cat((pair.real, pair.imag)), 2e-3)
    written = torch.zeros(k_cache.shape[2], dtype=torch.bool)
    written[index[b][index[b] >= 0]] = True
    assert torch.equal(k_out[b, 0, ~written], k_cache[b, 0, ~written])


def test_attention_softcapping_dropout_formula():
    scores, keep, cap, p = torch.randn(1, 2, 3, 5) * 80, torch.rand(1, 2, 3, 5) > 0.2, 50.0, 0.2
    (out,) = run("level2/attention_softmax_with_softcapping_and_dropout", scores, keep, cap, p)
    close(out, torch.softmax(cap * torch.tanh(scores.double() / cap), -1) * keep / 0.8)


def test_fused_add_rmsnorm_formula():
    x, res, w = torch.randn(4, 37), torch.randn(4, 37) * 3, torch.randn(37)
    out, residual = run("level2/fused_add_rmsnorm", x, res, w, 1e-6)
    h = x.double() + res.double()
    close(residual, h)
    close(out, h / torch.sqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double())


def test_qk_norm_rope_cache_update_matches_aten_rms_norm_and_rotation():
    case = cases("level2/fused_rope_with_qk_norm_and_kv_cache_update")[2]
    q, k, v, qw, kw, positions, cos_sin, kc, vc, slots, eps = case
    q_out, kc_out, vc_out = run("level2/fused_rope_with_qk_norm_and_kv_cache_update", *case)
    t = int(torch.nonzero(slots >= 0)[0])
    cos, sin = cos_sin[positions[t]].double().chunk(2)
    for src, w, got in ((q[t], qw, q_out[t]), (k[t], kw, kc_out[slots[t]])):
        normed = F.rms_norm(src.double(), (src.shape[-1],), w.double(), eps)
        half = src.shape[-1] // 2
        pair = torch.complex(normed[:, :half], normed[:, half:]) * torch.complex(cos, sin)
        close(got, torch.cat((pair.real, pair.imag), -1), 1e-5)
    assert torch.equal(vc_out[slots[t]], v[t])
    untouched = torch.ones(kc.shape[0], dtype=torch.bool)
    untouched[slots[slots >= 0]] = False
    assert torch.equal(kc_out[untouched], kc[untouched])


def test_gaussian_topk_keeps_about_the_target_fraction():
    x = torch.randn(8, 20000)
    (y,) = run("level2/gaussian_topk_sparse_activation", x, 0.9)
    assert abs(float((y > 0).double().mean()) - 0.1) < 0.01
    cutoff = x.mean(-1, keepdim=True) + x.std(-1, unbiased=False, keepdim=True) * 1.2815515655446004
    close(y, F.gelu(torch.relu(x.double() - cutoff.double()), approximate="tanh"), 1e-5)


def test_hybrid_mask_matches_elementwise_rule():
    padding = torch.tensor([[True] * 9, [True] * 6 + [False] * 3])
    prefix = torch.tensor([3, 2])
    (mask,) = run("level2/hybrid_attention_mask_preparation", padding, prefix, 4)
    for b in range(2):
        for i in range(9):
            for j in range(9):
                rule = bool(padding[b, j]) and ((j <= i and i - j < 4) or (i < prefix[b] and j < prefix[b]))
                assert bool(mask[b, 0, i, j]) == rule


def test_hyena_rfft_matches_a_dft_matrix():
    u = torch.randn(2, 3, 5)
    (spec,) = run("level2/hyena_fft_size_padding_rfft", u)
    n = 16  # smallest power of two >= 2 * 5
    assert spec.shape == (2, 3, n // 2 + 1, 2)
    kk, tt = torch.arange(n // 2 + 1, dtype=torch.float64)[:, None], torch.arange(5, dtype=torch.float64)[None]
    dft = torch.polar(torch.ones(n // 2 + 1, 5, dtype=torch.float64), -2 * math.pi * kk * tt / n)
    want = torch.view_as_real(u.double().to(torch.complex128) @ dft.T)
    close(spec, want, 1e-5)


def test_moe_group_masking_matches_a_loop():
    logits, bias, n_group, topk_group = cases("level2/moe_group_score_aggregation_and_masking")[1]
    masked, group_mask = run("level2/moe_group_score_aggregation_and_masking", logits, bias, n_group, topk_group)
    s = torch.sigmoid(logits.double()) + bias.double()
    per = s.shape[1] // n_group
    for t in range(0, s.shape[0], 37):
        group_scores = [sorted(s[t, g * per:(g + 1) * per].tolist())[-2:] for g in range(n_group)]
        best = sorted(range(n_group), key=lambda g: -sum(group_scores[g]))[:topk_group]
        assert sorted(torch.nonzero(group_mask[t]).flatten().tolist()) == sorted(best)
        for g in range(n_group):
            part = masked[t, g * per:(g + 1) * per].double()
            close(part, s[t, g * per:(g + 1) * per] if g in best else torch.zeros(per, dtype=torch.float64))


def test_multi_mask_attention_matches_sdpa_per_mask():
    q, k, v = (torch.randn(1, 2, 7, 4) for _ in range(3))
    masks = torch.rand(3, 7, 7) < 0.5
    masks |= torch.eye(7, dtype=torch.bool)
    weights = torch.tensor([0.2, 0.5, 0.3])
    (out,) = run("level2/multi_mask_attention_aggregation", q, k, v, masks, weights, 0.5)
    want = sum(w * F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=m, scale=0.5)
               for w, m in zip(weights.double(), masks))
    close(out, want, 1e-5)


def test_mrope_positions_on_a_hand_built_sequence():
    img = 99
    # text(2) image(t=1, 4x6 patches -> 2x3 merged) text(1) video(t=2, 2x2 -> 1x1) text(2)
    ids = torch.tensor([[5, 6] + [img] * 6 + [7] + [img] * 2 + [8, 9]])
    grids = torch.tensor([[1, 4, 6], [2, 2, 2]])
    (pos,) = run("level2/multimodal_rope_position_computation_with_grid_based_indexing", ids, grids, img, 2)
    want_t = [0, 1, 2, 2, 2, 2, 2, 2, 5, 6, 7, 8, 9]
    want_h = [0, 1, 2, 2, 2, 3, 3, 3, 5, 6, 6, 8, 9]
    want_w = [0, 1, 2, 3, 4, 2, 3, 4, 5, 6, 6, 8, 9]
    assert pos[:, 0].tolist() == [want_t, want_h, want_w]


def test_time_decay_stabilised_scan_matches_direct_sums():
    c, t = 6, 9
    decay, first = torch.randn(c), torch.randn(c)
    k, v = torch.randn(1, t, c) * 3, torch.randn(1, t, c)
    (y,) = run("level2/time_decay_exponential_stabilization", decay, first, k, v)
    w, kd, vd = -torch.exp(decay.double()), k.double()[0], v.double()[0]
    for step in range(t):
        past = [torch.exp((step - 1 - i) * w + kd[i]) for i in range(step)]
        now = torch.exp(first.double() + kd[step])
        num = sum(e * vd[i] for i, e in enumerate(past)) + now * vd[step]
        den = sum(past) + now
        close(y[0, step], num / den, 1e-5)


# ---------------------------------------------------------------- level 3


@pytest.mark.parametrize("name,a_shape,b_shape,equation", [
    ("batch_matmul", (3, 5, 7), (3, 7, 4), "bmk,bkn->bmn"),
    ("matmul_both_trans", (7, 5), (4, 7), "km,nk->mn"),
    ("matmul_trans_a", (7, 5), (7, 4), "km,kn->mn"),
    ("matmul_trans_b", (5, 7), (4, 7), "mk,nk->mn"),
])
def test_matmuls_match_einsum(name, a_shape, b_shape, equation):
    a, b = torch.randn(a_shape), torch.randn(b_shape)
    (c,) = run(f"level3/{name}", a, b)
    close(c, torch.einsum(equation, a.double(), b.double()))


def test_grouped_matmul_uses_each_rows_group_weight():
    x, w, group_list = cases("level3/grouped_matmul")[2]
    (y,) = run("level3/grouped_matmul", x, w, group_list)
    group_of_row = torch.searchsorted(group_list, torch.arange(x.shape[0]), right=True)
    per_group = torch.stack([x.double() @ w_g.double() for w_g in w])  # every row times every weight
    want = per_group[group_of_row, torch.arange(x.shape[0])]
    close(y, want, 1e-4)
    assert (group_of_row == 1).sum() == 0  # the case has an empty group


def _conv_nd_naive(x, w, bias, stride, padding, dilation):
    """Cross-correlation as a sum over kernel offsets of strided input slices (float64)."""
    nd = w.dim() - 2
    x = F.pad(x.double(), [p for pad in reversed(padding) for p in (pad, pad)])
    out_size = [(x.shape[2 + i] - dilation[i] * (w.shape[2 + i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    out = torch.zeros(x.shape[0], w.shape[0], *out_size, dtype=torch.float64)
    for offset in torch.cartesian_prod(*[torch.arange(s) for s in w.shape[2:]]).reshape(-1, nd).tolist():
        window = x
        for i, o in enumerate(offset):
            start = o * dilation[i]
            window = window.narrow(2 + i, start, (out_size[i] - 1) * stride[i] + 1)
            window = window[(slice(None),) * (2 + i) + (slice(None, None, stride[i]),)]
        out += torch.einsum("bc...,oc->bo...", window, w.double()[(slice(None), slice(None), *offset)])
    return out + bias.double().reshape(1, -1, *[1] * nd)


def test_convolutions_match_a_naive_offset_sum():
    module = load("level3/conv_standard1d")
    x, w, b, s, p, d = module._case(torch.float32, 2, 3, 21, 4, 3, 2, 1, 2)
    close(run("level3/conv_standard1d", x, w, b, s, p, d)[0], _conv_nd_naive(x, w, b, [s], [p], [d]))
    x, w, b, s, p = load("level3/conv_standard2d")._case(torch.float32, 2, 3, 9, 11, 5, 3, 2, 1)
    close(run("level3/conv_standard2d", x, w, b, s, p)[0], _conv_nd_naive(x, w, b, [s] * 2, [p] * 2, [1, 1]))
    x, w, b, s, p = load("level3/conv_standard3d")._case(
        torch.float32, 1, 2, 5, 6, 7, 3, (2, 3, 3), [1, 1, 2], [0, 1, 1])
    close(run("level3/conv_standard3d", x, w, b, s, p)[0], _conv_nd_naive(x, w, b, s, p, [1, 1, 1]))


def test_depthwise_conv_is_one_filter_per_channel():
    x, w, b, s, p = load("level3/conv_depthwise2d")._case(torch.float32, 2, 3, 8, 9, 3, 2, 1)
    (y,) = run("level3/conv_depthwise2d", x, w, b, s, p)
    for c in range(3):
        close(y[:, c:c + 1], _conv_nd_naive(x[:, c:c + 1], w[c:c + 1], b[c:c + 1], [s] * 2, [p] * 2, [1, 1]))


def test_conv_transpose_is_the_input_gradient_of_conv():
    x, w, b, s, p, op = load("level3/conv_transpose2d")._case(torch.float32, 2, 3, 5, 6, 4, 3, 2, 1, 1)
    (y,) = run("level3/conv_transpose2d", x, w, b, s, p, op)
    probe = torch.zeros(2, 4, *y.shape[2:], dtype=torch.float64, requires_grad=True)
    conv = F.conv2d(probe, w.double(), stride=s, padding=p)
    (grad,) = torch.autograd.grad(conv, probe, x.double())
    close(y, grad + b.double()[None, :, None, None])


# ---------------------------------------------------------------- level 4


def test_lstm_matches_torch_nn_lstm():
    x, h0, c0, w_ih, w_hh, b_ih, b_hh = load("level4/lstm")._case(torch.float32, 7, 3, 5, 6)
    lstm = torch.nn.LSTM(5, 6).double()
    with torch.no_grad():
        for name, value in zip(("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"), (w_ih, w_hh, b_ih, b_hh)):
            getattr(lstm, name).copy_(value.double())
        want_y, (want_h, want_c) = lstm(x.double(), (h0.double()[None], c0.double()[None]))
    y, h, c = run("level4/lstm", x, h0, c0, w_ih, w_hh, b_ih, b_hh)
    close(y, want_y)
    close(h, want_h[0])
    close(c, want_c[0])


def test_ffn_formula():
    x, w1, b1, w2, b2 = load("level4/ffn")._case(torch.float32, 5, 8, 13)
    (y,) = run("level4/ffn", x, w1, b1, w2, b2)
    hidden = F.gelu(x.double() @ w1.double() + b1.double())
    close(y, hidden @ w2.double() + b2.double())


def test_attention_blocks_match_sdpa():
    q, k, v, mask, scale = load("level4/fusion_attention")._case(torch.float32, 1, 4, 2, 9, 8, "random")
    (out,) = run("level4/fusion_attention", q, k, v, mask, scale)
    want = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=~mask, scale=scale,
                                          enable_gqa=True)
    close(out, want)
    for sq in (1, 9):
        case = load("level4/fused_infer_attention_score")._case(torch.float32, 3, 4, 2, sq, 9, 8)
        q, k, v, mask, lengths, scale = case
        (out,) = run("level4/fused_infer_attention_score", q, k, v, mask, lengths, scale)
        visible = ~mask[None, None] & (torch.arange(9)[None, :] < lengths[:, None])[:, None, None]
        want = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=visible, scale=scale,
                                              enable_gqa=True)
        close(out, want)


def test_sparse_flash_attention_matches_dense_attention_on_the_named_rows():
    q, k, v, idx, scale = load("level4/sparse_flash_attention")._case(torch.float32, 2, 5, 8, 3, 6, 4, 4)
    (out,) = run("level4/sparse_flash_attention", q, k, v, idx, scale)
    allowed = torch.zeros(2, 5, 8, dtype=torch.bool)
    for b in range(2):
        for t in range(5):
            named = idx[b, t, 0]
            allowed[b, t, named[(named >= 0) & (named <= 3 + t)].long()] = True
    want = F.scaled_dot_product_attention(q.double().transpose(1, 2), k.double().transpose(1, 2).expand(2, 3, 8, 6),
                                          v.double().transpose(1, 2).expand(2, 3, 8, 4),
                                          attn_mask=allowed[:, None], scale=scale)
    close(out, want.transpose(1, 2))


def test_lightning_indexer_matches_brute_force_with_ties():
    q, k, w, top_k = load("level4/lightning_indexer")._case(torch.bfloat16, 1, 4, 6, 3, 8, 5)
    (got,) = run("level4/lightning_indexer", q, k, w, top_k)
    for t in range(4):
        pos = 2 + t
        scores = [sum(float(w[0, t, j]) * max(0.0, float(q[0, t, j].double() @ k[0, s, 0].double())) for j in range(3))
                  for s in range(pos + 1)]
        ranked = sorted(range(pos + 1), key=lambda s: (-scores[s], s))[:top_k]
        assert got[0, t, 0].tolist() == ranked + [-1] * (top_k - len(ranked))


def test_integer_quant_matmuls_match_int64_arithmetic():
    x1, x2, scale, pertoken, bias = load("level4/quant_matmul")._case(torch.bfloat16, 6, 300, 5)
    (out,) = run("level4/quant_matmul", x1, x2, scale, pertoken, bias)
    exact = (x1.long() @ x2.long() + bias.long()).double()
    assert out.dtype == torch.bfloat16
    close(out, exact * scale.double() * pertoken.double()[:, None], 8e-3)
    x1, x2, s1, s2 = load("level4/quant_matmul_reduce_sum")._case(3, 4, 300, 5)
    (out,) = run("level4/quant_matmul_reduce_sum", x1, x2, s1, s2)
    want = sum((x1[b].long() @ x2[b].long()).double() * s1[b, :, None].double() * s2.double() for b in range(3))
    close(out, want, 8e-3)


def test_weight_quant_batchmatmul_per_group_dequantisation():
    x, w, scale, offset, group = load("level4/weight_quant_batchmatmul")._case(torch.float16, 3, 256, 5, 64)
    (y,) = run("level4/weight_quant_batchmatmul", x, w, scale, offset, group)
    deq = torch.stack([(w[r].double() + offset[r // 64].double()) * scale[r // 64].double() for r in range(256)])
    close(y, x.double() @ deq, 2e-3)


def _bilinear(img: torch.Tensor, x: float, y: float) -> torch.Tensor:
    """Sample img [D, H, W] at pixel coordinates (x, y) with zero padding (float64)."""
    _, h, w = img.shape
    x0, y0 = math.floor(x), math.floor(y)
    total = torch.zeros(img.shape[0], dtype=torch.float64)
    for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
        for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
            if 0 <= yy < h and 0 <= xx < w:
                total += wy * wx * img[:, yy, xx].double()
    return total


def test_msda_matches_a_naive_bilinear_loop():
    value, shapes, starts, loc, attn = load("level4/msda")._case(torch.float32, 1, 3, 2, 4, [(3, 5), (2, 2)], 2)
    (out,) = run("level4/msda", value, shapes, starts, loc, attn)
    for q in range(3):
        for m in range(2):
            acc = torch.zeros(4, dtype=torch.float64)
            for lvl, ((h, w), start) in enumerate(zip(shapes.tolist(), starts.tolist())):
                img = value[0, start:start + h * w, m].T.reshape(4, h, w)
                for p in range(2):
                    x, y = loc[0, q, m, lvl, p].double().tolist()
                    acc += attn[0, q, m, lvl, p].double() * _bilinear(img, x * w - 0.5, y * h - 0.5)
            close(out[0, q, m * 4:(m + 1) * 4], acc, 1e-5)
