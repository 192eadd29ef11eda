"""Task: elementwise sum of two tensors of the same shape (KernelBench format)."""

import torch

DESCRIPTION = "Elementwise sum z = x + y of two tensors with the same shape and dtype."
TAGS = ["elementwise"]

# (shape, dtype): aligned and unaligned sizes (7*301 fp32 and 3*5*2117 fp16 are not
# multiples of 32 bytes), fp16 and fp32.
CASES = [
    ((96, 1024), torch.float16),
    ((48, 2048), torch.float32),
    ((7, 301), torch.float32),
    ((3, 5, 2117), torch.float16),
    ((1000,), torch.float32),
]


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


def get_init_inputs() -> list:
    return []


def _case(shape: tuple[int, ...], dtype: torch.dtype) -> list[torch.Tensor]:
    return [torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)]


def get_inputs() -> list[torch.Tensor]:
    return _case(*CASES[0])


def get_input_groups() -> list[list[torch.Tensor]]:
    return [_case(shape, dtype) for shape, dtype in CASES]
