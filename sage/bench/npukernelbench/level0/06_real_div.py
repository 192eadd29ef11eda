import torch

DESCRIPTION = "Elementwise true division a / b of two same-shaped float tensors (b bounded away from zero)."
TAGS = ["elementwise", "arithmetic"]


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.div(a, b)


_CASES = [
    ((2048, 1024), torch.float32),
    ((4096, 301), torch.float16),
    ((512, 2117), torch.bfloat16),
    ((16, 64, 301), torch.float32),
]


def _case(shape, dtype):
    a = torch.randn(shape).to(dtype)
    sign = torch.randint(0, 2, shape).float() * 2 - 1
    b = (sign * (0.5 + 1.5 * torch.rand(shape))).to(dtype)
    return [a, b]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
