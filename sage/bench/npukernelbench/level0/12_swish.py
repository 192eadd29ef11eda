import torch

DESCRIPTION = (
    "Swish with a scale: x * sigmoid(beta * x), elementwise (beta = 1 is SiLU). "
    "Inputs: x and the python float beta; computed in the input dtype (eager torch)."
)
TAGS = ["elementwise", "activation"]


class Model(torch.nn.Module):
    def forward(self, x, beta):
        # An eager chain in the input dtype, as the public reference: scale, exp, add, divide.
        return torch.div(x, torch.exp(x * -beta) + 1.0)


_CASES = [
    ((2048, 1024), torch.float32, 1.0),
    ((4096, 301), torch.float16, 1.702),
    ((512, 2117), torch.bfloat16, 1.0),
    ((16, 64, 301), torch.float32, 0.5),
]


def _case(shape, dtype, beta):
    return [(torch.randn(shape) * 3.0).to(dtype), beta]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
