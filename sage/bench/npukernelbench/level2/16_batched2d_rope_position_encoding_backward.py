"""Backward of 2-D (row/column) rotary position encoding for image-patch tokens."""

import torch

DESCRIPTION = (
    "2-D RoPE backward (vision transformers, e.g. patch grids of different sizes per "
    "batch element). Forward: x [B, S, Hh, D]; the first D/2 channels are rotated by "
    "angles pos_h[b, s] * f and the last D/2 by pos_w[b, s] * f, f_j = theta^(-4j/D), "
    "j < D/4, each half in rotate-half form: y = x * cos + rotate_half(x) * sin with "
    "cos = cat(cos(a), cos(a)). Inputs: grad_out [B, S, Hh, D], pos_h, pos_w [B, S] int64, "
    "theta. Output grad_x = grad_out * cos + rotate_half^T(grad_out * sin) per half, where "
    "rotate_half^T(v) = cat(v[..., D/4:], -v[..., :D/4]) within the half. fp32 math, "
    "grad_x in grad_out's dtype."
)
TAGS = ["backward", "rope", "elementwise"]


def _half_rotate_transpose(v):
    v1, v2 = v.chunk(2, dim=-1)
    return torch.cat((v2, -v1), dim=-1)


class Model(torch.nn.Module):
    def forward(self, grad_out, pos_h, pos_w, theta: float):
        d = grad_out.shape[-1]
        quarter = d // 4
        freqs = theta ** (-torch.arange(quarter, dtype=torch.float32) * 4 / d)
        g = grad_out.float()
        halves = []
        for part, pos in zip(g.chunk(2, dim=-1), (pos_h, pos_w)):
            angles = pos.float()[..., None] * freqs  # [B, S, D/4]
            angles = torch.cat((angles, angles), dim=-1)[:, :, None, :]
            halves.append(part * angles.cos() + _half_rotate_transpose(part * angles.sin()))
        return torch.cat(halves, dim=-1).to(grad_out.dtype)


def get_init_inputs():
    return []


# (dtype, heads, D, grids (h, w) per batch element; S = h * w is the same for all)
_CASES = [
    (torch.float32, 8, 64, [(32, 32), (16, 64)]),
    (torch.bfloat16, 16, 128, [(16, 16), (8, 32), (4, 64), (32, 8)]),
    (torch.float16, 12, 64, [(24, 24)]),
]


def _case(dtype, heads, d, grids):
    pos_h = torch.stack([torch.arange(h * w) // w for h, w in grids]).to(torch.int64)
    pos_w = torch.stack([torch.arange(h * w) % w for h, w in grids]).to(torch.int64)
    grad_out = torch.randn(len(grids), pos_h.shape[1], heads, d).to(dtype)
    return [grad_out, pos_h, pos_w, 10000.0]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
