import torch

DESCRIPTION = (
    "Histogram of all elements into 'bins' equal-width bins over [min, max] (torch.histc): values outside "
    "the range are ignored, a value equal to max goes to the last bin. Inputs: x, bins, min, max. Counts are "
    "accumulated exactly and returned in the input dtype."
)
TAGS = ["reduction", "histogram"]


class Model(torch.nn.Module):
    def forward(self, x, bins, min_value, max_value):
        # torch's CPU histc accumulates half-precision counts in half precision, which stops
        # counting at 2048 (fp16) / 256 (bf16); count in float32 and round once instead.
        return torch.histc(x.float(), bins=bins, min=min_value, max=max_value).to(x.dtype)


_CASES = [
    ((2048, 1024), torch.float32, 256, -4.0, 4.0),
    ((4096, 301), torch.float16, 64, -4.0, 4.0),
    ((512, 2117), torch.bfloat16, 32, -2.0, 6.0),
    ((1000, 301), torch.float32, 100, 0.0, 1.0),
]

_SUBCELLS = 4


def _case(shape, dtype, bins, min_value, max_value):
    # Values sit at the centres of sub-cells of the bins (never near a bin edge), so every
    # correct binning formula gives the same counts; about 1/8 fall outside the range and
    # 1% are exactly max (which belongs to the last bin).
    cells = bins * _SUBCELLS
    k = torch.randint(-cells // 16, cells + cells // 16, shape).float()
    width = (max_value - min_value) / cells
    x = min_value + (k + 0.5) * width
    x = torch.where(torch.rand(shape) < 0.01, torch.full(shape, max_value), x)
    return [x.to(dtype), bins, min_value, max_value]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
