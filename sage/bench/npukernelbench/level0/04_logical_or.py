import torch

DESCRIPTION = "Elementwise logical OR of two same-shaped tensors (nonzero counts as true); returns a bool tensor."
TAGS = ["elementwise", "logical"]


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.logical_or(a, b)


def _operand(shape, dtype):
    if dtype == torch.bool:
        return torch.rand(shape) < 0.5
    mask = torch.rand(shape) < 0.5
    return torch.where(mask, torch.randn(shape) + 3.0, torch.zeros(shape)).to(dtype)


_CASES = [
    ((2048, 1024), torch.bool),
    ((4096, 301), torch.bool),
    ((512, 2117), torch.float16),
    ((16, 64, 301), torch.int32),
]


def _case(shape, dtype):
    return [_operand(shape, dtype), _operand(shape, dtype)]


def get_input_groups():
    return [_case(shape, dtype) for shape, dtype in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
