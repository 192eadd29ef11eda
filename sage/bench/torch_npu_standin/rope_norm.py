"""Rotary embeddings and fused norms: npu_rotary_mul, npu_interleave_rope, npu_group_norm_swish.

Each body follows the formula of the op's torch_npu page (Ascend/op-plugin, docs/zh/custom_APIs/
torch_npu/), computed in float32 and returned in the input's dtype as the pages state.
"""

from __future__ import annotations

import torch

from sage.bench.torch_npu_standin._op import standin

def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def _rotate_interleaved(x: torch.Tensor) -> torch.Tensor:
    pairs = x.unflatten(-1, (-1, 2))
    return torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).flatten(-2)


@standin("npu_rotary_mul")
def npu_rotary_mul(input: torch.Tensor, r1: torch.Tensor, r2: torch.Tensor,
                   rotary_mode: str = "half") -> torch.Tensor:
    """output = input * r1 + rotate(input) * r2, rotate by halves ('half') or by even/odd
    pairs ('interleave'); r1, r2 broadcast to input.
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_rotary_mul.md"""
    x = input.float()
    if rotary_mode not in ("half", "interleave"):
        raise ValueError(f"rotary_mode must be 'half' or 'interleave', got {rotary_mode!r}")
    rot = _rotate_half(x) if rotary_mode == "half" else _rotate_interleaved(x)
    return (x * r1.float() + rot * r2.float()).to(input.dtype)


@standin("npu_interleave_rope")
def npu_interleave_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """q = x with each (even, odd) pair of the last axis de-interleaved into halves
    (reshape [..., D/2, 2] -> transpose -> [..., D]); out = q * cos + rotate_half(q) * sin.
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_interleave_rope.md"""
    xf = x.float()
    q = xf.unflatten(-1, (-1, 2)).transpose(-1, -2).flatten(-2)
    return (q * cos.float() + _rotate_half(q) * sin.float()).to(x.dtype)


@standin("npu_group_norm_swish")
def npu_group_norm_swish(input: torch.Tensor, num_groups: int, weight: torch.Tensor, bias: torch.Tensor,
                         eps: float = 1e-5, swish_scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GroupNorm over axis 1 split into num_groups (biased variance), affine, then swish
    y / (1 + exp(-swish_scale * y)); returns (y, mean [N, G], rstd [N, G]), all in input's dtype.
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_group_norm_swish.md"""
    n, c = input.shape[0], input.shape[1]
    x = input.float().reshape(n, num_groups, -1)
    mean = x.mean(dim=-1)
    var = (x - mean.unsqueeze(-1)).square().mean(dim=-1)
    rstd = torch.rsqrt(var + eps)
    y = ((x - mean.unsqueeze(-1)) * rstd.unsqueeze(-1)).reshape(input.shape)
    shape = [1, c] + [1] * (input.dim() - 2)
    y = y * weight.float().reshape(shape) + bias.float().reshape(shape)
    y = y * torch.sigmoid(swish_scale * y)
    return y.to(input.dtype), mean.to(input.dtype), rstd.to(input.dtype)
