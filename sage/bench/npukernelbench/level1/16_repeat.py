import torch

DESCRIPTION = (
    "Tile x by repeating it along each dimension (x.repeat(*repeats)); extra leading repeats add dimensions. "
    "Inputs: x and the list of repeat counts."
)
TAGS = ["layout", "broadcast"]


class Model(torch.nn.Module):
    def forward(self, x, repeats):
        return x.repeat(*repeats)


_CASES = [
    ((512, 301), torch.float32, [2, 3]),
    ((64, 1, 2117), torch.float16, [1, 8, 1]),
    ((1000, 301), torch.bfloat16, [3, 1, 2]),
    ((8, 16, 33), torch.int32, [2, 2, 2]),
]


def _case(shape, dtype, repeats):
    if dtype.is_floating_point:
        return [torch.randn(shape).to(dtype), repeats]
    return [torch.randint(-100000, 100000, shape, dtype=dtype), repeats]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
