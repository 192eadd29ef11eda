import torch
import torch.nn.functional as F

DESCRIPTION = (
    "3-D average pooling of x (N, C, D, H, W) (F.avg_pool3d, zero padding counted in the average, floor mode). "
    "Inputs: x, kernel_size, stride, padding (ints or 3-lists); computed in float32, returned in the input dtype."
)
TAGS = ["pooling", "reduction"]


class Model(torch.nn.Module):
    def forward(self, x, kernel_size, stride, padding):
        # torch's CPU avg_pool3d has no half-precision kernel; average in float32 and round once.
        return F.avg_pool3d(x.float(), kernel_size, stride, padding).to(x.dtype)


_CASES = [
    ((2, 16, 16, 64, 64), torch.float32, 2, 2, 0),
    ((1, 8, 17, 33, 301), torch.float16, 3, 2, 1),
    ((4, 4, 8, 32, 130), torch.bfloat16, [2, 3, 3], 1, [0, 1, 1]),
    ((1, 32, 9, 21, 21), torch.float32, 3, 3, 0),
]


def _case(shape, dtype, kernel_size, stride, padding):
    return [torch.randn(shape).to(dtype), kernel_size, stride, padding]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
