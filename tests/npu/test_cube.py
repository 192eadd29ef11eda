"""The cube path: GM -> L1 (ND->NZ) -> LoadData -> Mmad (fp32 accumulation) -> Fixpipe (fp32 -> fp16)."""

import re

import numpy as np
import pytest

from sage.npu.hardware import load_preset
from tests.npu.conftest import line_of

MATMUL = """
@kernel
def mm(a, b, c, M, N, K, KT):
    pipe = TPipe()
    qa1 = TQue(TPosition.A1, 1); qb1 = TQue(TPosition.B1, 1)
    qa2 = TQue(TPosition.A2, 1); qb2 = TQue(TPosition.B2, 1); qc = TQue(TPosition.CO1, 1)
    pipe.InitBuffer(qa1, 1, M * KT * 2); pipe.InitBuffer(qb1, 1, KT * N * 2)
    pipe.InitBuffer(qa2, 1, M * KT * 2); pipe.InitBuffer(qb2, 1, KT * N * 2)
    pipe.InitBuffer(qc, 1, M * N * 4)
    ag = GlobalTensor(); ag.SetGlobalBuffer(a)
    bg = GlobalTensor(); bg.SetGlobalBuffer(b)
    cg = GlobalTensor(); cg.SetGlobalBuffer(c)
    c1 = qc.AllocTensor(float32)
    for kt in range(K // KT):
        a1 = qa1.AllocTensor(float16); b1 = qb1.AllocTensor(float16)
        DataCopy(a1, ag[kt * KT], Nd2NzParams(1, M, KT, 0, K, M, 1, 0))
        DataCopy(b1, bg[kt * KT * N], Nd2NzParams(1, KT, N, 0, N, KT, 1, 0))
        qa1.EnQue(a1); qb1.EnQue(b1)
        a1 = qa1.DeQue(float16); b1 = qb1.DeQue(float16)
        a2 = qa2.AllocTensor(float16); b2 = qb2.AllocTensor(float16)
        LoadData(a2, a1, LoadData2DParams(M, KT))
        LoadData(b2, b1, LoadData2DParams(KT, N))
        qa2.EnQue(a2); qb2.EnQue(b2)
        qa1.FreeTensor(a1); qb1.FreeTensor(b1)
        a2 = qa2.DeQue(float16); b2 = qb2.DeQue(float16)
        Mmad(c1, a2, b2, MmadParams(M, N, KT, kt == 0))  # @mmad
        qa2.FreeTensor(a2); qb2.FreeTensor(b2)
    qc.EnQue(c1)
    c1 = qc.DeQue(float32)
    Fixpipe(cg, c1, FixpipeParams(M, N))
    qc.FreeTensor(c1)

def forward(a, b, blocks=1):
    M, K = a.shape
    N = b.shape[1]
    c = empty((M, N), float16)
    mm[blocks](a, b, c, M, N, K, 32)
    return c
"""


def test_matmul_fp16_in_fp32_accumulate_fp16_out(run):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 96)).astype(np.float16)
    b = rng.standard_normal((96, 48)).astype(np.float16)
    _, result = run(MATMUL, [a, b])
    assert result.error is None, result.error
    # fp32 accumulation over three K tiles, rounded once to fp16: at most one fp16 ulp from the exact product
    _assert_fp16_product(result.outputs[0], a, b)
    assert result.outputs[0].dtype == np.float16
    p = result.profile
    assert p.bytes["GM->L1"] == a.nbytes + b.nbytes
    assert p.bytes["L0C->GM"] == result.outputs[0].nbytes


def _assert_fp16_product(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(out.astype(np.float32), want.astype(np.float32), rtol=1e-3, atol=1e-3)


def test_mad_cycles_follow_the_cube_formula(run):
    a = np.ones((64, 96), np.float16)
    b = np.ones((96, 48), np.float16)
    _, result = run(MATMUL, [a, b])
    cube = load_preset().cube
    per_mmad = (64 // 16) * (32 // 16) * (48 // 16) + cube.fixed_cycles
    assert result.profile.pipes["M"].busy_cycles == round(3 * per_mmad)  # the profile counts whole cycles


def test_blocks_writing_the_same_output_bytes_race(run):
    # every block of this test kernel computes the whole product: two blocks write the same GM bytes
    a = np.ones((32, 32), np.float16)
    _, result = run(MATMUL, [a, a], kwargs={"blocks": 2})
    assert result.error is not None and result.error.type == "RaceError"
    msg = result.error.message   # blocks run in a random order: either one is the second writer
    assert re.search(r"Fixpipe on AIC block [01] writes .* Fixpipe on AIC block [01] ", msg), msg


def test_l0_capacity_is_checked(run, check_error):
    a = np.ones((256, 256), np.float16)
    src, result = run(MATMUL.replace("mm[blocks](a, b, c, M, N, K, 32)", "mm[blocks](a, b, c, M, N, K, 256)"), [a, a])
    check_error(result, src, "CapacityError", "pipe.InitBuffer(qa2", "L0A")


HELPER = """
@kernel
def mm(a, b, c, M, N, K, ta, tb, dt):
    pipe = TPipe()
    ag = GlobalTensor(); ag.SetGlobalBuffer(a)
    bg = GlobalTensor(); bg.SetGlobalBuffer(b)
    cg = GlobalTensor(); cg.SetGlobalBuffer(c)
    m = Matmul(pipe, dt, 64, 32, 32)
    m.SetTensorA(ag, M, K, ta); m.SetTensorB(bg, K, N, tb)
    m.IterateAll(cg)

def forward(a, b, ta=False, tb=False, out=float16):
    M = a.shape[1] if ta else a.shape[0]
    K = a.shape[0] if ta else a.shape[1]
    N = b.shape[0] if tb else b.shape[1]
    c = empty((M, N), out)
    mm[4](a, b, c, M, N, K, ta, tb, a.dtype)
    return c
"""


@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_helper_with_transposes_and_edge_tiles(run, ta, tb):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((100, 72)).astype(np.float16)   # M=100, K=72: edge tiles in M and K
    b = rng.standard_normal((72, 50)).astype(np.float16)    # N=50
    args = [np.ascontiguousarray(a.T) if ta else a, np.ascontiguousarray(b.T) if tb else b]
    _, result = run(HELPER, args, kwargs={"ta": ta, "tb": tb})
    assert result.error is None, result.error
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(result.outputs[0].astype(np.float32), want, rtol=2e-3, atol=2e-2)
    assert result.profile.pipes["M"].busy_cycles > 0 and result.profile.pipes["FIX"].busy_cycles > 0


def test_matmul_helper_int8_accumulates_in_int32(run):
    rng = np.random.default_rng(2)
    a = rng.integers(-8, 8, (40, 70)).astype(np.int8)
    b = rng.integers(-8, 8, (70, 33)).astype(np.int8)
    _, result = run(HELPER.replace("Matmul(pipe, dt, 64, 32, 32)", "Matmul(pipe, dt, 64, 32, 64)"), [a, b],
                    kwargs={"out": "int32"})
    assert result.error is None, result.error
    np.testing.assert_array_equal(result.outputs[0], a.astype(np.int32) @ b.astype(np.int32))


PADDED_K = """
@kernel
def mm(a, b, c):
    pipe = TPipe()
    qa1 = TQue(TPosition.A1, 1); qb1 = TQue(TPosition.B1, 1)
    qa2 = TQue(TPosition.A2, 1); qb2 = TQue(TPosition.B2, 1); qc = TQue(TPosition.CO1, 1)
    pipe.InitBuffer(qa1, 1, 16 * 32 * 2); pipe.InitBuffer(qb1, 1, 32 * 16 * 2)
    pipe.InitBuffer(qa2, 1, 16 * 32 * 2); pipe.InitBuffer(qb2, 1, 32 * 16 * 2)
    pipe.InitBuffer(qc, 1, 16 * 16 * 4)
    ag = GlobalTensor(); ag.SetGlobalBuffer(a)
    bg = GlobalTensor(); bg.SetGlobalBuffer(b)
    cg = GlobalTensor(); cg.SetGlobalBuffer(c)
    a1 = qa1.AllocTensor(float16); b1 = qb1.AllocTensor(float16)
    DataCopy(a1, ag[0], Nd2NzParams(1, 16, 20, 0, 20, 16, 1, 0))
    DataCopy(b1, bg[0], 20 * 16)      # B's 20 rows; rows 20..31 of the fractal are never written
    qa1.EnQue(a1); qb1.EnQue(b1)
    a1 = qa1.DeQue(float16); b1 = qb1.DeQue(float16)
    a2 = qa2.AllocTensor(float16); b2 = qb2.AllocTensor(float16)
    LoadData(a2, a1, LoadData2DParams(16, 32))
    LoadData(b2, b1, LoadData2DParams(32, 16))
    qa2.EnQue(a2); qb2.EnQue(b2)
    qa1.FreeTensor(a1); qb1.FreeTensor(b1)
    a2 = qa2.DeQue(float16); b2 = qb2.DeQue(float16)
    c1 = qc.AllocTensor(float32)
    Mmad(c1, a2, b2, MmadParams(16, 16, 20, True))
    qa2.FreeTensor(a2); qb2.FreeTensor(b2)
    qc.EnQue(c1)
    c1 = qc.DeQue(float32)
    Fixpipe(cg, c1, FixpipeParams(16, 16))
    qc.FreeTensor(c1)

def forward(a, b):
    c = empty((16, 16), float16)
    mm[1](a, b, c)
    return c
"""


def test_mmad_ignores_the_padding_of_a_partial_k_fractal(run):
    """k = 20 of fp16 fills a 32-wide K fractal partly. CANN's Mmad page for Atlas A2/A3
    (asc-devkit docs/api/context/Mmad.md: the padded, invalid data of the alignment "is
    ignored when the matrix multiply executes") - so B's rows 20..31, never written and
    reading as NaN here, change nothing."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 20)).astype(np.float16)
    b = rng.standard_normal((20, 16)).astype(np.float16)
    _, result = run(PADDED_K, [a, b])
    assert result.error is None, result.error
    assert np.isfinite(result.outputs[0]).all()
    _assert_fp16_product(result.outputs[0], a, b)


def test_a_plain_copy_into_l1_is_not_a_cube_operand(run):
    """DataCopy(l1, gm, count) copies ND rows as they are; LoadData reads L1 as NZ fractals, so
    on the chip a 32-wide B would reach the cube in the wrong order (the exploit: one burst
    instead of one per row, and the right answer here). Refused; 16-wide rows (one fractal, 32 B)
    are the same in both layouts and pass (test_mmad_ignores_the_padding_of_a_partial_k_fractal)."""
    src, result = run(PADDED_K.replace("pipe.InitBuffer(qb1, 1, 32 * 16 * 2)", "pipe.InitBuffer(qb1, 1, 32 * 32 * 2)")
                      .replace("pipe.InitBuffer(qb2, 1, 32 * 16 * 2)", "pipe.InitBuffer(qb2, 1, 32 * 32 * 2)")
                      .replace("DataCopy(b1, bg[0], 20 * 16)", "DataCopy(b1, bg[0], 32 * 32)")
                      .replace("LoadData(b2, b1, LoadData2DParams(32, 16))", "LoadData(b2, b1, LoadData2DParams(32, 32))  # load-b"),
                      [np.ones((16, 32), np.float16), np.ones((32, 32), np.float16)])
    assert result.error is not None and result.error.type == "UnsupportedError", result.error
    assert result.error.line == line_of(src, "# load-b") and "Nd2NzParams" in result.error.message


def test_mmad_widens_halves_bit_for_bit_as_astype():
    """Mmad's fp16 -> fp32 table lookup gives numpy's astype for every one of the 65,536 half
    bit patterns (subnormals, infinities and NaN payloads included), as a contiguous array,
    on a strided tile too (the [:m, :k] corner of a padded fractal)."""
    from sage.npu.ascendc.cube import _widen

    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).reshape(256, 256)
    for x in (halves, halves[:200, :77]):
        got = _widen(x, np.dtype(np.float32))
        assert got.flags["C_CONTIGUOUS"] and got.dtype == np.float32 and got.shape == x.shape
        assert np.array_equal(got.view(np.uint32), x.astype(np.float32).view(np.uint32))
    ints = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    assert np.array_equal(_widen(ints, np.dtype(np.int32)), ints.astype(np.int32))


def test_lanes_holding_the_same_tile_share_one_widened_copy_with_astypes_values():
    """_widen_all: every lane's tile comes back as its own astype (bit for bit, NaN payloads
    too); lanes with the same bytes share one array, and a tile seen more than SHARED_TILES
    distinct tiles ago is widened again, with the same values."""
    from sage.npu.ascendc.cube import SHARED_TILES, _widen_all

    rng = np.random.default_rng(2)
    distinct = [rng.standard_normal((32, 48)).astype(np.float16) for _ in range(SHARED_TILES + 3)]
    distinct[1][0, 0] = np.uint16(0x7E01).view(np.float16)   # a NaN with a payload
    tiles = [distinct[0], distinct[1], distinct[0].copy(), distinct[1][:, :].copy()] + distinct[2:] + [distinct[0]]
    got = _widen_all(tiles, np.dtype(np.float32))
    for x, w in zip(tiles, got):
        assert np.array_equal(w.view(np.uint32), x.astype(np.float32).view(np.uint32))
    assert got[0] is got[2] and got[1] is got[3] and got[0] is not got[1]
    assert got[-1] is not got[0]   # past the window: widened again
    assert len({id(w) for w in got}) == len(distinct) + 1
