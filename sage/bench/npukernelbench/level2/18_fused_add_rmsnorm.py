"""Residual add followed by RMSNorm (vLLM fused_add_rms_norm)."""

import torch

DESCRIPTION = (
    "fused_add_rms_norm (vLLM RMSNorm.forward_native with a residual): x, residual [T, H], "
    "weight [H], eps. h = x + residual in fp32; residual_out = h in the input dtype; "
    "out = (h * rsqrt(mean(h^2) + eps)) rounded to the input dtype, times weight. "
    "Returns (out, residual_out), both [T, H] in the input dtype."
)
TAGS = ["norm", "elementwise", "reduction", "residual"]


class Model(torch.nn.Module):
    def forward(self, x, residual, weight, eps: float):
        h = x.float() + residual.float()
        residual_out = h.to(x.dtype)
        normed = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)
        return normed.to(x.dtype) * weight, residual_out


def get_init_inputs():
    return []


# (dtype, T, H)
_CASES = [
    (torch.bfloat16, 512, 4096),
    (torch.float16, 301, 2117),
    (torch.float32, 1024, 1024),
]


def _case(dtype, t, h):
    x = torch.randn(t, h).to(dtype)
    residual = (torch.randn(t, h) * 4).to(dtype)
    weight = (1 + 0.1 * torch.randn(h)).to(dtype)
    return [x, residual, weight, 1e-6]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
