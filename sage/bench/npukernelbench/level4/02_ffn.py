"""Transformer feed-forward block: activation(x W1 + b1) W2 + b2."""

import torch

DESCRIPTION = (
    "FFN: x [T, H], w1 [H, I], b1 [I], w2 [I, H], b2 [H]. y = gelu(x @ w1 + b1) @ w2 + b2 "
    "with the exact (erf) GELU. fp32 math with one rounding at the end; y [T, H] in x's "
    "dtype. Cases include I and T not multiples of 16."
)
TAGS = ["matmul", "activation", "ffn"]
# The public reference calls this one torch_npu operator: the vendor runs one fused kernel.
FUSED_OP = "torch_npu.npu_ffn"


class Model(torch.nn.Module):
    def forward(self, x, w1, b1, w2, b2):
        hidden = torch.nn.functional.gelu(x.float() @ w1.float() + b1.float())
        return (hidden @ w2.float() + b2.float()).to(x.dtype)


def get_init_inputs():
    return []


# (dtype, T, H, I)
_CASES = [
    (torch.bfloat16, 512, 1024, 2816),
    (torch.float16, 301, 768, 3072),
    (torch.float32, 128, 512, 2117),
]


def _case(dtype, t, h, i):
    return [
        torch.randn(t, h).to(dtype),
        (torch.randn(h, i) * h**-0.5).to(dtype),
        (0.1 * torch.randn(i)).to(dtype),
        (torch.randn(i, h) * i**-0.5).to(dtype),
        (0.1 * torch.randn(h)).to(dtype),
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
