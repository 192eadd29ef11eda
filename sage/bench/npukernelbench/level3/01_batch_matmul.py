"""Batched matrix multiplication C[b] = A[b] @ B[b]."""

import torch

DESCRIPTION = (
    "Batched matmul: a [B, M, K] @ b [B, K, N] -> c [B, M, N] in the input dtype "
    "(fp16/bf16 accumulate in fp32 and round once). Cases include K and N that are "
    "not multiples of 16 (301, 2117)."
)
TAGS = ["matmul", "batched"]


class Model(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


def get_init_inputs():
    return []


# (dtype, batch, M, K, N)
_CASES = [
    (torch.float32, 8, 128, 301, 256),
    (torch.float16, 4, 256, 512, 2117),
    (torch.bfloat16, 16, 64, 128, 96),
    (torch.float32, 2, 333, 1024, 77),
]


def _case(dtype, batch, m, k, n):
    # Scaling by K**-0.5 keeps outputs O(1), so the fp32 tolerance measures the
    # kernel's accumulation, not the magnitude of the test data.
    a = torch.randn(batch, m, k).to(dtype)
    b = (torch.randn(batch, k, n) * k**-0.5).to(dtype)
    return [a, b]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
