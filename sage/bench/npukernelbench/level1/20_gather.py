import torch

DESCRIPTION = (
    "torch.gather: out[i][j] = x[index[i][j]][j] for dim 0 (and likewise for other dims); index is int64 "
    "with the output's shape. Inputs: x, the python int dim, index."
)
TAGS = ["index", "gather"]


class Model(torch.nn.Module):
    def forward(self, x, dim, index):
        return torch.gather(x, dim, index)


_CASES = [
    ((1024, 2117), (1024, 64), torch.float32, 1),
    ((4096, 301), (1000, 301), torch.float16, 0),
    ((16, 64, 301), (16, 64, 17), torch.bfloat16, 2),
    ((512, 1024), (512, 301), torch.int32, 1),
]


def _case(shape, index_shape, dtype, dim):
    if dtype.is_floating_point:
        x = torch.randn(shape).to(dtype)
    else:
        x = torch.randint(-100000, 100000, shape, dtype=dtype)
    return [x, dim, torch.randint(0, shape[dim], index_shape)]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
