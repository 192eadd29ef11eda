import torch

DESCRIPTION = (
    "Permute the dimensions of x into a new contiguous tensor (x.permute(dims).contiguous()). "
    "Inputs: x and the list dims."
)
TAGS = ["layout", "transpose"]


class Model(torch.nn.Module):
    def forward(self, x, dims):
        return x.permute(dims).contiguous()


_CASES = [
    ((1024, 2048), torch.float32, [1, 0]),
    ((8, 301, 32, 16), torch.float16, [0, 2, 1, 3]),
    ((2117, 512), torch.bfloat16, [1, 0]),
    ((16, 33, 301), torch.int32, [2, 0, 1]),
]


def _case(shape, dtype, dims):
    if dtype.is_floating_point:
        return [torch.randn(shape).to(dtype), dims]
    return [torch.randint(-100000, 100000, shape, dtype=dtype), dims]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
