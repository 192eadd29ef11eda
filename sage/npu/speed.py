"""How fast the simulator runs: simulated instructions per second on two reference kernels.

    .venv/bin/python -m sage.npu.speed            # KernelAdd (48 x 8 tiles) and a 4096 x 4096 fp16 softmax

Reports wall time and CPU time of the process (on a shared machine the CPU figure is the
honest one). Instructions are the profile's count: every DataCopy, vector, cube and scalar
instruction; queue bookkeeping and flags are not counted.
"""

from __future__ import annotations

import json
import time

import numpy as np

from sage.npu.dslref import EXAMPLE as KERNEL_ADD
from sage.npu.execute import run_kernel_source

SOFTMAX = '''\
from sage.npu.ascendc import *

class KernelSoftmax:
    def Init(self, x, y, rows, cols):
        self.cols = cols
        per = (rows + GetBlockNum() - 1) // GetBlockNum()
        start = per * GetBlockIdx()
        self.rows = max(0, min(per, rows - start))
        self.x_gm = GlobalTensor(); self.x_gm.SetGlobalBuffer(x, start * cols)
        self.y_gm = GlobalTensor(); self.y_gm.SetGlobalBuffer(y, start * cols)
        self.pipe = TPipe()
        self.inq = TQue(TPosition.VECIN, 2); self.outq = TQue(TPosition.VECOUT, 2)
        self.pipe.InitBuffer(self.inq, 2, cols * 2); self.pipe.InitBuffer(self.outq, 2, cols * 2)
        self.fbuf = TBuf(TPosition.VECCALC); self.pipe.InitBuffer(self.fbuf, cols * 4)
        self.rbuf = TBuf(TPosition.VECCALC); self.pipe.InitBuffer(self.rbuf, 64)
        self.wbuf = TBuf(TPosition.VECCALC); self.pipe.InitBuffer(self.wbuf, cols * 4)

    def Process(self):
        f = self.fbuf.Get(float32); red = self.rbuf.Get(float32); work = self.wbuf.Get(float32)
        for r in range(self.rows):
            xl = self.inq.AllocTensor(float16)
            DataCopy(xl, self.x_gm[r * self.cols], self.cols)
            self.inq.EnQue(xl)
            xl = self.inq.DeQue(float16)
            Cast(f, xl, RoundMode.CAST_NONE, self.cols)
            self.inq.FreeTensor(xl)
            ReduceMax(red, f, work, self.cols)
            SetFlag(HardEvent.V_S, 0); WaitFlag(HardEvent.V_S, 0)
            Adds(f, f, -red.GetValue(0), self.cols)
            Exp(f, f, self.cols)
            ReduceSum(red, f, work, self.cols)
            SetFlag(HardEvent.V_S, 0); WaitFlag(HardEvent.V_S, 0)
            Muls(f, f, 1.0 / red.GetValue(0), self.cols)
            yl = self.outq.AllocTensor(float16)
            Cast(yl, f, RoundMode.CAST_RINT, self.cols)
            self.outq.EnQue(yl)
            yl = self.outq.DeQue(float16)
            DataCopy(self.y_gm[r * self.cols], yl, self.cols)
            self.outq.FreeTensor(yl)

@kernel
def softmax_kernel(x, y, rows, cols):
    op = KernelSoftmax()
    op.Init(x, y, rows, cols)
    op.Process()

def forward(x):
    y = empty_like(x)
    softmax_kernel[48](x, y, x.shape[0], x.shape[1])
    return y
'''


def measure(name: str, source: str, args: list) -> dict:
    wall, cpu = time.perf_counter(), time.process_time()
    run = run_kernel_source(source, args, filename=f"{name}.py")
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if run.error is not None:
        raise RuntimeError(f"{name}: {run.error}")
    n = run.profile.instructions
    return {"kernel": name, "instructions": n, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "instr_per_cpu_s": round(n / cpu), "instr_per_wall_s": round(n / wall),
            "simulated_us": run.profile.time_us}


def main() -> None:
    rng = np.random.default_rng(0)
    n = 48 * 2048 * 8
    add_args = [rng.standard_normal(n).astype(np.float16), rng.standard_normal(n).astype(np.float16)]
    rows = [measure("kernel_add", KERNEL_ADD, add_args),
            measure("softmax_4096x4096_fp16", SOFTMAX, [rng.standard_normal((4096, 4096)).astype(np.float16)])]
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
