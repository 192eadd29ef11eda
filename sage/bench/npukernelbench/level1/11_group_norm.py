import torch
import torch.nn.functional as F

DESCRIPTION = (
    "Group normalisation of x (N, C, *): channels split into num_groups groups, each normalised over its "
    "channels and spatial positions, then per-channel weight and bias. Inputs: x, num_groups, weight, bias, eps."
)
TAGS = ["norm", "reduction"]


class Model(torch.nn.Module):
    def forward(self, x, num_groups, weight, bias, eps):
        return F.group_norm(x, num_groups, weight, bias, eps)


_CASES = [
    ((8, 64, 32, 32), torch.float32, 8, 1e-5),
    ((4, 96, 301), torch.float16, 32, 1e-5),
    ((2, 32, 17, 133), torch.bfloat16, 4, 1e-6),
    ((16, 60, 7, 7), torch.float32, 6, 1e-5),
]


def _case(shape, dtype, num_groups, eps):
    channels = shape[1]
    x = (torch.randn(shape) * 2.0 - 0.3).to(dtype)
    weight = (1.0 + 0.5 * torch.randn(channels)).to(dtype)
    bias = (0.1 * torch.randn(channels)).to(dtype)
    return [x, num_groups, weight, bias, eps]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
