"""Layer norm over the last dimension with weight and bias, fp32 or fp16 (task: layernorm_task.py).

y = (x - mean) / sqrt(var + eps) * weight + bias, eps = 1e-5, statistics in fp32.

Rows are split evenly over the blocks. Each block first brings weight and bias into UB
once (through the input queue, widened to fp32), then streams its rows one at a time:
mean by ReduceSum, the centred row, the variance by Mul + ReduceSum, then scale, weight
and bias on the vector unit. Rows of unaligned byte length move with DataCopyPad.
"""

import math

from sage.npu.ascendc import *

BUFFER_NUM = 2
EPS = 1e-5
MAX_D = 4096              # fp32: 2 x in + 2 x out + centred^2 + weight + bias = 112 KB of UB
MAX_BLOCKS = 48


def align_up(n, unit):
    return (n + unit - 1) // unit * unit


class KernelLayerNorm:
    def Init(self, x, weight, bias, y, rows, d, rows_per_block, dtype):
        self.dtype = dtype
        self.d = d
        self.row_bytes = d * sizeof(dtype)
        self.d_pad = align_up(d, 16)
        first = rows_per_block * GetBlockIdx()
        self.rows = max(0, min(rows_per_block, rows - first))
        self.x_gm = GlobalTensor()
        self.x_gm.SetGlobalBuffer(x, first * d, self.rows * d)
        self.y_gm = GlobalTensor()
        self.y_gm.SetGlobalBuffer(y, first * d, self.rows * d)
        self.w_gm = GlobalTensor()
        self.w_gm.SetGlobalBuffer(weight, 0, d)
        self.b_gm = GlobalTensor()
        self.b_gm.SetGlobalBuffer(bias, 0, d)
        self.pipe = TPipe()
        self.in_x = TQue(TPosition.VECIN, BUFFER_NUM)
        self.out_y = TQue(TPosition.VECOUT, BUFFER_NUM)
        row_in = self.d_pad * sizeof(dtype)
        row_f32 = self.d_pad * sizeof(float32)
        self.pipe.InitBuffer(self.in_x, BUFFER_NUM, row_in)
        self.pipe.InitBuffer(self.out_y, BUFFER_NUM, row_in)
        self.w_buf = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.w_buf, row_f32)
        self.b_buf = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_buf, row_f32)
        self.sq_buf = TBuf(TPosition.VECCALC)         # centred^2, and the fp32 row for fp16 inputs
        self.pipe.InitBuffer(self.sq_buf, row_f32 * (1 if dtype == float32 else 2))
        self.work_buf = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.work_buf, align_up((self.d_pad + 63) // 64, 8) * sizeof(float32))
        self.red_buf = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.red_buf, 32)

    def Process(self):
        self.LoadParam(self.w_gm, self.w_buf.Get(float32))
        self.LoadParam(self.b_gm, self.b_buf.Get(float32))
        for r in range(self.rows):
            self.CopyIn(self.x_gm[r * self.d])
            self.Compute()
            self.CopyOut(r)

    def LoadParam(self, gm, dst):
        """weight or bias -> fp32 in UB, through the input queue (its sync comes for free)."""
        self.CopyIn(gm)
        t = self.in_x.DeQue(self.dtype)
        if self.dtype == float32:
            DataCopy(dst, t, self.d_pad)
        else:
            Cast(dst, t, RoundMode.CAST_NONE, self.d)
        self.in_x.FreeTensor(t)

    def CopyIn(self, src):
        xl = self.in_x.AllocTensor(self.dtype)
        if self.row_bytes % 32 == 0:
            DataCopy(xl, src, self.d)
        else:
            DataCopyPad(xl, src, DataCopyExtParams(1, self.row_bytes, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))
        self.in_x.EnQue(xl)

    def RowScalar(self, red):
        SetFlag(HardEvent.V_S, 0)
        WaitFlag(HardEvent.V_S, 0)
        return red.GetValue(0)

    def Compute(self):
        d = self.d
        xl = self.in_x.DeQue(self.dtype)
        yl = self.out_y.AllocTensor(self.dtype)
        work = self.work_buf.Get(float32)
        red = self.red_buf.Get(float32)
        sq = self.sq_buf.Get(float32)
        if self.dtype == float32:
            row = xl
        else:
            row = sq[self.d_pad]
            Cast(row, xl, RoundMode.CAST_NONE, d)
        ReduceSum(red, row, work, d)
        mean = self.RowScalar(red) / d
        Adds(row, row, -mean, d)
        Mul(sq, row, row, d)
        ReduceSum(red, sq, work, d)
        rstd = 1.0 / math.sqrt(self.RowScalar(red) / d + EPS)
        Muls(row, row, rstd, d)
        Mul(row, row, self.w_buf.Get(float32), d)
        if self.dtype == float32:
            Add(yl, row, self.b_buf.Get(float32), d)
        else:
            Add(row, row, self.b_buf.Get(float32), d)
            Cast(yl, row, RoundMode.CAST_RINT, d)
        self.out_y.EnQue(yl)
        self.in_x.FreeTensor(xl)

    def CopyOut(self, r):
        yl = self.out_y.DeQue(self.dtype)
        if self.row_bytes % 32 == 0:
            DataCopy(self.y_gm[r * self.d], yl, self.d)
        else:
            DataCopyPad(self.y_gm[r * self.d], yl, DataCopyExtParams(1, self.row_bytes, 0, 0, 0))
        self.out_y.FreeTensor(yl)


@kernel
def layernorm_custom(x, weight, bias, y, rows, d, rows_per_block, dtype):
    op = KernelLayerNorm()
    op.Init(x, weight, bias, y, rows, d, rows_per_block, dtype)
    op.Process()


def forward(x, weight, bias):
    d = x.shape[-1]
    if d > MAX_D:
        raise ValueError(f"this kernel keeps a whole row in UB: last dimension {d} > {MAX_D}")
    rows = x.numel() // d
    y = empty_like(x)
    rows_per_block = (rows + MAX_BLOCKS - 1) // MAX_BLOCKS
    block_dim = (rows + rows_per_block - 1) // rows_per_block
    layernorm_custom[block_dim](x, weight, bias, y, rows, d, rows_per_block, x.dtype)
    return y
