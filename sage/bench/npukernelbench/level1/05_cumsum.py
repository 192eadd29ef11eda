import torch

DESCRIPTION = (
    "Inclusive prefix sum along one dimension (torch.cumsum; int32 input gives int64 output, as in torch). "
    "Inputs: x and the python int dim."
)
TAGS = ["scan"]


class Model(torch.nn.Module):
    def forward(self, x, dim):
        return torch.cumsum(x, dim=dim)


_CASES = [
    ((1024, 1024), torch.float32, -1),
    ((4096, 301), torch.float16, -1),
    ((2117, 256), torch.bfloat16, 0),
    ((512, 2117), torch.int32, -1),
]


def _case(shape, dtype, dim):
    if dtype.is_floating_point:
        return [torch.randn(shape).to(dtype), dim]
    return [torch.randint(-1000, 1000, shape, dtype=dtype), dim]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
