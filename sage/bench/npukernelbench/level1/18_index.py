import torch

DESCRIPTION = (
    "Advanced indexing with one int64 index tensor along one dimension (x[:, ..., indices] at position dim; "
    "indices may repeat). Inputs: x, indices, the python int dim."
)
TAGS = ["index", "gather"]


class Model(torch.nn.Module):
    def forward(self, x, indices, dim):
        return x[(slice(None),) * dim + (indices,)]


_CASES = [
    ((8192, 301), torch.float32, 4096, 0),
    ((64, 2117), torch.float16, 1000, 1),
    ((16, 512, 130), torch.bfloat16, 300, 1),
    ((4096, 301), torch.int32, 2048, 0),
]


def _case(shape, dtype, count, dim):
    if dtype.is_floating_point:
        x = torch.randn(shape).to(dtype)
    else:
        x = torch.randint(-100000, 100000, shape, dtype=dtype)
    return [x, torch.randint(0, shape[dim], (count,)), dim]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
