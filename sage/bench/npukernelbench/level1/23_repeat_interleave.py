import torch

DESCRIPTION = (
    "Repeat each slice of x along dim (torch.repeat_interleave): repeats is a python int (same count for every "
    "slice) or an int64 tensor with one count per slice (counts may be 0). Inputs: x, repeats, the python int dim."
)
TAGS = ["index", "layout"]


class Model(torch.nn.Module):
    def forward(self, x, repeats, dim):
        return torch.repeat_interleave(x, repeats, dim=dim)


_CASES = [
    ((1024, 301), torch.float32, "int", 0),
    ((512, 2117), torch.float16, "tensor", 0),
    ((64, 301), torch.bfloat16, "tensor", 1),
    ((2048, 77), torch.int32, "int", 1),
]


def _case(shape, dtype, repeats_kind, dim):
    if dtype.is_floating_point:
        x = torch.randn(shape).to(dtype)
    else:
        x = torch.randint(-100000, 100000, shape, dtype=dtype)
    repeats = torch.randint(0, 5, (shape[dim],)) if repeats_kind == "tensor" else 3
    return [x, repeats, dim]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
