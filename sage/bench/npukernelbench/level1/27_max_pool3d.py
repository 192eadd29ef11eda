import torch
import torch.nn.functional as F

DESCRIPTION = (
    "3-D max pooling of x (N, C, D, H, W) (F.max_pool3d, implicit -inf padding, floor mode), values only. "
    "Inputs: x, kernel_size, stride, padding, dilation (ints or 3-lists)."
)
TAGS = ["pooling", "reduction"]


class Model(torch.nn.Module):
    def forward(self, x, kernel_size, stride, padding, dilation):
        return F.max_pool3d(x, kernel_size, stride, padding, dilation)


_CASES = [
    ((2, 16, 16, 64, 64), torch.float32, 2, 2, 0, 1),
    ((1, 8, 17, 33, 301), torch.float16, 3, 2, 1, 1),
    ((4, 4, 8, 32, 130), torch.bfloat16, [2, 3, 3], 1, [0, 1, 1], 1),
    ((1, 32, 9, 21, 21), torch.float32, 3, 1, 0, 2),
]


def _case(shape, dtype, kernel_size, stride, padding, dilation):
    return [torch.randn(shape).to(dtype), kernel_size, stride, padding, dilation]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
