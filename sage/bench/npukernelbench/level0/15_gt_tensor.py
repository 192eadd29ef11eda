import torch

DESCRIPTION = "Elementwise comparison a > b of two same-shaped tensors; returns a bool tensor."
TAGS = ["elementwise", "compare"]


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.gt(a, b)


_CASES = [
    ((2048, 1024), torch.float32),
    ((4096, 301), torch.float16),
    ((512, 2117), torch.int32),
    ((16, 64, 301), torch.bfloat16),
]


def _case(shape, dtype):
    if dtype.is_floating_point:
        return [torch.randn(shape).to(dtype), torch.randn(shape).to(dtype)]
    # Small integer range so that equal pairs (which must give False) are common.
    return [torch.randint(-8, 8, shape, dtype=dtype), torch.randint(-8, 8, shape, dtype=dtype)]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
