"""Gaussian top-k activation sparsity (Gemma 3n): keep values above a per-row statistical
cut-off, then GELU."""

import torch

DESCRIPTION = (
    "x [T, I], target_sparsity in (0, 1). Per row, assuming values are roughly Gaussian, "
    "cutoff = mean(x) + std(x, biased) * Phi^-1(target_sparsity) keeps about the top "
    "(1 - target_sparsity) fraction; y = gelu_tanh(relu(x - cutoff)). Computed in fp32 "
    "(Phi^-1 in float64 on the host), y in x's dtype."
)
TAGS = ["reduction", "activation", "elementwise", "sparse"]


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor, target_sparsity: float) -> torch.Tensor:
        multiplier = float(torch.special.ndtri(torch.tensor(target_sparsity, dtype=torch.float64)))
        xf = x.float()
        cutoff = xf.mean(dim=-1, keepdim=True) + xf.std(dim=-1, unbiased=False, keepdim=True) * multiplier
        y = torch.nn.functional.gelu(torch.relu(xf - cutoff), approximate="tanh")
        return y.to(x.dtype)


def get_init_inputs():
    return []


# (dtype, T, I, sparsity)
_CASES = [
    (torch.bfloat16, 256, 8192, 0.95),
    (torch.float16, 301, 2117, 0.9),
    (torch.float32, 64, 16384, 0.75),
]


def _case(dtype, t, i, sparsity):
    x = (torch.randn(t, i) * (0.5 + torch.rand(t, 1)) + torch.randn(t, 1)).to(dtype)
    return [x, sparsity]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
