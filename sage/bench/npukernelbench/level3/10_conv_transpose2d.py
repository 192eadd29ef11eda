"""Transposed 2-D convolution (the gradient of conv2d w.r.t. its input), with bias."""

import torch
import torch.nn.functional as F

DESCRIPTION = (
    "conv_transpose2d: x [B, Cin, H, W], weight [Cin, Cout, k, k], bias [Cout], ints stride, "
    "padding, output_padding -> y [B, Cout, H_out, W_out], "
    "H_out = (H - 1) * s - 2p + k + output_padding, in the input dtype."
)
TAGS = ["conv", "conv2d", "transpose"]


class Model(torch.nn.Module):
    def forward(self, x, weight, bias, stride: int, padding: int, output_padding: int):
        return F.conv_transpose2d(
            x, weight, bias, stride=stride, padding=padding, output_padding=output_padding
        )


def get_init_inputs():
    return []


# (dtype, B, Cin, H, W, Cout, k, stride, padding, output_padding)
_CASES = [
    (torch.float32, 2, 64, 28, 28, 32, 4, 2, 1, 0),
    (torch.float16, 1, 128, 16, 16, 64, 3, 2, 1, 1),
    (torch.float32, 2, 37, 15, 21, 29, 3, 1, 0, 0),
]


def _case(dtype, b, cin, h, w, cout, k, stride, padding, output_padding):
    x = torch.randn(b, cin, h, w).to(dtype)
    weight = (torch.randn(cin, cout, k, k) * (cin * k * k / stride**2) ** -0.5).to(dtype)
    bias = (torch.randn(cout) * 0.1).to(dtype)
    return [x, weight, bias, stride, padding, output_padding]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
