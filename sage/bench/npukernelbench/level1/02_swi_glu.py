import torch
import torch.nn.functional as F

DESCRIPTION = (
    "SwiGLU: split x into halves a, b along dim and return silu(a) * b (the output has half the size along dim). "
    "Inputs: x and the python int dim; computed in the input dtype (eager torch)."
)
TAGS = ["elementwise", "activation", "glu"]


class Model(torch.nn.Module):
    def forward(self, x, dim):
        # An eager chain in the input dtype, as the public reference: silu, then a multiply.
        gate, value = x.chunk(2, dim=dim)
        return F.silu(gate) * value


_CASES = [
    ((2048, 2048), torch.float32, -1),
    ((4096, 602), torch.float16, -1),
    ((512, 4234), torch.bfloat16, -1),
    ((16, 128, 301), torch.float32, 1),
]


def _case(shape, dtype, dim):
    return [(torch.randn(shape) * 2.0).to(dtype), dim]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
