"""2-D convolution (cross-correlation) with bias, stride and padding."""

import torch
import torch.nn.functional as F

DESCRIPTION = (
    "conv2d: x [B, Cin, H, W] (NCHW), weight [Cout, Cin, kh, kw], bias [Cout], ints stride, "
    "padding (zeros, same for both axes) -> y [B, Cout, H_out, W_out] in the input dtype "
    "(fp16 accumulates in fp32)."
)
TAGS = ["conv", "conv2d"]


class Model(torch.nn.Module):
    def forward(self, x, weight, bias, stride: int, padding: int):
        return F.conv2d(x, weight, bias, stride=stride, padding=padding)


def get_init_inputs():
    return []


# (dtype, B, Cin, H, W, Cout, k, stride, padding)
_CASES = [
    (torch.float32, 2, 64, 56, 56, 64, 3, 1, 1),
    (torch.float16, 1, 3, 224, 224, 64, 7, 2, 3),
    (torch.float32, 4, 37, 31, 45, 53, 3, 2, 1),
]


def _case(dtype, b, cin, h, w, cout, k, stride, padding):
    x = torch.randn(b, cin, h, w).to(dtype)
    weight = (torch.randn(cout, cin, k, k) * (cin * k * k) ** -0.5).to(dtype)
    bias = (torch.randn(cout) * 0.1).to(dtype)
    return [x, weight, bias, stride, padding]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
