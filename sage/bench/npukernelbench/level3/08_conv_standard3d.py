"""3-D convolution (cross-correlation) with bias, per-axis stride and padding."""

import torch
import torch.nn.functional as F

DESCRIPTION = (
    "conv3d: x [B, Cin, D, H, W] (NCDHW), weight [Cout, Cin, kd, kh, kw], bias [Cout], "
    "stride and padding as 3-element int lists (zeros padding) -> y [B, Cout, D', H', W'] "
    "in the input dtype (fp16 accumulates in fp32)."
)
TAGS = ["conv", "conv3d"]


class Model(torch.nn.Module):
    def forward(self, x, weight, bias, stride: list, padding: list):
        return F.conv3d(x, weight, bias, stride=tuple(stride), padding=tuple(padding))


def get_init_inputs():
    return []


# (dtype, B, Cin, D, H, W, Cout, kernel, stride, padding)
_CASES = [
    (torch.float32, 1, 16, 16, 32, 32, 32, (3, 3, 3), [1, 1, 1], [1, 1, 1]),
    (torch.float16, 2, 3, 8, 64, 64, 24, (3, 3, 3), [1, 2, 2], [1, 1, 1]),
    (torch.float32, 1, 13, 9, 21, 27, 19, (2, 3, 3), [1, 1, 2], [0, 1, 1]),
]


def _case(dtype, b, cin, d, h, w, cout, kernel, stride, padding):
    fan_in = cin * kernel[0] * kernel[1] * kernel[2]
    x = torch.randn(b, cin, d, h, w).to(dtype)
    weight = (torch.randn(cout, cin, *kernel) * fan_in**-0.5).to(dtype)
    bias = (torch.randn(cout) * 0.1).to(dtype)
    return [x, weight, bias, stride, padding]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
