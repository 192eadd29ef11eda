"""Red-team task: subtract the mean of the whole tensor, a reduction every block needs before
it can write its part. On the chip that takes two launches (or a cross-core barrier); a
simulator that runs blocks one after another must not let the later blocks of one launch
read what the earlier ones wrote."""

import torch

DESCRIPTION = "x - x.mean() over a [64, 1024] fp32 tensor (red-team fixture)."
TAGS = ["reduction"]


class Model(torch.nn.Module):
    def forward(self, x):
        return x - x.mean()


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(64, 1024)]
