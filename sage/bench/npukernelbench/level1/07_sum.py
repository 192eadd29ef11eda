import torch

DESCRIPTION = (
    "Sum over a list of dimensions (torch.sum, keepdim=False; int32 sums to int64 as in torch). "
    "Inputs: x and the list of dims."
)
TAGS = ["reduction"]


class Model(torch.nn.Module):
    def forward(self, x, dims):
        return torch.sum(x, dim=dims)


_CASES = [
    ((2048, 1024), torch.float32, [-1]),
    ((64, 301, 128), torch.float16, [0, 2]),
    ((512, 2117), torch.bfloat16, [0]),
    ((1024, 301), torch.int32, [-1]),
]


def _case(shape, dtype, dims):
    if dtype.is_floating_point:
        return [torch.randn(shape).to(dtype), dims]
    return [torch.randint(-1000, 1000, shape, dtype=dtype), dims]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
