"""Rotary position embedding, rotate-half form, as torch_npu.npu_rotary_mul."""

import torch

DESCRIPTION = (
    "npu_rotary_mul (rotary_mode='half'): y = x * r1 + rotate_half(x) * r2 with "
    "rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2]). x [B, S, N, D] (BSND), r1 = cos and "
    "r2 = sin [1, S, 1, D] broadcast over batch and heads. Computed in fp32, y in x's dtype."
)
TAGS = ["rope", "elementwise", "broadcast"]
FUSED_OP = "torch_npu.npu_rotary_mul"


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor, r1: torch.Tensor, r2: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        x1, x2 = xf.chunk(2, dim=-1)
        rotated = torch.cat((-x2, x1), dim=-1)
        return (xf * r1.float() + rotated * r2.float()).to(x.dtype)


def get_init_inputs():
    return []


# (dtype, B, S, N, D)
_CASES = [
    (torch.float16, 2, 512, 16, 128),
    (torch.bfloat16, 1, 301, 8, 64),
    (torch.float32, 4, 128, 32, 128),
]


def _cos_sin(seq, dim, dtype):
    inv_freq = 10000.0 ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    angles = torch.arange(seq, dtype=torch.float32)[:, None] * inv_freq
    angles = torch.cat((angles, angles), dim=-1)[None, :, None, :]
    return angles.cos().to(dtype), angles.sin().to(dtype)


def _case(dtype, b, s, n, d):
    x = torch.randn(b, s, n, d).to(dtype)
    cos, sin = _cos_sin(s, d, dtype)
    return [x, cos, sin]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
