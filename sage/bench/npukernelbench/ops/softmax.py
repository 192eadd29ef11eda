import torch

DESCRIPTION = "Softmax over the last dimension: exp(x - max) / sum(exp(x - max)) per row."
TAGS = ["softmax", "reduction"]


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


_CASES = [
    ((4096, 1024), torch.float32),
    ((4096, 1024), torch.float16),
    ((1000, 301), torch.bfloat16),
    ((64, 2117), torch.float32),
]


def _case(shape, dtype):
    return [(torch.randn(shape) * 3.0).to(dtype)]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
