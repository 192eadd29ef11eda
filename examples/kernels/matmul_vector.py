"""Matrix product on the vector unit only (task: matmul_task.py): the slow way, for comparison.

Same contract as matmul.py (fp16 in, fp32 accumulation, fp16 out), without the cube: each
block owns a band of rows of C and keeps their fp32 accumulators in UB. It streams B
through UB in panels of PANEL_K rows x up to N_TILE columns; for every row i of its band
and every row k of the panel it issues one Axpy: acc[i, :] += A[i, k] * B[k, :], with
A[i, k] read as a scalar from UB. That is M*K instructions of N lanes each, against one
16x16x16 fractal per cube cycle: the timing tests use it to show what the cube is for.
"""

from sage.npu.ascendc import *

PANEL_K = 8
N_TILE = 1024
MAX_ROWS = 24             # rows of C per block: fp32 accumulators of 24 x 1024 = 96 KB
MAX_BLOCKS = 48


def align_up(n, unit):
    return (n + unit - 1) // unit * unit


class KernelVectorMatmul:
    def Init(self, a, b, c, m, k, n, rows_per_block):
        self.k, self.n = k, n
        first = rows_per_block * GetBlockIdx()
        self.rows = max(0, min(rows_per_block, m - first))
        self.a_gm = GlobalTensor()
        self.a_gm.SetGlobalBuffer(a, first * k, self.rows * k)
        self.b_gm = GlobalTensor()
        self.b_gm.SetGlobalBuffer(b, 0, k * n)
        self.c_gm = GlobalTensor()
        self.c_gm.SetGlobalBuffer(c, first * n, self.rows * n)
        self.nt_max = min(N_TILE, align_up(n, 16))
        rows = max(1, self.rows)
        self.pipe = TPipe()
        self.in_b = TQue(TPosition.VECIN, 2)             # a panel of B: PANEL_K rows, fp16
        self.pipe.InitBuffer(self.in_b, 2, PANEL_K * self.nt_max * sizeof(float16))
        self.in_a = TQue(TPosition.VECIN, 2)             # the matching PANEL_K columns of A, one 32 B row each
        self.pipe.InitBuffer(self.in_a, 2, rows * 32)
        self.out_c = TQue(TPosition.VECOUT, 2)
        self.pipe.InitBuffer(self.out_c, 2, self.nt_max * sizeof(float16))
        self.panel_buf = TBuf(TPosition.VECCALC)         # the B panel widened to fp32
        self.pipe.InitBuffer(self.panel_buf, PANEL_K * self.nt_max * sizeof(float32))
        self.acc_buf = TBuf(TPosition.VECCALC)           # fp32 accumulators of the band
        self.pipe.InitBuffer(self.acc_buf, rows * self.nt_max * sizeof(float32))

    def Process(self):
        acc = self.acc_buf.Get(float32)
        for n0 in range(0, self.n, self.nt_max):
            nt = min(self.nt_max, self.n - n0)
            nt_pad = align_up(nt, 16)
            Duplicate(acc, 0.0, self.rows * nt_pad)
            for k0 in range(0, self.k, PANEL_K):
                kt = min(PANEL_K, self.k - k0)
                self.CopyIn(k0, kt, n0, nt)
                self.Accumulate(acc, kt, nt_pad)
            for i in range(self.rows):
                self.CopyOut(acc[i * nt_pad], i, n0, nt, nt_pad)

    def CopyIn(self, k0, kt, n0, nt):
        pad = DataCopyPadExtParams(False, 0, 0, 0)
        a = self.in_a.AllocTensor(float16)
        DataCopyPad(a, self.a_gm[k0], DataCopyExtParams(self.rows, kt * sizeof(float16),
                                                        (self.k - kt) * sizeof(float16), 0, 0), pad)
        panel = self.in_b.AllocTensor(float16)
        DataCopyPad(panel, self.b_gm[k0 * self.n + n0],
                    DataCopyExtParams(kt, nt * sizeof(float16), (self.n - nt) * sizeof(float16), 0, 0), pad)
        self.in_a.EnQue(a)
        self.in_b.EnQue(panel)

    def Accumulate(self, acc, kt, nt_pad):
        a = self.in_a.DeQue(float16)                    # row i of the A panel starts at i * 16
        panel16 = self.in_b.DeQue(float16)              # row kk of the B panel starts at kk * nt_pad
        panel = self.panel_buf.Get(float32)
        Cast(panel, panel16, RoundMode.CAST_NONE, kt * nt_pad)
        # A's values are read by the scalar unit: the VECIN queue only synced MTE2 -> V
        SetFlag(HardEvent.MTE2_S, 0)
        WaitFlag(HardEvent.MTE2_S, 0)
        for i in range(self.rows):
            row = acc[i * nt_pad]
            for kk in range(kt):
                Axpy(row, panel[kk * nt_pad], a.GetValue(i * 16 + kk), nt_pad)
        self.in_a.FreeTensor(a)
        self.in_b.FreeTensor(panel16)

    def CopyOut(self, acc_row, i, n0, nt, nt_pad):
        out = self.out_c.AllocTensor(float16)
        Cast(out, acc_row, RoundMode.CAST_RINT, nt_pad)
        self.out_c.EnQue(out)
        out = self.out_c.DeQue(float16)
        DataCopyPad(self.c_gm[i * self.n + n0], out, DataCopyExtParams(1, nt * sizeof(float16), 0, 0, 0))
        self.out_c.FreeTensor(out)


@kernel
def matmul_vector(a, b, c, m, k, n, rows_per_block):
    op = KernelVectorMatmul()
    op.Init(a, b, c, m, k, n, rows_per_block)
    op.Process()


def forward(a, b):
    m, k = a.shape
    n = b.shape[1]
    c = empty((m, n), float16)
    rows_per_block = min(MAX_ROWS, (m + MAX_BLOCKS - 1) // MAX_BLOCKS)
    block_dim = (m + rows_per_block - 1) // rows_per_block
    matmul_vector[block_dim](a, b, c, m, k, n, rows_per_block)
    return c
