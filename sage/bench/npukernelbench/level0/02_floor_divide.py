import torch

DESCRIPTION = (
    "Elementwise floor division a // b (rounds the quotient towards minus infinity, Python semantics) "
    "for integer and float tensors of the same shape."
)
TAGS = ["elementwise", "arithmetic"]


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.floor_divide(a, b)


def _case(shape, dtype):
    if not dtype.is_floating_point:
        a = torch.randint(-10000, 10000, shape, dtype=dtype)
        b = torch.randint(1, 100, shape, dtype=dtype) * (torch.randint(0, 2, shape, dtype=dtype) * 2 - 1)
        return [a, b]
    # Float divisors are signed powers of two, so a / b is exact in every float format and
    # floor() cannot flip between two correct implementations (a rounded quotient that lands
    # on an integer would make the reference ill-defined).
    a = (torch.randn(shape) * 50).to(dtype)
    exponent = torch.randint(-2, 3, shape).float()
    sign = torch.randint(0, 2, shape).float() * 2 - 1
    b = (sign * torch.pow(2.0, exponent)).to(dtype)
    return [a, b]


_CASES = [
    ((2048, 1024), torch.int32),
    ((4096, 301), torch.float32),
    ((512, 2117), torch.float16),
    ((16, 64, 301), torch.bfloat16),
]


def get_input_groups():
    return [_case(shape, dtype) for shape, dtype in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
