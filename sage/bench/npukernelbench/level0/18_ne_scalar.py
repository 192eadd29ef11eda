import torch

DESCRIPTION = "Elementwise comparison x != s against a python scalar s; returns a bool tensor."
TAGS = ["elementwise", "compare"]


class Model(torch.nn.Module):
    def forward(self, x, scalar):
        return torch.ne(x, scalar)


_CASES = [
    ((2048, 1024), torch.float32, 2.0),
    ((4096, 301), torch.int32, 3),
    ((512, 2117), torch.float16, -1.5),
    ((16, 64, 301), torch.bfloat16, 0.5),
]


def _case(shape, dtype, scalar):
    # Values on a coarse grid that contains the scalar, so both outcomes are frequent.
    if dtype.is_floating_point:
        return [(torch.randint(-8, 8, shape) * 0.5).to(dtype), scalar]
    return [torch.randint(-8, 8, shape, dtype=dtype), scalar]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
