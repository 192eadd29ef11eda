"""Task: layer normalisation over the last dimension with weight and bias (KernelBench format)."""

import torch
import torch.nn.functional as F

DESCRIPTION = ("Layer normalisation over the last dimension, y = (x - mean) / sqrt(var + eps) "
               "* weight + bias, eps = 1e-5; weight and bias are inputs of the last dimension's size.")
TAGS = ["norm", "reduction"]

EPS = 1e-5
CASES = [
    ((32, 1024), torch.float32),
    ((17, 301), torch.float32),
    ((24, 768), torch.float16),
    ((2, 5, 2117), torch.float16),
]


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), weight, bias, eps=EPS)


def get_init_inputs() -> list:
    return []


def _case(shape: tuple[int, ...], dtype: torch.dtype) -> list[torch.Tensor]:
    d = shape[-1]
    x = torch.randn(shape) * 2 + 0.5
    return [x.to(dtype), (1 + 0.1 * torch.randn(d)).to(dtype), (0.1 * torch.randn(d)).to(dtype)]


def get_inputs() -> list[torch.Tensor]:
    return _case(*CASES[0])


def get_input_groups() -> list[list[torch.Tensor]]:
    return [_case(shape, dtype) for shape, dtype in CASES]
