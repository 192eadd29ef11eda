import torch
import torch.nn.functional as F

DESCRIPTION = (
    "Threshold: y = x where x > threshold, else value, elementwise. "
    "Inputs: x, python float threshold, python float value."
)
TAGS = ["elementwise", "activation"]


class Model(torch.nn.Module):
    def forward(self, x, threshold, value):
        return F.threshold(x, threshold, value)


# Thresholds are exactly representable in every dtype, so the comparison means the same in all.
_CASES = [
    ((2048, 1024), torch.float32, 0.5, -1.0),
    ((4096, 301), torch.float16, 0.0, 0.0),
    ((512, 2117), torch.bfloat16, -0.25, 2.0),
    ((16, 64, 301), torch.float32, 1.0, 0.0),
]


def _case(shape, dtype, threshold, value):
    return [torch.randn(shape).to(dtype), threshold, value]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
