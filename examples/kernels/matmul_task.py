"""Task: fp16 matrix product with fp32 accumulation (KernelBench format)."""

import torch

DESCRIPTION = ("Matrix product C = A @ B of fp16 matrices A (M x K) and B (K x N), accumulated "
               "in fp32 and rounded once to fp16.")
TAGS = ["matmul"]

# (M, K, N): multiples of 16, and sizes that need padding to the 16x16 fractal; rows of
# 50 or 70 fp16 values (100, 140 bytes) are not 32-byte aligned.
CASES = [
    (128, 256, 256),
    (64, 128, 512),
    (100, 72, 200),
    (33, 50, 70),
]


class Model(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a.float() @ b.float()).to(a.dtype)


def get_init_inputs() -> list:
    return []


def _case(m: int, k: int, n: int) -> list[torch.Tensor]:
    return [torch.randn(m, k).half(), torch.randn(k, n).half()]


def get_inputs() -> list[torch.Tensor]:
    return _case(*CASES[0])


def get_input_groups() -> list[list[torch.Tensor]]:
    return [_case(*mkn) for mkn in CASES]
