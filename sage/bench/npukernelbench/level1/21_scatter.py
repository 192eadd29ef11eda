import torch

DESCRIPTION = (
    "Out-of-place torch.scatter on 2-D tensors: a copy of x with out[index[i][j]][j] = src[i][j] (dim 0) "
    "or out[i][index[i][j]] = src[i][j] (dim 1); the indices along dim are distinct so every write is "
    "unambiguous. Inputs: x, the python int dim, int64 index, src (same shape as index)."
)
TAGS = ["index", "scatter"]


class Model(torch.nn.Module):
    def forward(self, x, dim, index, src):
        return torch.scatter(x, dim, index, src)


_CASES = [
    ((1024, 2117), 301, torch.float32, 1),
    ((4096, 301), 1000, torch.float16, 0),
    ((64, 1024), 1024, torch.bfloat16, 1),
    ((256, 301), 100, torch.int32, 1),
]


def _operand(shape, dtype):
    if dtype.is_floating_point:
        return torch.randn(shape).to(dtype)
    return torch.randint(-100000, 100000, shape, dtype=dtype)


def _case(shape, count, dtype, dim):
    # Per line along dim: the first 'count' entries of a random permutation of that dim.
    other = shape[1 - dim]
    index = torch.rand(other, shape[dim]).argsort(dim=-1)[:, :count]
    if dim == 0:
        index = index.t().contiguous()
    return [_operand(shape, dtype), dim, index, _operand(tuple(index.shape), dtype)]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
