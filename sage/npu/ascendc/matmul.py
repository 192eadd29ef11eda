"""Matmul: a high-level helper over the cube path, costed as the path it issues.

It issues exactly what a hand-written cube kernel would (DataCopy ND->NZ into A1/B1,
LoadData into A2/B2, Mmad into CO1, Fixpipe to GM, every queue double-buffered), so its
time is the path's time; it only saves the kernel author the bookkeeping.
"""

from __future__ import annotations

from sage.npu import dtypes
from sage.npu.errors import KernelRuntimeError
from sage.npu.ascendc import _checks as chk
from sage.npu.ascendc.cube import Fixpipe, LoadData, Mmad, col_unit
from sage.npu.ascendc.datamove import DataCopy
from sage.npu.ascendc.params import FixpipeParams, LoadData2DParams, MmadParams, Nd2NzParams
from sage.npu.ascendc.queues import TPipe, TPosition, TQue
from sage.npu.ascendc.sync import GetBlockIdx, GetBlockNum
from sage.npu.ascendc.tensors import GlobalTensor
from sage.npu.sim.lanes import lane_min, lane_range, lane_ready

_ACC = {dtypes.float16: dtypes.float32, dtypes.bfloat16: dtypes.float32, dtypes.float32: dtypes.float32,
        dtypes.int8: dtypes.int32}


def _ceil(n: int, unit: int) -> int:
    return -(-n // unit) * unit


@lane_ready
class Matmul:
    """Matmul(pipe, dtype, baseM, baseN, baseK): C = A @ B on the cube; then SetTensorA(gm, M, K, transpose),
    SetTensorB(gm, K, N, transpose), IterateAll(c_gm, ldc=N). A/B row-major ([M,K]/[K,N]; [K,M]/[N,K] if
    transposed); baseM x baseN output tiles go round robin to the blocks. Takes 2 buffers each of A1 B1 A2 B2
    CO1 from the pipe; costs what the cube path costs."""

    API = ("SetTensorA", "SetTensorB", "IterateAll")

    def __init__(self, pipe: TPipe, dtype=dtypes.float16, baseM: int = 128, baseN: int = 128, baseK: int = 64):
        self.dtype = dtypes.as_dtype(dtype)
        if self.dtype not in _ACC:
            raise KernelRuntimeError(f"Matmul: inputs must be float16, bfloat16, float32 or int8, not {self.dtype.name}")
        self.bm, self.bn, self.bk = (chk.count_arg(v, "Matmul base size") for v in (baseM, baseN, baseK))
        unit = col_unit(self.dtype)
        if self.bm % 16 or self.bn % unit or self.bk % unit:
            raise KernelRuntimeError(f"Matmul: baseM must be a multiple of 16, baseN and baseK of {unit}")
        isz = self.dtype.itemsize
        self.qa1, self.qb1 = TQue(TPosition.A1, 2), TQue(TPosition.B1, 2)
        self.qa2, self.qb2 = TQue(TPosition.A2, 2), TQue(TPosition.B2, 2)
        self.qc = TQue(TPosition.CO1, 2)
        pipe.InitBuffer(self.qa1, 2, self.bm * self.bk * isz)
        pipe.InitBuffer(self.qb1, 2, self.bk * self.bn * isz)
        pipe.InitBuffer(self.qa2, 2, self.bm * self.bk * isz)
        pipe.InitBuffer(self.qb2, 2, self.bk * self.bn * isz)
        pipe.InitBuffer(self.qc, 2, self.bm * self.bn * 4)
        self.a = self.b = None

    @lane_ready
    def SetTensorA(self, gm: GlobalTensor, M: int, K: int, transpose: bool = False) -> None:
        """A is [M, K] row-major in GM, or [K, M] when transpose (not for int8)."""
        self._no_int8_transpose(transpose)
        self.a, self.M, self.K, self.ta = chk.gm_tensor(gm, "SetTensorA"), int(M), int(K), bool(transpose)

    @lane_ready
    def SetTensorB(self, gm: GlobalTensor, K: int, N: int, transpose: bool = False) -> None:
        """B is [K, N] row-major in GM, or [N, K] when transpose (not for int8)."""
        self._no_int8_transpose(transpose)
        self.b, self.Kb, self.N, self.tb = chk.gm_tensor(gm, "SetTensorB"), int(K), int(N), bool(transpose)

    def _no_int8_transpose(self, transpose: bool) -> None:
        if transpose and self.dtype == dtypes.int8:
            raise KernelRuntimeError("Matmul: transposed int8 operands are not supported; transpose on the vector unit first")

    @lane_ready
    def IterateAll(self, c: GlobalTensor, ldc: int | None = None) -> None:
        """Compute this block's output tiles into C ([M, N] row-major, row pitch ldc, default N)."""
        if self.a is None or self.b is None:
            raise KernelRuntimeError("Matmul.IterateAll before SetTensorA and SetTensorB")
        if self.K != self.Kb:
            raise KernelRuntimeError(f"Matmul: A has K={self.K} but B has K={self.Kb}")
        c = chk.gm_tensor(c, "IterateAll")
        ldc = self.N if ldc is None else int(ldc)
        tiles_n = -(-self.N // self.bn)
        tiles = -(-self.M // self.bm) * tiles_n
        # (range and min as kernel code has them: a lane group's tiles are each lane's own)
        for t in lane_range(GetBlockIdx(), tiles, GetBlockNum()):
            m0, n0 = t // tiles_n * self.bm, t % tiles_n * self.bn
            mt, nt = lane_min(self.bm, self.M - m0), lane_min(self.bn, self.N - n0)
            acc = self.qc.AllocTensor(_ACC[self.dtype])
            for k0 in range(0, self.K, self.bk):
                kt = min(self.bk, self.K - k0)
                self._step(acc, m0, n0, k0, mt, nt, kt)
            self.qc.EnQue(acc)
            acc = self.qc.DeQue(_ACC[self.dtype])
            Fixpipe(c[m0 * ldc + n0], acc, FixpipeParams(mt, nt, 0, ldc))
            self.qc.FreeTensor(acc)

    def _step(self, acc, m0, n0, k0, mt, nt, kt) -> None:
        dt, unit = self.dtype, col_unit(self.dtype)
        a1, b1 = self.qa1.AllocTensor(dt), self.qb1.AllocTensor(dt)
        if self.ta:  # A^T tile: kt rows of mt from the [K, M] matrix, transposed by LoadData
            DataCopy(a1, self.a[k0 * self.M + m0], Nd2NzParams(1, kt, mt, 0, self.M, _ceil(kt, 16), 1, 0))
        else:
            DataCopy(a1, self.a[m0 * self.K + k0], Nd2NzParams(1, mt, kt, 0, self.K, _ceil(mt, 16), 1, 0))
        if self.tb:
            DataCopy(b1, self.b[n0 * self.K + k0], Nd2NzParams(1, nt, kt, 0, self.K, _ceil(nt, 16), 1, 0))
        else:
            DataCopy(b1, self.b[k0 * self.N + n0], Nd2NzParams(1, kt, nt, 0, self.N, _ceil(kt, unit), 1, 0))
        self.qa1.EnQue(a1); self.qb1.EnQue(b1)
        a1, b1 = self.qa1.DeQue(dt), self.qb1.DeQue(dt)
        a2, b2 = self.qa2.AllocTensor(dt), self.qb2.AllocTensor(dt)
        if self.ta:
            LoadData(a2, a1, LoadData2DParams(_ceil(kt, 16), _ceil(mt, unit), 0, True))
        else:
            LoadData(a2, a1, LoadData2DParams(_ceil(mt, 16), _ceil(kt, unit), 0, False))
        if self.tb:
            LoadData(b2, b1, LoadData2DParams(_ceil(nt, 16), _ceil(kt, unit), 0, True))
        else:
            LoadData(b2, b1, LoadData2DParams(_ceil(kt, unit), _ceil(nt, unit), 0, False))
        self.qa2.EnQue(a2); self.qb2.EnQue(b2)
        self.qa1.FreeTensor(a1); self.qb1.FreeTensor(b1)
        a2, b2 = self.qa2.DeQue(dt), self.qb2.DeQue(dt)
        Mmad(acc, a2, b2, MmadParams(mt, nt, kt, k0 == 0))
        self.qa2.FreeTensor(a2); self.qb2.FreeTensor(b2)
