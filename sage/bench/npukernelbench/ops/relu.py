import torch

DESCRIPTION = "ReLU: max(x, 0), elementwise."
TAGS = ["elementwise", "activation"]


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


_CASES = [
    ((4096, 1024), torch.float32),
    ((4096, 1024), torch.float16),
    ((1000, 301), torch.bfloat16),
    ((64, 2117), torch.float32),
]


def _case(shape, dtype):
    return [(torch.randn(shape)).to(dtype)]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
