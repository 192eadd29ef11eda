import torch

DESCRIPTION = (
    "Gradient of ReLU from its saved result: grad_input = grad_output where result > 0, else 0. "
    "Inputs: grad_output and the forward result relu(x)."
)
TAGS = ["elementwise", "backward", "activation"]


class Model(torch.nn.Module):
    def forward(self, grad_output, result):
        # One aten op (ReLU's backward is threshold_backward at 0): torch_npu launches one kernel.
        return torch.ops.aten.threshold_backward(grad_output, result, 0.0)


_CASES = [
    ((2048, 1024), torch.float32),
    ((4096, 301), torch.float16),
    ((512, 2117), torch.bfloat16),
    ((16, 64, 301), torch.float32),
]


def _case(shape, dtype):
    return [torch.randn(shape).to(dtype), torch.relu(torch.randn(shape)).to(dtype)]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
