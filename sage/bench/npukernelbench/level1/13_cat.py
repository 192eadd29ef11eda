import torch

DESCRIPTION = "Concatenate three tensors along one dimension (torch.cat). Inputs: a, b, c and the python int dim."
TAGS = ["layout", "concat"]


class Model(torch.nn.Module):
    def forward(self, a, b, c, dim):
        return torch.cat([a, b, c], dim=dim)


_CASES = [
    (((1024, 512), (1024, 301), (1024, 211)), torch.float32, -1),
    (((100, 2117), (301, 2117), (7, 2117)), torch.float16, 0),
    (((8, 64, 301), (8, 1, 301), (8, 33, 301)), torch.bfloat16, 1),
    (((64, 1, 301), (64, 3, 301), (64, 2, 301)), torch.int32, 1),
]


def _operand(shape, dtype):
    if dtype.is_floating_point:
        return torch.randn(shape).to(dtype)
    return torch.randint(-100000, 100000, shape, dtype=dtype)


def _case(shapes, dtype, dim):
    return [*(_operand(shape, dtype) for shape in shapes), dim]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
