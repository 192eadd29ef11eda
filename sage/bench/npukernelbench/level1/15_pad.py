import torch
import torch.nn.functional as F

DESCRIPTION = (
    "Pad the trailing dimensions of x (F.pad): pad lists (left, right[, top, bottom, ...]) from the last "
    "dimension backwards; mode is constant (fill with value), reflect or replicate. Inputs: x, pad, mode, value."
)
TAGS = ["layout", "pad"]


class Model(torch.nn.Module):
    def forward(self, x, pad, mode, value):
        if mode == "constant":
            return F.pad(x, pad, mode="constant", value=value)
        return F.pad(x, pad, mode=mode)


_CASES = [
    ((16, 64, 1024), torch.float32, [1, 2], "constant", 0.0),
    ((8, 3, 224, 301), torch.float16, [3, 3, 3, 3], "constant", -1.5),
    ((4, 8, 64, 130), torch.bfloat16, [1, 1, 2, 2], "reflect", None),
    ((64, 16, 301), torch.float32, [2, 3], "replicate", None),
]


def _case(shape, dtype, pad, mode, value):
    return [torch.randn(shape).to(dtype), pad, mode, value]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
