"""Depthwise 2-D convolution: one k x k filter per channel (groups = channels)."""

import torch
import torch.nn.functional as F

DESCRIPTION = (
    "Depthwise conv2d: x [B, C, H, W], weight [C, 1, k, k], bias [C], ints stride, padding "
    "(zeros); groups = C, so output channel c = x[:, c] correlated with weight[c, 0] "
    "-> y [B, C, H_out, W_out] in the input dtype."
)
TAGS = ["conv", "conv2d", "depthwise"]


class Model(torch.nn.Module):
    def forward(self, x, weight, bias, stride: int, padding: int):
        return F.conv2d(x, weight, bias, stride=stride, padding=padding, groups=x.shape[1])


def get_init_inputs():
    return []


# (dtype, B, C, H, W, k, stride, padding)
_CASES = [
    (torch.float32, 2, 128, 56, 56, 3, 1, 1),
    (torch.float16, 1, 96, 112, 112, 3, 2, 1),
    (torch.float32, 4, 37, 45, 61, 5, 1, 2),
]


def _case(dtype, b, c, h, w, k, stride, padding):
    x = torch.randn(b, c, h, w).to(dtype)
    weight = (torch.randn(c, 1, k, k) / k).to(dtype)
    bias = (torch.randn(c) * 0.1).to(dtype)
    return [x, weight, bias, stride, padding]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
