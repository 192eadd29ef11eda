"""1-D convolution (cross-correlation) with bias, stride, padding and dilation."""

import torch
import torch.nn.functional as F

DESCRIPTION = (
    "conv1d: x [B, Cin, L], weight [Cout, Cin, k], bias [Cout], ints stride, padding "
    "(zeros), dilation -> y [B, Cout, L_out], L_out = (L + 2p - d(k-1) - 1) // s + 1, "
    "in the input dtype (fp16 accumulates in fp32)."
)
TAGS = ["conv", "conv1d"]


class Model(torch.nn.Module):
    def forward(self, x, weight, bias, stride: int, padding: int, dilation: int):
        return F.conv1d(x, weight, bias, stride=stride, padding=padding, dilation=dilation)


def get_init_inputs():
    return []


# (dtype, B, Cin, L, Cout, k, stride, padding, dilation)
_CASES = [
    (torch.float32, 4, 64, 2117, 96, 5, 1, 2, 1),
    (torch.float16, 8, 128, 301, 128, 3, 2, 1, 1),
    (torch.float32, 2, 37, 1000, 51, 7, 1, 6, 2),
]


def _case(dtype, b, cin, length, cout, k, stride, padding, dilation):
    x = torch.randn(b, cin, length).to(dtype)
    weight = (torch.randn(cout, cin, k) * (cin * k) ** -0.5).to(dtype)
    bias = (torch.randn(cout) * 0.1).to(dtype)
    return [x, weight, bias, stride, padding, dilation]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
