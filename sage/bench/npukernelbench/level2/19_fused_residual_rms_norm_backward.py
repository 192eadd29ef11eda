"""Backward of residual add + RMSNorm."""

import torch

DESCRIPTION = (
    "Backward of h = x + residual; y = h * rstd * weight with rstd = rsqrt(mean(h^2) + eps) "
    "per row (h is also passed on as the new residual stream). Inputs: grad_out [T, H] "
    "(grad of y), grad_residual_out [T, H] (grad of h from the residual stream), h [T, H], "
    "rstd [T] fp32 (saved by the forward), weight [H]. gw = grad_out * weight; "
    "grad_h = rstd * (gw - h * rstd^2 * mean(gw * h)) + grad_residual_out (this is the "
    "gradient of both x and residual); grad_weight = sum over rows of grad_out * h * rstd. "
    "Returns (grad_h, grad_weight) in the input dtype, fp32 math."
)
TAGS = ["backward", "norm", "reduction", "residual"]


class Model(torch.nn.Module):
    def forward(self, grad_out, grad_residual_out, h, rstd, weight):
        g, hf, r = grad_out.float(), h.float(), rstd.float()[:, None]
        gw = g * weight.float()
        grad_h = r * (gw - hf * r * r * (gw * hf).mean(dim=-1, keepdim=True))
        grad_h = grad_h + grad_residual_out.float()
        grad_weight = (g * hf * r).sum(dim=0)
        return grad_h.to(h.dtype), grad_weight.to(weight.dtype)


def get_init_inputs():
    return []


# (dtype, T, H, eps)
_CASES = [
    (torch.bfloat16, 512, 4096, 1e-6),
    (torch.float16, 301, 2117, 1e-5),
    (torch.float32, 1024, 1024, 1e-6),
]


def _case(dtype, t, hidden, eps):
    h = (torch.randn(t, hidden) * 2).to(dtype)
    rstd = torch.rsqrt(h.float().pow(2).mean(dim=-1) + eps)
    return [
        torch.randn(t, hidden).to(dtype),
        torch.randn(t, hidden).to(dtype),
        h,
        rstd,
        (1 + 0.1 * torch.randn(hidden)).to(dtype),
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
