import torch
import torch.nn.functional as F

DESCRIPTION = (
    "Resize the spatial dims of x (N, C, H, W) to size (F.interpolate) with mode 'nearest' (source index "
    "floor(dst * in / out)) or 'bilinear' (align_corners False or True). Inputs: x, size, mode, align_corners "
    "(None for nearest)."
)
TAGS = ["vision", "interpolate"]


class Model(torch.nn.Module):
    def forward(self, x, size, mode, align_corners):
        return F.interpolate(x, size=size, mode=mode, align_corners=align_corners)


# Nearest cases use exact power-of-two scale ratios, so the floor() source index is the same
# for every correct formula.
_CASES = [
    ((4, 16, 64, 64), [128, 128], torch.float32, "nearest", None),
    ((2, 8, 37, 301), [74, 602], torch.float16, "bilinear", False),
    ((1, 4, 150, 602), [75, 301], torch.bfloat16, "nearest", None),
    ((2, 8, 33, 65), [100, 2117], torch.float32, "bilinear", True),
]


def _case(shape, size, dtype, mode, align_corners):
    return [torch.randn(shape).to(dtype), size, mode, align_corners]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
