import torch

DESCRIPTION = (
    "Swish with a scale: x * sigmoid(beta * x), elementwise (beta = 1 is SiLU). "
    "Inputs: x and the python float beta; computed in float32, returned in the input dtype."
)
TAGS = ["elementwise", "activation"]
# torch_npu runs this as one vendor kernel; our explicit math would otherwise be timed as several launches.
FUSED_OP = "aclnnSwish"


class Model(torch.nn.Module):
    def forward(self, x, beta):
        xf = x.float()
        return (xf * torch.sigmoid(beta * xf)).to(x.dtype)


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
