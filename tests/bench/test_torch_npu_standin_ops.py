"""The torch_npu stand-ins (rope/norm, MoE routing, adam, iou, top-k/top-p, advance step) against
independent composites: complex multiplication for rotations, Python loops over rows and
boxes, the documented example values where a page gives them."""

import bisect
import math

import pytest
import torch

from sage.bench import torch_npu_standin as tn


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)


def _angles(shape_sd, pair_axis_half: bool):
    """cos/sin of random angles [1, 1, S, D], each angle used by its pair (halves or neighbours)."""
    s, d = shape_sd
    theta = torch.rand(s, d // 2) * 6.28
    full = torch.cat([theta, theta], -1) if pair_axis_half else theta.repeat_interleave(2, -1)
    return theta, full.cos()[None, None], full.sin()[None, None]


@pytest.mark.parametrize("mode", ["half", "interleave"])
def test_rotary_mul_is_a_complex_rotation_of_each_pair(mode):
    x = torch.randn(2, 3, 5, 8)
    theta, cos, sin = _angles((5, 8), mode == "half")
    out = tn.npu_rotary_mul(x, cos, sin, rotary_mode=mode)
    if mode == "half":
        z = torch.complex(x[..., :4], x[..., 4:]) * torch.polar(torch.ones_like(theta), theta)
        want = torch.cat([z.real, z.imag], -1)
    else:
        z = torch.view_as_complex(x.reshape(2, 3, 5, 4, 2).contiguous()) * torch.polar(torch.ones_like(theta), theta)
        want = torch.view_as_real(z).reshape(x.shape)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)


def test_rotary_mul_keeps_dtype_and_broadcasts_r():
    x = torch.randn(1, 2, 4, 8, dtype=torch.float16)
    r = torch.ones(1, 1, 4, 8, dtype=torch.float16)
    out = tn.npu_rotary_mul(x, r, torch.zeros_like(r))
    assert out.dtype == torch.float16 and torch.equal(out, x)
    with pytest.raises(Exception, match="rotary_mode"):
        tn.npu_rotary_mul(x, r, r, rotary_mode="spiral")


def test_interleave_rope_deinterleaves_then_rotates_halves():
    x = torch.randn(1, 2, 3, 8)
    theta, cos, sin = _angles((3, 8), True)
    # the page's reshape [..., D/2, 2] -> transpose: even lanes first, then odd lanes
    q = torch.stack([x[..., 2 * k] for k in range(4)] + [x[..., 2 * k + 1] for k in range(4)], -1)
    z = torch.complex(q[..., :4], q[..., 4:]) * torch.polar(torch.ones_like(theta), theta)
    torch.testing.assert_close(tn.npu_interleave_rope(x, cos, sin), torch.cat([z.real, z.imag], -1),
                               rtol=1e-5, atol=1e-5)


def test_group_norm_swish_matches_group_norm_then_scaled_swish():
    x, w, b = torch.randn(3, 8, 5, 2), torch.randn(8), torch.randn(8)
    y, mean, rstd = tn.npu_group_norm_swish(x, 4, w, b, eps=1e-5, swish_scale=1.7)
    gn = torch.nn.functional.group_norm(x, 4, w, b, eps=1e-5)
    torch.testing.assert_close(y, gn / (1 + torch.exp(-1.7 * gn)), rtol=1e-4, atol=1e-5)
    for n in range(3):
        for g in range(4):
            vals = x[n, 2 * g:2 * g + 2].flatten()
            assert mean[n, g].item() == pytest.approx(vals.mean().item(), abs=1e-5)
            var = ((vals - vals.mean()) ** 2).mean().item()
            assert rstd[n, g].item() == pytest.approx(1 / math.sqrt(var + 1e-5), rel=1e-4)


def test_moe_gating_top_k_softmax_rows_and_finished():
    x = torch.randn(5, 6)
    finished = torch.tensor([False, True, False, False, True])
    y, idx, row_idx = tn.npu_moe_gating_top_k_softmax(x, finished, k=2)
    for r in range(5):
        e = [math.exp(v) for v in x[r].tolist()]
        p = [v / sum(e) for v in e]
        best = sorted(range(6), key=lambda i: -p[i])[:2]
        assert y[r].tolist() == pytest.approx([p[i] for i in best], rel=1e-5)
        assert idx[r].tolist() == ([6, 6] if finished[r] else best)
        assert row_idx[r].tolist() == [r, r + 5]          # arange(rows*k).reshape(k, rows).T
    assert idx.dtype == row_idx.dtype == torch.int32


def test_moe_init_routing_follows_the_stable_key_value_sort():
    n, k, h = 4, 2, 3
    x = torch.randn(n, h)
    row_idx = torch.arange(n * k, dtype=torch.int32).reshape(k, n).t().contiguous()
    expert = torch.tensor([[3, 1], [1, 1], [0, 3], [2, 0]], dtype=torch.int32)
    ex, erow, eexp = tn.npu_moe_init_routing(x, row_idx, expert, active_num=3)
    flat = [(expert.flatten()[i].item(), i) for i in range(n * k)]
    order = [i for _, i in sorted(flat)]                    # Python's sort is stable
    src = [row_idx.flatten()[i].item() for i in order]
    assert eexp.tolist() == [expert.flatten()[i].item() for i in order]
    assert all(erow[src[i]].item() == i for i in range(n * k))
    assert ex.shape == (3 * k, h)
    for i in range(3 * k):
        assert torch.equal(ex[i], x[src[i] % n])


def test_moe_compute_expert_tokens_is_a_binary_search_per_expert():
    s = torch.tensor([0, 0, 2, 2, 2, 5, 6], dtype=torch.int32)
    out = tn.npu_moe_compute_expert_tokens(s, 8)
    assert out.tolist() == [bisect.bisect_right(s.tolist(), e) for e in range(8)] and out.dtype == torch.int32


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_moe_finalize_routing_per_the_page_loop(mode):
    n, k, h, e, cap = 5, 2, 4, 3, 4
    rows = torch.randn(e, cap, h) if mode == 1 else torch.randn(n * k, h)
    src = torch.randperm(n * k).to(torch.int32)
    if mode == 1:
        src = torch.tensor([0, 5, -1, 2, 9, 11, 3, -1, 7, 1], dtype=torch.int32)
    skip1, skip2, bias, scales = torch.randn(n, h), torch.randn(n, h), torch.randn(e, h), torch.randn(n, k)
    expert = torch.randint(0, e, (n, k), dtype=torch.int32)
    out = tn.npu_moe_finalize_routing(rows, skip1, skip2, bias, scales, src, expert, drop_pad_mode=mode)
    flat = rows.reshape(-1, h)
    want = skip1 + skip2
    for i in range(n):
        for j in range(k):
            pos = src[j * n + i] if mode in (0, 1) else src[i * k + j]
            row = torch.zeros(h) if pos < 0 else flat[pos]
            want[i] += scales[i, j] * (row + bias[expert[i, j]])
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)


def test_apply_adam_tensorflow_update_in_place():
    var, m, v, g = torch.randn(6), torch.randn(6), torch.rand(6), torch.randn(6)
    b1p, b2p, lr, b1, b2, eps = 0.9, 0.999, 0.01, 0.9, 0.999, 1e-8
    want = []
    for nest in (False, True):
        vv, mm, sv = var.clone(), m.clone(), v.clone()
        out = tn.npu_apply_adam(b1p, b2p, lr, b1, b2, eps, g, False, nest, out=(vv, mm, sv))
        assert out[0] is vv
        for i in range(6):
            mi = b1 * m[i].item() + (1 - b1) * g[i].item()
            vi = b2 * v[i].item() + (1 - b2) * g[i].item() ** 2
            lrt = lr * math.sqrt(1 - b2p) / (1 - b1p)
            step = (mi * b1 + g[i].item() * (1 - b1)) if nest else mi
            assert vv[i].item() == pytest.approx(var[i].item() - lrt * step / (math.sqrt(vi) + eps), rel=1e-5, abs=1e-7)
            assert (mm[i].item(), sv[i].item()) == pytest.approx((mi, vi), rel=1e-5)
        want.append(vv)
    assert not torch.equal(want[0], want[1])


def test_iou_page_example_and_iof():
    b = torch.tensor([[0, 0, 10, 10], [10, 10, 20, 20], [32, 32, 38, 42]], dtype=torch.float32)
    g = torch.tensor([[0, 0, 10, 20], [0, 10, 10, 10], [10, 10, 20, 20]], dtype=torch.float32)
    iou = tn.npu_iou(b, g, 0)
    assert iou.tolist() == [[0.5, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]   # the page's [gt][bbox] table
    iof = tn.npu_iou(b[:1], g[:1], 1)
    assert iof.item() == pytest.approx(100 / 200)


def test_top_k_top_p_per_row():
    torch.manual_seed(0)
    logits = torch.randn(3, 10)
    k = torch.tensor([3, 10, 1], dtype=torch.int32)
    p = torch.tensor([0.5, 0.9, 0.3])
    out = tn.npu_top_k_top_p(logits, p, k)
    for r in range(3):
        row = logits[r].tolist()
        kth = sorted(row)[-int(k[r])]
        kept = sorted((v for v in row if v >= kth))            # ascending
        e = [math.exp(v - max(kept)) for v in kept]
        cum, dropped = 0.0, set()
        for i, v in enumerate(kept):
            cum += e[i] / sum(e)
            if cum <= 1 - p[r].item() and i != len(kept) - 1:
                dropped.add(v)
        want = [v if v >= kth and v not in dropped else -math.inf for v in row]
        assert out[r].tolist() == pytest.approx(want)


def test_advance_step_updates_the_first_num_queries_in_place():
    tokens, pos, lens, slots = (torch.zeros(4, dtype=torch.int64) for _ in range(4))
    lens += torch.tensor([3, 9, 1, 5])
    sampled = torch.tensor([[7], [8]])
    tables = torch.arange(40, dtype=torch.int64).reshape(4, 10)
    assert tn.npu_advance_step_flashattn(tokens, sampled, pos, lens, slots, tables, 4, 2, 4) is None
    assert tokens.tolist() == [7, 8, 0, 0] and pos.tolist() == [3, 9, 0, 0] and lens.tolist() == [4, 10, 1, 5]
    # slot = table[i][pos // 4] * 4 + pos % 4
    assert slots.tolist() == [0 * 4 + 3, 12 * 4 + 1, 0, 0]
