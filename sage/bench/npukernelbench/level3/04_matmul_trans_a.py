"""Matrix multiplication with transposed operand(s): a [K, M], b [K, N]; c = a^T @ b."""

import torch

DESCRIPTION = (
    "Matmul with transposed storage: a [K, M], b [K, N]; c = a^T @ b -> c [M, N] in the input dtype "
    "(fp16/bf16 accumulate in fp32). The operands arrive in their stored (untransposed) "
    "layout; the kernel must read them transposed. Cases include K/N not multiples of 16."
)
TAGS = ["matmul", "transpose"]


class Model(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a.T @ b


def get_init_inputs():
    return []


# (dtype, M, K, N)
_CASES = [
    (torch.float32, 512, 301, 384),
    (torch.float16, 1024, 1024, 2117),
    (torch.bfloat16, 257, 128, 96),
]


def _case(dtype, m, k, n):
    a = torch.randn(k, m).to(dtype)
    b = (torch.randn(k, n) * k**-0.5).to(dtype)
    return [a, b]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
