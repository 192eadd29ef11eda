"""Backward of an embedding lookup followed by LayerNorm (BLOOM-style embedding norm)."""

import torch

DESCRIPTION = (
    "Forward: e = weight[input_ids]; y = LayerNorm(e) * gamma + beta over H (biased "
    "variance, eps). Inputs: grad_out [B, S, H], input_ids [B, S] int64 in [0, V), "
    "weight [V, H], gamma [H], eps. With xhat the normalised e, rstd = 1/sqrt(var + eps), "
    "gh = grad_out * gamma: grad_e = rstd * (gh - mean(gh) - xhat * mean(gh * xhat)); "
    "grad_weight [V, H] = sum of grad_e over the positions holding each id (zero rows for "
    "unused ids); grad_gamma = sum(grad_out * xhat), grad_beta = sum(grad_out) over B, S. "
    "Returns (grad_weight, grad_gamma, grad_beta) in weight's dtype, fp32 accumulation."
)
TAGS = ["backward", "norm", "scatter", "reduction", "embedding"]


class Model(torch.nn.Module):
    def forward(self, grad_out, input_ids, weight, gamma, eps: float):
        h = weight.shape[1]
        e = weight.float()[input_ids].reshape(-1, h)
        g = grad_out.float().reshape(-1, h)
        mu = e.mean(dim=-1, keepdim=True)
        rstd = torch.rsqrt(e.var(dim=-1, unbiased=False, keepdim=True) + eps)
        xhat = (e - mu) * rstd
        gh = g * gamma.float()
        grad_e = rstd * (gh - gh.mean(dim=-1, keepdim=True)
                         - xhat * (gh * xhat).mean(dim=-1, keepdim=True))
        grad_weight = torch.zeros(weight.shape, dtype=torch.float32)
        grad_weight.index_add_(0, input_ids.reshape(-1), grad_e)
        grad_gamma = (g * xhat).sum(dim=0)
        grad_beta = g.sum(dim=0)
        dtype = weight.dtype
        return grad_weight.to(dtype), grad_gamma.to(dtype), grad_beta.to(dtype)


def get_init_inputs():
    return []


# (dtype, B, S, H, V)
_CASES = [
    (torch.float32, 4, 256, 768, 4096),
    (torch.bfloat16, 8, 128, 1024, 2000),
    (torch.float16, 2, 301, 301, 1000),
]


def _case(dtype, b, s, h, v):
    grad_out = torch.randn(b, s, h).to(dtype)
    input_ids = torch.randint(0, v, (b, s), dtype=torch.int64)
    weight = (torch.randn(v, h) * 0.5).to(dtype)
    gamma = (1 + 0.1 * torch.randn(h)).to(dtype)
    return [grad_out, input_ids, weight, gamma, 1e-5]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
