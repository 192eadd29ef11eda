"""Task: softmax over the last dimension (KernelBench format)."""

import torch

DESCRIPTION = "Softmax over the last dimension of a 2-D or 3-D tensor, in the input dtype."
TAGS = ["reduction", "softmax"]

# Last dimensions 301 (fp32) and 2117, 100 (fp16) are not multiples of 32 bytes.
CASES = [
    ((64, 1024), torch.float32),
    ((33, 301), torch.float32),
    ((40, 512), torch.float16),
    ((16, 2117), torch.float16),
    ((4, 6, 100), torch.float16),
]


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_init_inputs() -> list:
    return []


def _case(shape: tuple[int, ...], dtype: torch.dtype) -> list[torch.Tensor]:
    # Spread of a few units, as attention logits have: exp() must not overflow without the max.
    return [(torch.randn(shape) * 4).to(dtype)]


def get_inputs() -> list[torch.Tensor]:
    return _case(*CASES[0])


def get_input_groups() -> list[list[torch.Tensor]]:
    return [_case(shape, dtype) for shape, dtype in CASES]
