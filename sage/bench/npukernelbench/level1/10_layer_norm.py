import torch
import torch.nn.functional as F

DESCRIPTION = (
    "Layer normalisation over the last dimension with elementwise affine weight and bias: "
    "(x - mean) / sqrt(var + eps) * weight + bias. Inputs: x, weight, bias, python float eps."
)
TAGS = ["norm", "reduction"]


class Model(torch.nn.Module):
    def forward(self, x, weight, bias, eps):
        return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)


_CASES = [
    ((4096, 1024), torch.float32, 1e-5),
    ((1000, 301), torch.float16, 1e-5),
    ((64, 2117), torch.bfloat16, 1e-6),
    ((8, 128, 768), torch.float32, 1e-5),
]


def _case(shape, dtype, eps):
    n = shape[-1]
    x = (torch.randn(shape) * 2.0 + 0.5).to(dtype)
    weight = (1.0 + 0.5 * torch.randn(n)).to(dtype)
    bias = (0.1 * torch.randn(n)).to(dtype)
    return [x, weight, bias, eps]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
