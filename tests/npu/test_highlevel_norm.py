"""SoftMax and LayerNorm: values and their extra outputs against torch, the instruction sequence
against the one derived by hand from the A2 implementation, tiling by the temp size, errors."""

from collections import Counter

import numpy as np
import pytest
import torch

SOFTMAX = """
@kernel
def k(x, z, s, mx, M, K, oriK, tmp):
    pipe = TPipe(); qa = TQue(TPosition.VECIN, 1); qo = TQue(TPosition.VECOUT, 1)
    qs = TQue(TPosition.VECOUT, 1); qm = TQue(TPosition.VECOUT, 1); tb = TBuf(TPosition.VECCALC)
    n = M * K
    pipe.InitBuffer(qa, 1, n * sizeof(x.dtype)); pipe.InitBuffer(qo, 1, n * sizeof(x.dtype)); pipe.InitBuffer(tb, tmp)
    pipe.InitBuffer(qs, 1, M * 32); pipe.InitBuffer(qm, 1, M * 32)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x); zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    sg = GlobalTensor(); sg.SetGlobalBuffer(s); mg = GlobalTensor(); mg.SetGlobalBuffer(mx)
    a = qa.AllocTensor(x.dtype); DataCopy(a, xg, n); qa.EnQue(a); a = qa.DeQue(x.dtype)
    o = qo.AllocTensor(x.dtype); t = tb.Get(uint8); ss = qs.AllocTensor(s.dtype); mm = qm.AllocTensor(s.dtype)
    __CALL__  # @call
    qo.EnQue(o); o = qo.DeQue(x.dtype); DataCopy(zg, o, n); qo.FreeTensor(o); qa.FreeTensor(a)
    qs.EnQue(ss); ss = qs.DeQue(s.dtype); DataCopy(sg, ss, M * 32 // sizeof(s.dtype)); qs.FreeTensor(ss)
    qm.EnQue(mm); mm = qm.DeQue(s.dtype); DataCopy(mg, mm, M * 32 // sizeof(s.dtype)); qm.FreeTensor(mm)

def forward(x, oriK, tmp):
    M, K = x.shape
    z = empty(x.shape, x.dtype); s = empty((M, 32 // sizeof(__SDT__)), __SDT__); m = empty((M, 32 // sizeof(__SDT__)), __SDT__)
    k[1](x, z, s, m, M, K, oriK, tmp)
    return z, s, m
"""
FULL = "SoftMax(o, ss, mm, a, t, SoftMaxShapeInfo(M, K, M, oriK))"


def softmax_run(run, x, ori_k=None, sdt="float32", tmp=32768, call=FULL, **kw):
    src = SOFTMAX.replace("__CALL__", call).replace("__SDT__", sdt)
    return run(src, [x, ori_k or x.shape[1], tmp], **kw)


def reference(x, ori_k):
    v = torch.from_numpy(x[:, :ori_k].astype(np.float64))
    mx = v.max(-1, keepdim=True).values
    e = torch.exp(v - mx)
    return (e / e.sum(-1, keepdim=True)).numpy(), mx.numpy(), e.sum(-1, keepdim=True).numpy()


@pytest.mark.parametrize("m, k, ori_k", [(16, 256, 256), (5, 1024, 1000), (3, 40, 37), (1, 512, 512), (9, 2048, 2048),
                                          (4, 64, 64)])
def test_softmax_float_values_and_row_outputs(run, m, k, ori_k):
    x = (np.random.default_rng(m).standard_normal((m, k)) * 3).astype(np.float32)
    _, result = softmax_run(run, x, ori_k)
    assert result.error is None, result.error
    z, s, mx = result.outputs
    want, want_max, want_sum = reference(x, ori_k)
    np.testing.assert_allclose(z[:, :ori_k], want, rtol=0, atol=2e-7)
    np.testing.assert_array_equal(mx, np.repeat(want_max, 8, axis=1).astype(np.float32))  # one 32 B block per row
    np.testing.assert_allclose(s, np.repeat(want_sum, 8, axis=1), rtol=2e-6)


@pytest.mark.parametrize("sdt, ori_k", [("float16", 128), ("float32", 100)])
def test_softmax_half(run, sdt, ori_k):
    x = (np.random.default_rng(3).standard_normal((40, 128)) * 3).astype(np.float16)
    _, result = softmax_run(run, x, ori_k, sdt=sdt)
    assert result.error is None, result.error
    z, s, mx = result.outputs
    want, want_max, want_sum = reference(x, ori_k)
    np.testing.assert_allclose(z[:, :ori_k].astype(np.float64), want, rtol=0, atol=2 ** -11)
    blk = 32 // np.dtype(sdt).itemsize
    np.testing.assert_array_equal(mx.astype(np.float64), np.repeat(want_max, blk, axis=1))
    np.testing.assert_allclose(s.astype(np.float64), np.repeat(want_sum, blk, axis=1), rtol=1e-3 if sdt == "float16" else 2e-6)


def test_softmax_instruction_sequence(run):
    """[8, 256] float: max = Max x3 (blocks 0+1, then 2 and 3) + BlockReduceMax x2 + Brcb + copy; Sub per row
    (K >= 192) x8; Exp x1; sum as max with Add/BlockReduceSum; Div per row x8 (membase/v220 + common code)."""
    x = np.random.default_rng(0).standard_normal((8, 256)).astype(np.float32)
    _, result = softmax_run(run, x, trace=True)
    assert result.error is None, result.error
    v = Counter(e["name"] for e in result.trace if e.get("ph") == "X" and e.get("tid") == "V")
    assert v == {"Max": 3, "BlockReduceMax": 2, "Brcb": 2, "DataCopy": 2, "Sub": 8, "Exp": 1, "Add": 3,
                 "BlockReduceSum": 2, "Div": 8}


def test_softmax_tiles_rows_by_the_temp_size(run):
    """Float: a row needs 8 + 64 floats of temp; the documented minimum for K = 256, (8 + 256 + 64) x 4 B,
    holds 4 rows -> 6 rows run as chunks of 4 and 2: same values, two Exps instead of one."""
    x = np.random.default_rng(5).standard_normal((6, 256)).astype(np.float32)
    _, small = softmax_run(run, x, tmp=(8 + 256 + 64) * 4, trace=True)
    _, big = softmax_run(run, x, tmp=32768, trace=True)
    assert small.error is None and big.error is None, (small.error, big.error)
    np.testing.assert_array_equal(small.outputs[0], big.outputs[0])
    exps = [sum(1 for e in r.trace if e.get("name") == "Exp") for r in (small, big)]
    assert exps == [2, 1]


def test_softmax_without_row_outputs(run):
    x = np.random.default_rng(7).standard_normal((4, 128)).astype(np.float32)
    _, result = softmax_run(run, x, call="SoftMax(o, a, t, SoftMaxShapeInfo(M, K, M, oriK))")
    assert result.error is None, result.error
    np.testing.assert_allclose(result.outputs[0], reference(x, 128)[0], atol=2e-7)


def test_softmax_temp_and_shape_errors(run, check_error):
    x = np.ones((4, 256), np.float32)
    src, result = softmax_run(run, x, tmp=512)
    check_error(result, src, "KernelRuntimeError", "@call", "needs at least 1312 B")
    src, result = softmax_run(run, np.ones((4, 48), np.float32), call="SoftMax(o, a, t, SoftMaxShapeInfo(M, 44, M, 44))")
    check_error(result, src, "KernelRuntimeError", "@call", "32 B aligned")


LAYERNORM = """
@kernel
def k(x, g, bt, z, mz, vz, B, S, H, tmp):
    pipe = TPipe(); qa = TQue(TPosition.VECIN, 1); qg = TQue(TPosition.VECIN, 1); qo = TQue(TPosition.VECOUT, 1)
    qm = TQue(TPosition.VECOUT, 1); tb = TBuf(TPosition.VECCALC)
    n = B * S * H; r = B * S; rp = (r * sizeof(x.dtype) + 31) // 32 * 32 // sizeof(x.dtype)
    pipe.InitBuffer(qa, 1, n * sizeof(x.dtype)); pipe.InitBuffer(qo, 1, n * sizeof(x.dtype)); pipe.InitBuffer(tb, tmp)
    pipe.InitBuffer(qg, 1, 2 * H * sizeof(x.dtype)); pipe.InitBuffer(qm, 1, 2 * rp * sizeof(x.dtype))
    xg = GlobalTensor(); xg.SetGlobalBuffer(x); zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    gg = GlobalTensor(); gg.SetGlobalBuffer(g); bg = GlobalTensor(); bg.SetGlobalBuffer(bt)
    mg = GlobalTensor(); mg.SetGlobalBuffer(mz); vg = GlobalTensor(); vg.SetGlobalBuffer(vz)
    a = qa.AllocTensor(x.dtype); DataCopy(a, xg, n); qa.EnQue(a); a = qa.DeQue(x.dtype)
    gb = qg.AllocTensor(x.dtype); DataCopy(gb, gg, H); DataCopy(gb[H], bg, H); qg.EnQue(gb); gb = qg.DeQue(x.dtype)
    o = qo.AllocTensor(x.dtype); t = tb.Get(uint8); mv = qm.AllocTensor(x.dtype)
    LayerNorm(o, mv, mv[rp], a, gb, gb[H], t, 1e-5, LayerNormShapeInfo(B, S, H, H))  # @call
    qo.EnQue(o); o = qo.DeQue(x.dtype); DataCopy(zg, o, n); qo.FreeTensor(o); qa.FreeTensor(a); qg.FreeTensor(gb)
    qm.EnQue(mv); mv = qm.DeQue(x.dtype); p = DataCopyExtParams(1, r * sizeof(x.dtype), 0, 0, 0)
    DataCopyPad(mg, mv, p); DataCopyPad(vg, mv[rp], p); qm.FreeTensor(mv)

def forward(x, g, bt, tmp):
    B, S, H = x.shape
    z = empty(x.shape, x.dtype); m = empty((B, S), x.dtype); v = empty((B, S), x.dtype)
    k[1](x, g, bt, z, m, v, B, S, H, tmp)
    return z, m, v
"""


@pytest.mark.parametrize("b, s, h, dtype, tmp, tol", [
    (2, 8, 64, np.float32, 8192, 2e-6), (2, 5, 256, np.float32, 16384, 2e-6), (1, 3, 1024, np.float32, 65536, 2e-6),
    (2, 8, 96, np.float32, 4096, 2e-6), (2, 8, 128, np.float16, 16384, 4e-3), (1, 4, 32, np.float32, 2048, 2e-6),
])
def test_layernorm_values_mean_and_variance(run, b, s, h, dtype, tmp, tol):
    rng = np.random.default_rng(h)
    x = (rng.standard_normal((b, s, h)) * 2 + 1).astype(dtype)
    g, bt = rng.standard_normal(h).astype(dtype), rng.standard_normal(h).astype(dtype)
    _, result = run(LAYERNORM, [x, g, bt, tmp])
    assert result.error is None, result.error
    z, m, v = (o.astype(np.float64) for o in result.outputs)
    tx = torch.from_numpy(x.astype(np.float64))
    want = torch.nn.functional.layer_norm(tx, (h,), torch.from_numpy(g.astype(np.float64)),
                                          torch.from_numpy(bt.astype(np.float64)), eps=1e-5).numpy()
    np.testing.assert_allclose(z, want, rtol=0, atol=tol)
    np.testing.assert_allclose(m, tx.mean(-1).numpy(), rtol=0, atol=tol / 4)
    np.testing.assert_allclose(v, tx.var(-1, unbiased=False).numpy(), rtol=tol, atol=tol / 4)


def test_layernorm_temp_minimum(run, check_error):
    x = np.ones((2, 8, 64), np.float32)
    src, result = run(LAYERNORM, [x, np.ones(64, np.float32), np.zeros(64, np.float32), 512])
    check_error(result, src, "KernelRuntimeError", "@call", "needs at least 896 B")  # 3 x 256 + 2 x 64
