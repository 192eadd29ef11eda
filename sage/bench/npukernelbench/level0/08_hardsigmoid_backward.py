import torch

DESCRIPTION = (
    "Gradient of hardsigmoid: grad_input = grad_output / 6 where -3 < x < 3 (open interval), else 0. "
    "Inputs: grad_output and the forward input x."
)
TAGS = ["elementwise", "backward", "activation"]
# torch_npu runs this as one vendor kernel; our explicit math would otherwise be timed as several launches.
FUSED_OP = "aclnnHardsigmoidBackward"


class Model(torch.nn.Module):
    def forward(self, grad_output, x):
        # |x| < 3 is the open interval (-3, 3); a single division rounds once in any dtype.
        return torch.where(x.abs() < 3.0, grad_output / 6.0, 0.0)


_CASES = [
    ((2048, 1024), torch.float32),
    ((4096, 301), torch.float16),
    ((512, 2117), torch.bfloat16),
    ((16, 64, 301), torch.float32),
]


def _case(shape, dtype):
    return [torch.randn(shape).to(dtype), (torch.randn(shape) * 4.0).to(dtype)]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
