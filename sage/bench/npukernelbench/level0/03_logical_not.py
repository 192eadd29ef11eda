import torch

DESCRIPTION = "Elementwise logical NOT (zero becomes true, nonzero becomes false); returns a bool tensor."
TAGS = ["elementwise", "logical"]


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.logical_not(x)


def _case(shape, dtype):
    if dtype == torch.bool:
        return [torch.rand(shape) < 0.5]
    mask = torch.rand(shape) < 0.5
    return [torch.where(mask, torch.randn(shape) + 3.0, torch.zeros(shape)).to(dtype)]


_CASES = [
    ((2048, 1024), torch.bool),
    ((4096, 301), torch.bool),
    ((512, 2117), torch.int32),
    ((16, 64, 301), torch.float32),
]


def get_input_groups():
    return [_case(shape, dtype) for shape, dtype in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
