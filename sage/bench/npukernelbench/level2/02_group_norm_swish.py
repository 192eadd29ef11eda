"""GroupNorm followed by Swish, as torch_npu.npu_group_norm_swish."""

import torch

DESCRIPTION = (
    "npu_group_norm_swish: x [N, C, *] split into num_groups groups of channels; per (n, g) "
    "mean and rstd = 1/sqrt(var + eps) (biased variance); z = (x - mean) * rstd * weight[c] "
    "+ bias[c]; y = z * sigmoid(swish_scale * z). Returns (y [x.shape], mean [N, G], "
    "rstd [N, G]), all in x's dtype; computed in fp32."
)
TAGS = ["norm", "activation", "reduction"]
FUSED_OP = "torch_npu.npu_group_norm_swish"


class Model(torch.nn.Module):
    def forward(self, x, weight, bias, num_groups: int, eps: float, swish_scale: float):
        n, c = x.shape[:2]
        xf = x.float().reshape(n, num_groups, -1)
        mean = xf.mean(dim=-1)
        var = xf.var(dim=-1, unbiased=False)
        rstd = torch.rsqrt(var + eps)
        normed = ((xf - mean[..., None]) * rstd[..., None]).reshape(x.shape)
        affine_shape = (1, c) + (1,) * (x.dim() - 2)
        z = normed * weight.float().reshape(affine_shape) + bias.float().reshape(affine_shape)
        y = z * torch.sigmoid(swish_scale * z)
        return y.to(x.dtype), mean.to(x.dtype), rstd.to(x.dtype)


def get_init_inputs():
    return []


# (dtype, shape, groups, eps, swish_scale)
_CASES = [
    (torch.float16, (8, 320, 32, 32), 32, 1e-5, 1.0),
    (torch.bfloat16, (4, 256, 301), 16, 1e-6, 1.0),
    (torch.float32, (2, 96, 17, 23), 8, 1e-5, 1.702),
]


def _case(dtype, shape, groups, eps, swish_scale):
    c = shape[1]
    x = (torch.randn(shape) * 2 + 0.5).to(dtype)
    weight = (1 + 0.1 * torch.randn(c)).to(dtype)
    bias = (0.1 * torch.randn(c)).to(dtype)
    return [x, weight, bias, groups, eps, swish_scale]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
