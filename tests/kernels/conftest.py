"""Shared test helpers for the op layer."""

from __future__ import annotations

import torch


class Fn(torch.nn.Module):
    """A module whose forward is `fn`: lets a test record any torch expression."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)
