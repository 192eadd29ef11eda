"""Backward of 2-D adaptive instance normalisation (AdaIN)."""

import torch

DESCRIPTION = (
    "AdaIN backward. Forward: per (n, c) over H*W, mu = mean(x), s = 1/sqrt(var_unbiased(x) "
    "+ eps), xhat = (x - mu) * s, y = style_std[n, c] * xhat + style_mean[n, c]. Inputs: "
    "grad_out, x [N, C, H, W], style_mean, style_std [N, C], eps. With g = grad_out and "
    "gh = g * style_std: grad_x = s * (gh - mean(gh) - xhat * sum(gh * xhat) / (HW - 1)), "
    "grad_style_mean = sum(g), grad_style_std = sum(g * xhat) (sums over H, W). Returns "
    "(grad_x, grad_style_mean, grad_style_std) in the input dtype, computed in fp32."
)
TAGS = ["backward", "norm", "reduction"]


class Model(torch.nn.Module):
    def forward(self, grad_out, x, style_mean, style_std, eps: float):
        g, xf = grad_out.float(), x.float()
        hw = xf.shape[2] * xf.shape[3]
        mu = xf.mean(dim=(2, 3), keepdim=True)
        s = torch.rsqrt(xf.var(dim=(2, 3), unbiased=True, keepdim=True) + eps)
        xhat = (xf - mu) * s
        gh = g * style_std.float()[..., None, None]
        grad_x = s * (
            gh
            - gh.mean(dim=(2, 3), keepdim=True)
            - xhat * (gh * xhat).sum(dim=(2, 3), keepdim=True) / (hw - 1)
        )
        grad_mean = g.sum(dim=(2, 3))
        grad_std = (g * xhat).sum(dim=(2, 3))
        return grad_x.to(x.dtype), grad_mean.to(x.dtype), grad_std.to(x.dtype)


def get_init_inputs():
    return []


# (dtype, N, C, H, W)
_CASES = [
    (torch.float32, 4, 64, 32, 32),
    (torch.float16, 2, 128, 17, 43),
    (torch.bfloat16, 8, 32, 64, 64),
]


def _case(dtype, n, c, h, w):
    x = (torch.randn(n, c, h, w) * 2 + 1).to(dtype)
    grad_out = torch.randn(n, c, h, w).to(dtype)
    style_mean = torch.randn(n, c).to(dtype)
    style_std = (0.5 + torch.rand(n, c)).to(dtype)
    return [grad_out, x, style_mean, style_std, 1e-5]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
