import torch
import torch.nn.functional as F

DESCRIPTION = "ELU: x for x > 0, alpha * (exp(x) - 1) otherwise, elementwise. Inputs: x and the python float alpha."
TAGS = ["elementwise", "activation"]


class Model(torch.nn.Module):
    def forward(self, x, alpha):
        return F.elu(x, alpha=alpha)


_CASES = [
    ((2048, 1024), torch.float32, 1.0),
    ((4096, 301), torch.float16, 1.0),
    ((512, 2117), torch.bfloat16, 0.5),
    ((16, 64, 301), torch.float32, 1.5),
]


def _case(shape, dtype, alpha):
    return [(torch.randn(shape) * 2.0).to(dtype), alpha]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
