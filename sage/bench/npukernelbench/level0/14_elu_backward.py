import torch

DESCRIPTION = (
    "Gradient of ELU from the forward input (aten elu_backward with scale = input_scale = 1, is_result = False): "
    "grad_input = grad_output where x > 0, grad_output * alpha * exp(x) otherwise. "
    "Inputs: grad_output, x, python float alpha; float16 computed in float32, other dtypes as they are."
)
TAGS = ["elementwise", "backward", "activation"]


class Model(torch.nn.Module):
    def forward(self, grad_output, x, alpha):
        # An eager chain, as the public reference, which upcasts float16 (only) to float32.
        half = grad_output.dtype == torch.float16
        g, xs = (grad_output.float(), x.float()) if half else (grad_output, x)
        scale = torch.where(xs <= 0, torch.exp(xs) * alpha, 1.0)
        out = g * scale
        return out.to(torch.float16) if half else out


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
