"""Backward of a tanh-gated residual add (Flamingo / Llama 3.2 vision cross-attention gates)."""

import torch

DESCRIPTION = (
    "Forward: out = residual + tanh(gate) * x, gate [H] broadcast over [B, S, H]. Inputs: "
    "grad_out, x [B, S, H], gate [H]. grad_x = grad_out * tanh(gate); grad_gate = "
    "(1 - tanh(gate)^2) * sum over B, S of grad_out * x. (grad_residual is grad_out itself "
    "and is not returned.) Returns (grad_x in x's dtype, grad_gate in gate's dtype), fp32 "
    "math."
)
TAGS = ["backward", "elementwise", "reduction", "residual"]


class Model(torch.nn.Module):
    def forward(self, grad_out, x, gate):
        g = grad_out.float()
        tanh_gate = torch.tanh(gate.float())
        grad_x = g * tanh_gate
        grad_gate = (1 - tanh_gate * tanh_gate) * (g * x.float()).sum(dim=(0, 1))
        return grad_x.to(x.dtype), grad_gate.to(gate.dtype)


def get_init_inputs():
    return []


# (dtype, B, S, H)
_CASES = [
    (torch.bfloat16, 2, 512, 4096),
    (torch.float32, 4, 301, 1024),
    (torch.float16, 1, 2117, 768),
]


def _case(dtype, b, s, h):
    return [
        torch.randn(b, s, h).to(dtype),
        torch.randn(b, s, h).to(dtype),
        (0.5 * torch.randn(h)).to(dtype),
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
