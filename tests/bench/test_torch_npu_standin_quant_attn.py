"""The quantisation, matmul and attention stand-ins against independent composites: per-row
Python quantisation, matmuls by einsum over explicit groups, and attention by an explicit
softmax(QK^T)V per (batch, head, query row) with its mask built element by element."""

import math

import pytest
import torch

from sage.bench import torch_npu_standin as tn


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)


def _q8(v: float) -> int:
    return max(-128, min(127, round(v)))      # Python rounds half to even, as the chip's cast


def test_dynamic_quant_per_row_and_grouped_smooth_scales():
    x = torch.randn(6, 8)
    smooth = torch.rand(2, 8) + 0.5
    q, s = tn.npu_dynamic_quant(x, smooth_scales=smooth, group_index=torch.tensor([2, 6], dtype=torch.int32))
    for r in range(6):
        y = [a * b for a, b in zip(x[r].tolist(), smooth[0 if r < 2 else 1].tolist())]
        scale = max(abs(v) for v in y) / 127
        assert s[r].item() == pytest.approx(scale, rel=1e-5)
        assert q[r].tolist() == [_q8(v / scale) for v in y]
    assert q.dtype == torch.int8 and s.dtype == torch.float32


@pytest.mark.parametrize("left", [True, False])
def test_swiglu_quant_dynamic_groups_in_count_mode(left):
    x = torch.randn(5, 8)
    smooth = torch.rand(2, 4) + 0.5
    q, s = tn.npu_swiglu_quant(x, smooth_scales=smooth, group_index=torch.tensor([3, 1], dtype=torch.int32),
                               activate_left=left, quant_mode=1, group_list_type=1)
    for r in range(5):
        a, b = x[r, :4].tolist(), x[r, 4:].tolist()
        act, lin = (a, b) if left else (b, a)
        y = [u / (1 + math.exp(-u)) * w for u, w in zip(act, lin)]
        if r >= 4:                                      # past the groups (3 + 1 rows)
            assert q[r].abs().sum() == 0 and s[r] == 0
            continue
        y = [v * c for v, c in zip(y, smooth[0 if r < 3 else 1].tolist())]
        scale = max(abs(v) for v in y) / 127
        assert s[r].item() == pytest.approx(scale, rel=1e-5)
        assert q[r].tolist() == [_q8(v / scale) for v in y]


def test_swiglu_quant_static_adds_offsets_and_rounds():
    x = torch.randn(4, 6)
    smooth, off = torch.rand(1, 3) * 20, torch.randn(1, 3)
    q, _ = tn.npu_swiglu_quant(x, smooth_scales=smooth, offsets=off, quant_mode=0)
    act = torch.nn.functional.silu(x[:, 3:]) * x[:, :3]
    want = [[_q8(v) for v in row] for row in (act * smooth + off).tolist()]
    assert q.tolist() == want


@pytest.mark.parametrize("swiglu_mode", [0, 1])
def test_dequant_swiglu_quant_int32_input(swiglu_mode):
    x = torch.randint(-500, 500, (3, 8), dtype=torch.int32)
    ws, act_s, qs = torch.rand(1, 8) / 50, torch.rand(3, 1), torch.rand(1, 4) + 0.5
    q, s = tn.npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=act_s, quant_scale=qs, quant_mode=1,
                                       swiglu_mode=swiglu_mode, activate_left=True)
    d = x.double() * ws.double() * act_s.double()
    for r in range(3):
        if swiglu_mode == 0:
            glu, lin = d[r, :4].tolist(), d[r, 4:].tolist()
            y = [g / (1 + math.exp(-g)) * li for g, li in zip(glu, lin)]
        else:
            glu = [min(v, 7.0) for v in d[r, 0::2].tolist()]
            lin = [max(-7.0, min(7.0, v)) for v in d[r, 1::2].tolist()]
            y = [g / (1 + math.exp(-1.702 * g)) * (li + 1.0) for g, li in zip(glu, lin)]
        y = [v * c for v, c in zip(y, qs[0].tolist())]
        scale = max(abs(v) for v in y) / 127
        assert s[r].item() == pytest.approx(scale, rel=1e-4)
        assert q[r].tolist() == pytest.approx([_q8(v / scale) for v in y], abs=1)


def test_quant_scatter_writes_quantised_slices_into_a_copy():
    inp = torch.zeros(2, 6, 4, dtype=torch.int8)
    upd = torch.randn(2, 2, 4) * 10
    scales = torch.rand(1, 1, 4) + 0.5
    out = tn.npu_quant_scatter(inp, torch.tensor([1, 3], dtype=torch.int32), upd, scales, None, axis=-2, quant_axis=-1)
    assert inp.abs().sum() == 0
    for b, start in ((0, 1), (1, 3)):
        for i in range(2):
            assert out[b, start + i].tolist() == [_q8(u / c) for u, c in zip(upd[b, i].tolist(), scales.flatten().tolist())]
    assert out.abs().sum() == sum(out[b, s:s + 2].abs().sum() for b, s in ((0, 1), (1, 3)))


def test_quant_matmul_forms():
    x1 = torch.randint(-5, 5, (3, 8), dtype=torch.int8)
    x2 = torch.randint(-5, 5, (8, 4), dtype=torch.int8)
    acc = torch.einsum("mk,kn->mn", x1.long(), x2.long())
    scale, pt, bias = torch.rand(4), torch.rand(3), torch.randint(-3, 3, (4,), dtype=torch.int32)
    fp = tn.npu_quant_matmul(x1, x2, scale, pertoken_scale=pt, bias=bias, output_dtype=torch.float32)
    torch.testing.assert_close(fp, ((acc + bias) * scale * pt[:, None]).float())
    i32 = tn.npu_quant_matmul(x1, x2, scale, bias=bias, output_dtype=torch.int32)
    assert torch.equal(i32, (acc + bias).int())
    # int64 scale: npu_trans_quant_param keeps the float32 bits in the low 32 bits
    packed = scale.view(torch.int32).long() & 0xFFFFFFFF
    i8 = tn.npu_quant_matmul(x1, x2, packed, offset=torch.tensor([0.4]))
    assert i8.tolist() == [[_q8(v * c + 0.4) for v, c in zip(row, scale.tolist())] for row in acc.tolist()]


def test_quant_matmul_reduce_sum_and_weight_quant_groups():
    x1 = torch.randint(-5, 5, (3, 2, 8), dtype=torch.int8)
    x2 = torch.randint(-5, 5, (3, 8, 4), dtype=torch.int8)
    s1, s2 = torch.rand(3, 2), torch.rand(4)
    out = tn.npu_quant_matmul_reduce_sum(x1, x2, x1_scale=s1, x2_scale=s2)
    want = sum(x1[b].double() @ x2[b].double() * s1[b][:, None] * s2 for b in range(3))
    torch.testing.assert_close(out, want.to(torch.bfloat16))
    x, w = torch.randn(2, 8), torch.randint(-8, 8, (8, 4), dtype=torch.int8)
    scale, off = torch.rand(2, 4), torch.randn(2, 4)     # groups of 4 rows of K
    y = tn.npu_weight_quant_batchmatmul(x, w, scale, off, antiquant_group_size=4)
    deq = torch.cat([(w[:4].float() + off[0]) * scale[0], (w[4:].float() + off[1]) * scale[1]])
    torch.testing.assert_close(y, x @ deq, rtol=1e-5, atol=1e-5)


def test_grouped_matmul_swiglu_quant_per_group():
    x = torch.randint(-4, 4, (5, 8), dtype=torch.int8)       # |C| <= 128: exp stays finite in the loop below
    w = torch.randint(-4, 4, (2, 8, 6), dtype=torch.int8)
    ws, xs = torch.rand(2, 6), torch.rand(5)
    q, s = tn.npu_grouped_matmul_swiglu_quant_v2(x, [w], [ws], xs, torch.tensor([2, 3]), group_list_type=1)
    for r in range(5):
        e = 0 if r < 2 else 1
        c = (x[r].double() @ w[e].double() * ws[e].double() * xs[r].double()).tolist()
        sv = [a / (1 + math.exp(-a)) * g for a, g in zip(c[:3], c[3:])]
        scale = max(abs(v) for v in sv) / 127
        assert s[r].item() == pytest.approx(scale, rel=1e-5)
        assert q[r].tolist() == [_q8(v / scale) for v in sv]


@pytest.mark.parametrize("act", ["relu", "fastgelu", "swiglu"])
def test_ffn_float(act):
    x, w1, w2 = torch.randn(3, 4), torch.randn(4, 8), torch.randn(4 if act == "swiglu" else 8, 4)
    h = x @ w1
    h = {"relu": lambda v: v.clamp(min=0), "fastgelu": lambda v: v / (1 + torch.exp(-1.702 * v)),
         "swiglu": lambda v: v[:, :4] / (1 + torch.exp(-v[:, :4])) * v[:, 4:]}[act](h)
    torch.testing.assert_close(tn.npu_ffn(x, w1, w2, act), h @ w2, rtol=1e-4, atol=1e-4)


def _reference_attention(q, k, v, scale, masked):
    """[B, N, S, D] float64, per (b, n, i): explicit exp/sum over the unmasked keys."""
    b_, n_, sq, d = q.shape
    out = torch.zeros(b_, n_, sq, v.shape[-1], dtype=torch.float64)
    group = n_ // k.shape[1]
    for b in range(b_):
        for n in range(n_):
            for i in range(sq):
                keep = [j for j in range(k.shape[2]) if not masked(i, j)]
                if not keep:
                    continue                               # an invalid row is zeros
                sc = [scale * float(q[b, n, i].double() @ k[b, n // group, j].double()) for j in keep]
                top = max(sc)
                e = [math.exp(s - top) for s in sc]
                for w, j in zip(e, keep):
                    out[b, n, i] += w / sum(e) * v[b, n // group, j].double()
    return out


@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH", "SBH"])
@pytest.mark.parametrize("sparse_mode", [0, 2, 3, 4])
def test_fusion_attention_layouts_and_sparse_modes(layout, sparse_mode):
    b, n, sq, skv, d = 2, 2, 3, 5, 4
    q, k, v = torch.randn(b, n, sq, d), torch.randn(b, n, skv, d), torch.randn(b, n, skv, d)
    to = {"BNSD": lambda t: t, "BSND": lambda t: t.transpose(1, 2),
          "BSH": lambda t: t.transpose(1, 2).flatten(2), "SBH": lambda t: t.permute(2, 0, 1, 3).flatten(2)}[layout]
    mask = torch.ones(2048, 2048, dtype=torch.bool).triu(1) if sparse_mode else torch.rand(sq, skv) > 0.7
    pre, nxt = 1, 0
    rule = {0: lambda i, j: bool(mask[i, j]), 2: lambda i, j: j > i, 3: lambda i, j: j > i + skv - sq,
            4: lambda i, j: (j - i - (skv - sq)) > nxt or (j - i - (skv - sq)) < -pre}[sparse_mode]
    out = tn.npu_fusion_attention(to(q), to(k), to(v), n, layout, atten_mask=mask, scale=0.3, sparse_mode=sparse_mode,
                                  pre_tockens=pre if sparse_mode == 4 else 2147483647,
                                  next_tockens=nxt if sparse_mode == 4 else 2147483647)
    assert len(out) == 7 and out[1].shape == (b, n, sq, 8)
    torch.testing.assert_close(out[0], to(_reference_attention(q, k, v, 0.3, rule)).float(), rtol=1e-4, atol=1e-5)


def test_fusion_attention_without_mask_computes_everything_and_fused_infer_gqa_lse():
    q, k, v = torch.randn(1, 4, 3, 4), torch.randn(1, 2, 6, 4), torch.randn(1, 2, 6, 4)
    want = _reference_attention(q, k, v, 0.5, lambda i, j: False).float()
    got = tn.npu_fusion_attention(q, k, v, 4, "BNSD", scale=0.5, sparse_mode=3)[0]
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    out, lse = tn.npu_fused_infer_attention_score(q, k, v, num_heads=4, num_key_value_heads=2, input_layout="BNSD",
                                                  scale=0.5, softmax_lse_flag=True)
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-5)
    scores = 0.5 * q @ k.repeat_interleave(2, 1).transpose(-1, -2)
    torch.testing.assert_close(lse, torch.logsumexp(scores, -1, keepdim=True), rtol=1e-5, atol=1e-5)


def test_lightning_indexer_scores_and_causal_top_k():
    q, k, w = torch.randn(1, 4, 4, 8), torch.randn(1, 6, 2, 8), torch.randn(1, 4, 4)
    idx, _ = tn.npu_lightning_indexer(q, k, w, sparse_count=4, sparse_mode=3)
    assert idx.shape == (1, 4, 2, 4) and idx.dtype == torch.int32
    for i in range(4):
        for n2 in range(2):
            allowed = [j for j in range(6) if j <= (6 - 4) + i]
            score = {j: sum(w[0, i, h].item() * max(0.0, float(q[0, i, h] @ k[0, j, n2]))
                            for h in (2 * n2, 2 * n2 + 1)) for j in allowed}
            best = sorted(allowed, key=lambda j: -score[j])[:4]
            got = idx[0, i, n2].tolist()
            assert [score[j] for j in got if j >= 0] == pytest.approx([score[j] for j in best], rel=1e-4)
            assert got.count(-1) == max(0, 4 - len(allowed))


def test_sparse_flash_attention_attends_the_selected_blocks_only():
    q, k, v = torch.randn(1, 3, 2, 4), torch.randn(1, 8, 1, 4), torch.randn(1, 8, 1, 4)
    idx = torch.tensor([[[[0, 3]], [[1, -1]], [[2, 9]]]], dtype=torch.int32)     # blocks of 2 tokens; 9 is out of range
    out = tn.npu_sparse_flash_attention(q, k, v, idx, 0.5, sparse_block_size=2, sparse_mode=0)[0]
    for i in range(3):
        keys = [t for blk in idx[0, i, 0].tolist() if 0 <= blk < 4 for t in (2 * blk, 2 * blk + 1)]
        for h in range(2):
            sc = [0.5 * float(q[0, i, h] @ k[0, j, 0]) for j in keys]
            e = [math.exp(x - max(sc)) for x in sc]
            want = sum(ei / sum(e) * v[0, j, 0] for ei, j in zip(e, keys))
            torch.testing.assert_close(out[0, i, h], want, rtol=1e-4, atol=1e-5)
