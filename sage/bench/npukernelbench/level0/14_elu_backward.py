import torch

DESCRIPTION = (
    "Gradient of ELU from the forward input (aten elu_backward with scale = input_scale = 1, is_result = False): "
    "grad_input = grad_output where x > 0, grad_output * alpha * exp(x) otherwise. "
    "Inputs: grad_output, x, python float alpha; computed in float32, returned in the input dtype."
)
TAGS = ["elementwise", "backward", "activation"]
# torch_npu runs this as one vendor kernel; our explicit math would otherwise be timed as several launches.
FUSED_OP = "aclnnEluBackward"


class Model(torch.nn.Module):
    def forward(self, grad_output, x, alpha):
        g = grad_output.float()
        xf = x.float()
        return torch.where(xf > 0, g, g * alpha * torch.exp(xf)).to(grad_output.dtype)


_CASES = [
    ((2048, 1024), torch.float32, 1.0),
    ((4096, 301), torch.float16, 1.0),
    ((512, 2117), torch.bfloat16, 0.5),
    ((16, 64, 301), torch.float32, 1.5),
]


def _case(shape, dtype, alpha):
    return [torch.randn(shape).to(dtype), (torch.randn(shape) * 2.0).to(dtype), alpha]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
