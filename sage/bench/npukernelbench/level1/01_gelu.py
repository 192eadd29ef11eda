import torch
import torch.nn.functional as F

DESCRIPTION = (
    "GELU activation, elementwise: x * Phi(x) with the exact erf form (approximate='none') "
    "or the tanh approximation (approximate='tanh'). Inputs: x and the approximate string."
)
TAGS = ["elementwise", "activation"]


class Model(torch.nn.Module):
    def forward(self, x, approximate):
        return F.gelu(x, approximate=approximate)


_CASES = [
    ((2048, 1024), torch.float32, "none"),
    ((4096, 301), torch.float16, "tanh"),
    ((512, 2117), torch.bfloat16, "none"),
    ((16, 64, 301), torch.float32, "tanh"),
]


def _case(shape, dtype, approximate):
    return [(torch.randn(shape) * 3.0).to(dtype), approximate]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
