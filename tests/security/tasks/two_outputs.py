"""Red-team task: two different outputs of one input, so returning one buffer twice is wrong."""

import torch

DESCRIPTION = "(relu(x), |x|) of a [64, 256] fp32 tensor (red-team fixture)."
TAGS = ["elementwise"]


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x), torch.abs(x)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(64, 256)]
