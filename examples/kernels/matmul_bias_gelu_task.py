"""Task: GELU (tanh form) of a fp16 matrix product plus a bias row (KernelBench format)."""

import torch

DESCRIPTION = ("Y = gelu(A @ W + b) with the tanh approximation of GELU: fp16 A (M x K), W (K x N), "
               "b (N); accumulated in fp32, rounded once to fp16.")
TAGS = ["matmul", "elementwise"]

# (M, K, N): N a multiple of 16 (one cube tile wide), rows split between the two AIVs of a block;
# K = 72 makes rows of A 144 bytes, not a multiple of 32 (the ND->NZ copy pads them)
CASES = [
    (256, 128, 128),
    (128, 256, 64),
    (64, 64, 256),
    (96, 72, 64),
]


class Model(torch.nn.Module):
    def forward(self, a: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        y = a.float() @ w.float() + b.float()
        return torch.nn.functional.gelu(y, approximate="tanh").to(a.dtype)


def get_init_inputs() -> list:
    return []


def _case(m: int, k: int, n: int) -> list[torch.Tensor]:
    return [torch.randn(m, k).half() * 0.5, torch.randn(k, n).half() * 0.5, torch.randn(n).half()]


def get_inputs() -> list[torch.Tensor]:
    return _case(*CASES[0])


def get_input_groups() -> list[list[torch.Tensor]]:
    return [_case(*mkn) for mkn in CASES]
