"""RoPE for interleaved-layout inputs (DeepSeek MLA), as torch_npu.npu_interleave_rope."""

import torch

DESCRIPTION = (
    "npu_interleave_rope: x [B, N, S, 64], cos and sin [B, 1, S or 1, 64]. The input pairs "
    "are de-interleaved, q = x.reshape(B, N, S, 32, 2).transpose(-1, -2).reshape(B, N, S, 64) "
    "(= cat(x[..., 0::2], x[..., 1::2])), then y = q * cos + rotate_half(q) * sin with "
    "rotate_half(q) = cat(-q[..., 32:], q[..., :32]). Computed in fp32, y in x's dtype."
)
TAGS = ["rope", "elementwise", "permute"]
FUSED_OP = "torch_npu.npu_interleave_rope"


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        q = torch.cat((xf[..., 0::2], xf[..., 1::2]), dim=-1)
        half = q.shape[-1] // 2
        rotated = torch.cat((-q[..., half:], q[..., :half]), dim=-1)
        return (q * cos.float() + rotated * sin.float()).to(x.dtype)


def get_init_inputs():
    return []


# (dtype, B, N, S, S of cos/sin)
_CASES = [
    (torch.float16, 32, 32, 1, 1),
    (torch.bfloat16, 4, 16, 512, 512),
    (torch.float16, 2, 8, 301, 1),
]


def _case(dtype, b, n, s, s_cos):
    x = torch.randn(b, n, s, 64).to(dtype)
    angles = torch.rand(b, 1, s_cos, 32) * 6.283
    angles = torch.cat((angles, angles), dim=-1)
    return [x, angles.cos().to(dtype), angles.sin().to(dtype)]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
