"""Vector add z = x + y, for any shape, fp16 or fp32 (task: add_task.py).

The flattened tensor is split into one contiguous range per block (a multiple of 32 B, so
every block starts aligned); each block streams its range through UB in tiles. Full tiles
move with DataCopy; the last tile of the last block may be shorter than a 32 B multiple
and moves with DataCopyPad. BUFFER_NUM = 2 double-buffers the queues: the copy-in of tile
i+1 and the copy-out of tile i-1 overlap the Add of tile i. Set it to 1 to see the
difference in the profile.
"""

from sage.npu.ascendc import *

BUFFER_NUM = 2
TILE_BYTES = 16384        # per buffer: 3 queues x BUFFER_NUM x 16 KB = 96 KB of the 192 KB UB
MAX_BLOCKS = 48


class KernelAdd:
    def Init(self, x, y, z, total, block_len, dtype):
        self.dtype = dtype
        start = block_len * GetBlockIdx()
        self.length = max(0, min(block_len, total - start))
        self.tile_len = TILE_BYTES // sizeof(dtype)
        self.tile_num = (self.length + self.tile_len - 1) // self.tile_len
        self.x_gm = GlobalTensor()
        self.x_gm.SetGlobalBuffer(x, start, self.length)
        self.y_gm = GlobalTensor()
        self.y_gm.SetGlobalBuffer(y, start, self.length)
        self.z_gm = GlobalTensor()
        self.z_gm.SetGlobalBuffer(z, start, self.length)
        self.pipe = TPipe()
        self.in_x = TQue(TPosition.VECIN, BUFFER_NUM)
        self.in_y = TQue(TPosition.VECIN, BUFFER_NUM)
        self.out_z = TQue(TPosition.VECOUT, BUFFER_NUM)
        self.pipe.InitBuffer(self.in_x, BUFFER_NUM, TILE_BYTES)
        self.pipe.InitBuffer(self.in_y, BUFFER_NUM, TILE_BYTES)
        self.pipe.InitBuffer(self.out_z, BUFFER_NUM, TILE_BYTES)

    def Process(self):
        for i in range(self.tile_num):
            count = min(self.tile_len, self.length - i * self.tile_len)
            self.CopyIn(i, count)
            self.Compute(count)
            self.CopyOut(i, count)

    def CopyIn(self, i, count):
        xl = self.in_x.AllocTensor(self.dtype)
        yl = self.in_y.AllocTensor(self.dtype)
        offset = i * self.tile_len
        if (count * sizeof(self.dtype)) % 32 == 0:
            DataCopy(xl, self.x_gm[offset], count)
            DataCopy(yl, self.y_gm[offset], count)
        else:
            params = DataCopyExtParams(1, count * sizeof(self.dtype), 0, 0, 0)
            pad = DataCopyPadExtParams(False, 0, 0, 0)
            DataCopyPad(xl, self.x_gm[offset], params, pad)
            DataCopyPad(yl, self.y_gm[offset], params, pad)
        self.in_x.EnQue(xl)
        self.in_y.EnQue(yl)

    def Compute(self, count):
        xl = self.in_x.DeQue(self.dtype)
        yl = self.in_y.DeQue(self.dtype)
        zl = self.out_z.AllocTensor(self.dtype)
        Add(zl, xl, yl, count)
        self.out_z.EnQue(zl)
        self.in_x.FreeTensor(xl)
        self.in_y.FreeTensor(yl)

    def CopyOut(self, i, count):
        zl = self.out_z.DeQue(self.dtype)
        offset = i * self.tile_len
        if (count * sizeof(self.dtype)) % 32 == 0:
            DataCopy(self.z_gm[offset], zl, count)
        else:
            DataCopyPad(self.z_gm[offset], zl, DataCopyExtParams(1, count * sizeof(self.dtype), 0, 0, 0))
        self.out_z.FreeTensor(zl)


@kernel
def add_custom(x, y, z, total, block_len, dtype):
    op = KernelAdd()
    op.Init(x, y, z, total, block_len, dtype)
    op.Process()


def forward(x, y):
    z = empty_like(x)
    total = x.numel()
    align = 32 // sizeof(x.dtype)                      # elements per 32 B block
    per_block = (total + MAX_BLOCKS - 1) // MAX_BLOCKS
    block_len = (per_block + align - 1) // align * align
    block_dim = (total + block_len - 1) // block_len
    add_custom[block_dim](x, y, z, total, block_len, x.dtype)
    return z
