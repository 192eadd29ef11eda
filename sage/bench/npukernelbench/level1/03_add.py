import torch

DESCRIPTION = "Elementwise a + b with numpy-style broadcasting between the two operand shapes."
TAGS = ["broadcast", "elementwise", "arithmetic"]


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.add(a, b)


_CASES = [
    ((2048, 1024), (1024,), torch.float32),
    ((4096, 301), (4096, 1), torch.float16),
    ((8, 64, 2117), (8, 1, 2117), torch.bfloat16),
    ((64, 1, 301), (1, 128, 301), torch.int32),
]


def _operand(shape, dtype):
    if dtype.is_floating_point:
        return torch.randn(shape).to(dtype)
    return torch.randint(-100000, 100000, shape, dtype=dtype)


def _case(shape_a, shape_b, dtype):
    return [_operand(shape_a, dtype), _operand(shape_b, dtype)]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
