import torch

DESCRIPTION = (
    "Sort along one dimension (torch.sort), returning (values, int64 indices). "
    "Inputs: x, the python int dim and the python bool descending; values along dim are distinct."
)
TAGS = ["sort"]


class Model(torch.nn.Module):
    def forward(self, x, dim, descending):
        values, indices = torch.sort(x, dim=dim, descending=descending)
        return values, indices


# Bit patterns of positive floats order like the floats, so consecutive patterns starting at
# 0.125 give n distinct, exactly representable values in any float dtype: no ties, so the
# order (and hence every index) is unique.
_BITS = {
    torch.float32: (torch.int32, 0x3E000000),
    torch.float16: (torch.int16, 0x3000),
    torch.bfloat16: (torch.int16, 0x3E00),
}


def _distinct_rows(rows, n, dtype):
    """A (rows, n) tensor whose every row holds n distinct values in random order."""
    rank = torch.rand(rows, n).argsort(dim=-1)
    half = n // 2
    if not dtype.is_floating_point:
        return (rank - half).to(dtype)
    int_dtype, base = _BITS[dtype]
    magnitude_rank = torch.where(rank >= half, rank - half, half - 1 - rank)
    magnitude = (magnitude_rank + base).to(int_dtype).view(dtype).float()
    return torch.where(rank >= half, magnitude, -magnitude).to(dtype)


_CASES = [
    ((1024, 301), torch.float32, -1, False),
    ((256, 2117), torch.float16, -1, True),
    ((2117, 100), torch.bfloat16, 0, False),
    ((64, 4096), torch.int32, -1, True),
]


def _case(shape, dtype, dim, descending):
    if dim == 0:
        x = _distinct_rows(shape[1], shape[0], dtype).t().contiguous()
    else:
        x = _distinct_rows(shape[0], shape[1], dtype)
    return [x, dim, descending]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
