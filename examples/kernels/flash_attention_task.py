"""Task: causal scaled dot-product attention, the flash-attention forward (KernelBench format)."""

import torch

DESCRIPTION = ("O = softmax(Q K^T / sqrt(D) + causal mask) V for fp16 Q, K, V of shape [B, H, S, D], "
               "D = 64 or 128; computed in fp32 and rounded once to fp16.")
TAGS = ["attention", "matmul", "softmax"]

# (B, H, S, D): S = 200, 300 and 600 are not multiples of the kernel's 128-row tile (a ragged
# last query tile, and a last key tile that only the causal mask trims); S = 600 has query tiles
# that see more than one group of 4 key tiles, so the running max is rescaled
CASES = [
    (1, 2, 256, 128),
    (2, 1, 128, 64),
    (1, 1, 384, 128),
    (1, 2, 200, 64),
    (1, 1, 300, 128),
    (1, 1, 600, 64),
]


class Model(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        o = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
        return o.to(q.dtype)


def get_init_inputs() -> list:
    return []


def _case(b: int, h: int, s: int, d: int) -> list[torch.Tensor]:
    return [torch.randn(b, h, s, d).half() for _ in range(3)]


def get_inputs() -> list[torch.Tensor]:
    return _case(*CASES[0])


def get_input_groups() -> list[list[torch.Tensor]]:
    return [_case(*shape) for shape in CASES]
