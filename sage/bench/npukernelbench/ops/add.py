import torch

DESCRIPTION = "Elementwise a + b of two tensors (the last case broadcasts a row vector over a matrix)."
TAGS = ["elementwise", "arithmetic"]


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.add(a, b)


_CASES = [
    ((4096, 1024), (4096, 1024), torch.float32),
    ((4096, 1024), (4096, 1024), torch.float16),
    ((1000, 301), (1000, 301), torch.bfloat16),
    ((64, 2117), (2117,), torch.float32),
]


def _case(shape_a, shape_b, dtype):
    return [torch.randn(shape_a).to(dtype), torch.randn(shape_b).to(dtype)]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
