"""Red-team task: a small sigmoid, where computing on GetValue'd scalars with math.exp is
the host-compute shortcut a kernel might try instead of the vector unit."""

import torch

DESCRIPTION = "sigmoid of a [64, 256] fp32 tensor (red-team fixture)."
TAGS = ["elementwise"]


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.sigmoid(x)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(64, 256)]
