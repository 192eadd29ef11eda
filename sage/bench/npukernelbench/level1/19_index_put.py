import torch

DESCRIPTION = (
    "Out-of-place index_put along dim 0: rows x[indices[i]] are replaced by values[i] (accumulate=False, "
    "indices distinct) or incremented by values[i] (accumulate=True, indices may repeat; float sums are "
    "accumulated in float32). Inputs: x, int64 indices, values, python bool accumulate."
)
TAGS = ["index", "scatter"]


class Model(torch.nn.Module):
    def forward(self, x, indices, values, accumulate):
        if accumulate and x.is_floating_point():
            # CPU torch accumulates half-precision duplicates in half precision (torch_npu does not):
            # accumulate in float32 and round once. The casts are a CPU-semantics workaround.
            out = x.float().index_put((indices,), values.float(), accumulate=True)
            return out.to(x.dtype)
        return x.index_put((indices,), values, accumulate=accumulate)


_CASES = [
    ((8192, 301), torch.float32, 1000, False),
    ((4096, 301), torch.float16, 3000, True),
    ((1000, 2117), torch.bfloat16, 200, False),
    ((2048, 77), torch.int32, 4096, True),
]


def _operand(shape, dtype):
    if dtype.is_floating_point:
        return torch.randn(shape).to(dtype)
    return torch.randint(-1000, 1000, shape, dtype=dtype)


def _case(shape, dtype, count, accumulate):
    if accumulate:
        indices = torch.randint(0, shape[0], (count,))
    else:
        # Without accumulation a repeated index would leave the winning write unspecified.
        indices = torch.randperm(shape[0])[:count]
    return [_operand(shape, dtype), indices, _operand((count, *shape[1:]), dtype), accumulate]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
