import torch

DESCRIPTION = (
    "Coordinates of the nonzero elements of x in row-major order (torch.nonzero): an int64 tensor of shape "
    "(count, x.dim()); the count depends on the data."
)
TAGS = ["index", "compaction"]


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.nonzero(x)


_CASES = [
    ((2048, 1024), torch.float32, 0.1),
    ((4096, 301), torch.bool, 0.5),
    ((64, 2117), torch.int32, 0.3),
    ((8, 64, 301), torch.float16, 0.9),
]


def _case(shape, dtype, density):
    keep = torch.rand(shape) < density
    if dtype == torch.bool:
        return [keep]
    values = torch.randn(shape) + 3.0 if dtype.is_floating_point else torch.randint(1, 1000, shape).float()
    return [torch.where(keep, values, torch.zeros(shape)).to(dtype)]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
