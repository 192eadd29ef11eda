"""A small tensor constant of the reference (torch.tensor of literals in its forward) written
by a kernel: its values are literals of the kernel file, stored one by one into UB by the
scalar unit and copied to GM in one burst. Only small constants come here (the recorder keeps
the contents of captured tensors of at most 4 KB), so one core and a scalar store per element
cost a few microseconds."""

from __future__ import annotations

import math

from sage.kernels.library.source import DTYPE_SIZE, HEADER, check_dtype, dsl_dtype


def constant_source(name: str, dtype: str, values: list[float | int | bool]) -> str:
    es = DTYPE_SIZE[check_dtype(dtype)]
    count = len(values)
    if count == 0:
        raise ValueError("an empty constant has nothing to write")
    nbytes = -(-count * es // 32) * 32             # UB buffers are whole 32 B blocks
    cls = f"Constant_{name}"
    literals = ", ".join(_literal(v, dtype) for v in values)
    return HEADER + f'''
VALUES = ({literals},)


class {cls}:
    def Init(self, out):
        self.pipe = TPipe()
        self.g_out = GlobalTensor()
        self.g_out.SetGlobalBuffer(out)
        self.tb = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.tb, {nbytes})

    def Process(self):
        t = self.tb.Get({dsl_dtype(dtype)})
        for i in range({count}):
            t.SetValue(i, VALUES[i])
        SetFlag(HardEvent.S_MTE3, 0)
        WaitFlag(HardEvent.S_MTE3, 0)
        DataCopyPad(self.g_out, t, DataCopyExtParams(1, {count * es}, 0, 0, 0))


@kernel
def {name}_kernel(out):
    op = {cls}()
    op.Init(out)
    op.Process()


def {name}_launch(out):
    {name}_kernel[1](out)
'''


def _literal(v: float | int | bool, dtype: str) -> str:
    if dtype in ("float32", "float16", "bfloat16"):
        v = float(v)
        if math.isinf(v) or math.isnan(v):
            return f'float("{v}")'
        return repr(v)
    return repr(int(v))
