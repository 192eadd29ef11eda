import torch

DESCRIPTION = (
    "Gradient of mish: with t = tanh(softplus(x)), grad_input = grad_output * (t + x * sigmoid(x) * (1 - t^2)). "
    "Inputs: grad_output and the forward input x; returned in the input dtype."
)
TAGS = ["elementwise", "backward", "activation"]


class Model(torch.nn.Module):
    def forward(self, grad_output, x):
        # One aten op, as the public reference: torch_npu launches one kernel for it.
        return torch.ops.aten.mish_backward(grad_output, x)


_CASES = [
    ((2048, 1024), torch.float32),
    ((4096, 301), torch.float16),
    ((512, 2117), torch.bfloat16),
    ((16, 64, 301), torch.float32),
]


def _case(shape, dtype):
    return [torch.randn(shape).to(dtype), (torch.randn(shape) * 3.0).to(dtype)]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
