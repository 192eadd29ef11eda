"""Row softmax over the last dimension, fp32, or fp16 with fp32 accumulation (task: softmax_task.py).

Rows are split evenly over the blocks; each block streams its rows through UB one row at
a time (the whole row must fit: d <= MAX_D). Rows whose byte length is not a multiple of
32 B move with DataCopyPad. fp16 rows are cast to fp32 first, so the max, the exponentials
and the sum are exact to fp32, and cast back once at the end.

Per row: ReduceMax -> scalar max (V_S sync, GetValue), Adds(-max), Exp, ReduceSum -> scalar
sum, Muls(1/sum). The two scalar round-trips are the slow part for short rows: a faster
kernel processes several rows per tile and broadcasts the reductions on the vector unit.
"""

from sage.npu.ascendc import *

BUFFER_NUM = 2
MAX_D = 8192               # fp32 rows of 32 KB: 2 x in + 2 x out = 128 KB of the 192 KB UB
MAX_BLOCKS = 48


def align_up(n, unit):
    return (n + unit - 1) // unit * unit


class KernelSoftmax:
    def Init(self, x, y, rows, d, rows_per_block, dtype):
        self.dtype = dtype
        self.d = d
        self.row_bytes = d * sizeof(dtype)
        self.d_pad = align_up(d, 16)                 # a 32 B multiple for fp16 and fp32 alike
        first = rows_per_block * GetBlockIdx()
        self.rows = max(0, min(rows_per_block, rows - first))
        self.x_gm = GlobalTensor()
        self.x_gm.SetGlobalBuffer(x, first * d, self.rows * d)
        self.y_gm = GlobalTensor()
        self.y_gm.SetGlobalBuffer(y, first * d, self.rows * d)
        self.pipe = TPipe()
        self.in_x = TQue(TPosition.VECIN, BUFFER_NUM)
        self.out_y = TQue(TPosition.VECOUT, BUFFER_NUM)
        self.pipe.InitBuffer(self.in_x, BUFFER_NUM, self.d_pad * sizeof(dtype))
        self.pipe.InitBuffer(self.out_y, BUFFER_NUM, self.d_pad * sizeof(dtype))
        if dtype != float32:
            self.row_buf = TBuf(TPosition.VECCALC)  # the fp16 row widened to fp32
            self.pipe.InitBuffer(self.row_buf, self.d_pad * sizeof(float32))
        self.work_buf = TBuf(TPosition.VECCALC)     # ReduceMax/ReduceSum: one partial per 256 B repeat
        self.pipe.InitBuffer(self.work_buf, align_up((self.d_pad + 63) // 64, 8) * sizeof(float32))
        self.red_buf = TBuf(TPosition.VECCALC)      # the reduction result, dst[0]
        self.pipe.InitBuffer(self.red_buf, 32)

    def Process(self):
        for r in range(self.rows):
            self.CopyIn(r)
            self.Compute()
            self.CopyOut(r)

    def CopyIn(self, r):
        xl = self.in_x.AllocTensor(self.dtype)
        if self.row_bytes % 32 == 0:
            DataCopy(xl, self.x_gm[r * self.d], self.d)
        else:
            DataCopyPad(xl, self.x_gm[r * self.d], DataCopyExtParams(1, self.row_bytes, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))
        self.in_x.EnQue(xl)

    def Compute(self):
        d = self.d
        xl = self.in_x.DeQue(self.dtype)
        yl = self.out_y.AllocTensor(self.dtype)
        work = self.work_buf.Get(float32)
        red = self.red_buf.Get(float32)
        if self.dtype == float32:
            row = xl
        else:
            row = self.row_buf.Get(float32)
            Cast(row, xl, RoundMode.CAST_NONE, d)
        ReduceMax(red, row, work, d)
        SetFlag(HardEvent.V_S, 0)
        WaitFlag(HardEvent.V_S, 0)
        row_max = red.GetValue(0)
        Adds(row, row, -row_max, d)
        Exp(row, row, d)
        ReduceSum(red, row, work, d)
        SetFlag(HardEvent.V_S, 0)
        WaitFlag(HardEvent.V_S, 0)
        inv_sum = 1.0 / red.GetValue(0)
        if self.dtype == float32:
            Muls(yl, row, inv_sum, d)
        else:
            Muls(row, row, inv_sum, d)
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
def softmax_custom(x, y, rows, d, rows_per_block, dtype):
    op = KernelSoftmax()
    op.Init(x, y, rows, d, rows_per_block, dtype)
    op.Process()


def forward(x):
    d = x.shape[-1]
    if d > MAX_D:
        raise ValueError(f"this kernel keeps a whole row in UB: last dimension {d} > {MAX_D}")
    rows = x.numel() // d
    y = empty_like(x)
    rows_per_block = (rows + MAX_BLOCKS - 1) // MAX_BLOCKS
    block_dim = (rows + rows_per_block - 1) // rows_per_block
    softmax_custom[block_dim](x, y, rows, d, rows_per_block, x.dtype)
    return y
