import torch

DESCRIPTION = "Elementwise absolute value |x| for float and integer tensors."
TAGS = ["elementwise", "arithmetic"]


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.abs(x)


_CASES = [
    ((2048, 1024), torch.float32),
    ((4096, 301), torch.float16),
    ((512, 2117), torch.bfloat16),
    ((16, 64, 301), torch.int32),
]


def _case(shape, dtype):
    if dtype.is_floating_point:
        return [torch.randn(shape).to(dtype)]
    return [torch.randint(-100000, 100000, shape, dtype=dtype)]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
