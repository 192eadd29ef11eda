"""DataCopy with block parameters, DataCopyPad with padding, atomic stores, Gather, Sort/TopK."""

import numpy as np

PAD = """
@kernel
def k(x, z, rows, cols):
    pipe = TPipe(); q = TQueBind(TPosition.VECIN, TPosition.VECOUT, 1)
    width = (cols * 4 + 31) // 32 * 8            # row pitch in UB, in fp32 elements
    pipe.InitBuffer(q, 1, rows * width * 4)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x); zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    t = q.AllocTensor(float32)
    DataCopyPad(t, xg, DataCopyExtParams(rows, cols * 4, 0, 0, 0), DataCopyPadExtParams(True, 0, width - cols, -1.0))
    q.EnQue(t); t = q.DeQue(float32)
    DataCopy(zg, t, rows * width)
    q.FreeTensor(t)

def forward(x):
    rows, cols = x.shape
    width = (cols * 4 + 31) // 32 * 8
    z = empty((rows, width), float32)
    k[1](x, z, rows, cols)
    return z
"""


def test_data_copy_pad_places_rows_32_byte_aligned_with_padding(run):
    x = np.arange(5 * 13, dtype=np.float32).reshape(5, 13)
    _, result = run(PAD, [x])
    assert result.error is None, result.error
    out = result.outputs[0]
    assert out.shape == (5, 16)
    np.testing.assert_array_equal(out[:, :13], x)
    np.testing.assert_array_equal(out[:, 13:], -1.0)
    assert result.profile.bytes["GM->UB"] == x.nbytes


STRIDED = """
@kernel
def k(x, z):
    pipe = TPipe(); q = TQueBind(TPosition.VECIN, TPosition.VECOUT, 1); pipe.InitBuffer(q, 1, 4 * 64)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x); zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    t = q.AllocTensor(float32)
    DataCopy(t, xg, DataCopyParams(4, 1, 1, 0))   # 4 blocks of 32 B, skipping 32 B between them in GM
    q.EnQue(t); t = q.DeQue(float32)
    DataCopy(zg, t, DataCopyParams(1, 4, 0, 0))
    q.FreeTensor(t)

def forward(x):
    z = empty((32,), float32)
    k[1](x, z)
    return z
"""


def test_data_copy_params_strides_are_in_32_byte_blocks(run):
    x = np.arange(64, dtype=np.float32)
    _, result = run(STRIDED, [x])
    assert result.error is None, result.error
    np.testing.assert_array_equal(result.outputs[0], x.reshape(8, 8)[::2].reshape(-1))


ATOMIC = """
@kernel
def zero(z, n):
    pipe = TPipe(); b = TBuf(TPosition.VECCALC); pipe.InitBuffer(b, n * 4)
    zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    t = b.Get(float32)
    Duplicate(t, 0.0, n)
    SetFlag(HardEvent.V_MTE3, 0); WaitFlag(HardEvent.V_MTE3, 0)
    DataCopy(zg, t, n)

@kernel
def colsum(x, z, n):
    pipe = TPipe(); q = TQueBind(TPosition.VECIN, TPosition.VECOUT, 1); pipe.InitBuffer(q, 1, n * 4)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x, GetBlockIdx() * n, n)
    zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    t = q.AllocTensor(float32); DataCopy(t, xg, n); q.EnQue(t); t = q.DeQue(float32)
    SetAtomicAdd(float32)
    DataCopy(zg, t, n)
    SetAtomicNone()
    q.FreeTensor(t)

def forward(x):
    rows, cols = x.shape
    z = empty((cols,), float32)
    zero[1](z, cols)
    colsum[rows](x, z, cols)
    return z
"""


def test_atomic_add_accumulates_blocks_into_one_output(run):
    x = np.arange(8 * 64, dtype=np.float32).reshape(8, 64)
    _, result = run(ATOMIC, [x])
    assert result.error is None, result.error
    np.testing.assert_array_equal(result.outputs[0], x.sum(axis=0))
    assert result.profile.launches == 2


SORT = """
@kernel
def k(x, v, i, n, kk):
    pipe = TPipe(); q = TQue(TPosition.VECIN, 1); b = TBuf(TPosition.VECCALC); c = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(q, 1, n * 4); pipe.InitBuffer(b, n * 4); pipe.InitBuffer(c, n * 4)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x)
    vg = GlobalTensor(); vg.SetGlobalBuffer(v); ig = GlobalTensor(); ig.SetGlobalBuffer(i)
    t = q.AllocTensor(float32); DataCopy(t, xg, n); q.EnQue(t); t = q.DeQue(float32)
    vals = b.Get(float32); idx = c.Get(int32)
    TopK(vals, idx, t, kk, n)
    SetFlag(HardEvent.V_MTE3, 0); WaitFlag(HardEvent.V_MTE3, 0)
    DataCopy(vg, vals, kk); DataCopy(ig, idx, kk)
    q.FreeTensor(t)

def forward(x, kk=8):
    v = empty((kk,), float32); i = empty((kk,), int32)
    k[1](x, v, i, x.numel(), kk)
    return v, i
"""


def test_topk_values_and_indices(run):
    x = np.random.default_rng(3).permutation(256).astype(np.float32)
    _, result = run(SORT, [x])
    assert result.error is None, result.error
    values, index = result.outputs
    np.testing.assert_array_equal(values, np.sort(x)[::-1][:8])
    np.testing.assert_array_equal(x[index], values)


GATHER = """
@kernel
def k(x, off, z, n):
    pipe = TPipe(); a = TBuf(TPosition.VECCALC); o = TBuf(TPosition.VECCALC); r = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(a, n * 4); pipe.InitBuffer(o, n * 4); pipe.InitBuffer(r, n * 4)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x); og = GlobalTensor(); og.SetGlobalBuffer(off)
    zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    src = a.Get(float32); offs = o.Get(uint32); dst = r.Get(float32)
    DataCopy(src, xg, n); DataCopy(offs, og, n)
    SetFlag(HardEvent.MTE2_V, 0); WaitFlag(HardEvent.MTE2_V, 0)
    Gather(dst, src, offs, 0, n)
    SetFlag(HardEvent.V_MTE3, 0); WaitFlag(HardEvent.V_MTE3, 0)
    DataCopy(zg, dst, n)

def forward(x, off):
    z = empty_like(x)
    k[1](x, off, z, x.numel())
    return z
"""


def test_gather_uses_byte_offsets(run):
    x = np.arange(64, dtype=np.float32) * 10
    perm = np.random.default_rng(0).permutation(64).astype(np.uint32)
    _, result = run(GATHER, [x, perm * 4])
    assert result.error is None, result.error
    np.testing.assert_array_equal(result.outputs[0], x[perm])
