import torch

DESCRIPTION = (
    "Split x into pieces of the given sizes along one dimension (torch.split), each returned as a new "
    "contiguous tensor. Inputs: x, the list of split sizes, the python int dim."
)
TAGS = ["layout", "split"]


class Model(torch.nn.Module):
    def forward(self, x, split_sizes, dim):
        pieces = torch.split(x, split_sizes, dim=dim)
        # split returns views; clone so every piece is a real copy, as the kernel must produce.
        return tuple(piece.clone(memory_format=torch.contiguous_format) for piece in pieces)


_CASES = [
    ((1024, 2048), torch.float32, [1024, 301, 723], -1),
    ((2117, 512), torch.float16, [1000, 1117], 0),
    ((8, 64, 2117), torch.bfloat16, [16, 16, 32], 1),
    ((64, 4096), torch.int32, [2117, 1979], 1),
]


def _case(shape, dtype, split_sizes, dim):
    if dtype.is_floating_point:
        return [torch.randn(shape).to(dtype), split_sizes, dim]
    return [torch.randint(-100000, 100000, shape, dtype=dtype), split_sizes, dim]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
