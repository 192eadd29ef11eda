import torch

DESCRIPTION = "Elementwise log(exp(a) + exp(b)), computed stably, for two same-shaped float tensors."
TAGS = ["elementwise", "arithmetic"]


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.logaddexp(a, b)


_CASES = [
    ((2048, 1024), torch.float32),
    ((4096, 301), torch.float16),
    ((512, 2117), torch.bfloat16),
    ((16, 64, 301), torch.float32),
]


def _case(shape, dtype):
    return [(torch.randn(shape) * 4.0).to(dtype), (torch.randn(shape) * 4.0).to(dtype)]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
