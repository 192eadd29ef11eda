import torch

DESCRIPTION = "Logistic sigmoid 1 / (1 + exp(-x)), elementwise."
TAGS = ["elementwise", "activation"]


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.sigmoid(x)


_CASES = [
    ((2048, 1024), torch.float32),
    ((4096, 301), torch.float16),
    ((512, 2117), torch.bfloat16),
    ((16, 64, 301), torch.float32),
]


def _case(shape, dtype):
    return [(torch.randn(shape) * 3.0).to(dtype)]


def get_input_groups():
    return [_case(shape, dtype) for shape, dtype in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
