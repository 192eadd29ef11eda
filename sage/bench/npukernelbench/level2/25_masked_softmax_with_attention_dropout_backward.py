"""Backward of scaled, masked softmax followed by dropout (given mask)."""

import torch

DESCRIPTION = (
    "Forward: p = softmax(scale * scores with ~attn_mask set to -inf) over Sk; "
    "out = p * dropout_mask / (1 - dropout_p). Inputs: grad_out [B, H, Sq, Sk], "
    "softmax_out p [B, H, Sq, Sk] (saved), attn_mask [B, 1, Sq, Sk] bool (True = attend, "
    "every row has a True), dropout_mask [B, H, Sq, Sk] bool (True = keep), scale, "
    "dropout_p. gp = grad_out * dropout_mask / (1 - dropout_p); grad_scores = scale * p * "
    "(gp - sum(gp * p, Sk)), exactly 0 where attn_mask is False. fp32 math, output in "
    "grad_out's dtype."
)
TAGS = ["backward", "softmax", "attention", "reduction", "dropout"]


class Model(torch.nn.Module):
    def forward(self, grad_out, softmax_out, attn_mask, dropout_mask, scale: float,
                dropout_p: float):
        p = softmax_out.float()
        gp = grad_out.float() * dropout_mask / (1 - dropout_p)
        grad = scale * p * (gp - (gp * p).sum(dim=-1, keepdim=True))
        return grad.masked_fill(~attn_mask, 0.0).to(grad_out.dtype)


def get_init_inputs():
    return []


# (dtype, B, H, Sq, Sk, dropout_p)
_CASES = [
    (torch.float32, 2, 8, 256, 256, 0.1),
    (torch.float16, 1, 8, 512, 512, 0.2),
    (torch.bfloat16, 4, 4, 128, 301, 0.0),
]


def _case(dtype, b, h, sq, sk, dropout_p):
    scale = 64**-0.5
    # Causal mask with right padding of the keys; keys 0..sq-1 stay visible so no row is empty.
    i = torch.arange(sq)[:, None] + (sk - sq)
    j = torch.arange(sk)[None, :]
    lengths = torch.randint(max(sk - sq, 1), sk + 1, (b,))
    attn_mask = ((j <= i)[None] & (j[None] < lengths[:, None, None]))[:, None]
    attn_mask[..., 0] = True
    scores = torch.randn(b, h, sq, sk) * 8
    softmax_out = torch.softmax((scores * scale).masked_fill(~attn_mask, float("-inf")), -1)
    return [
        torch.randn(b, h, sq, sk).to(dtype),
        softmax_out.to(dtype),
        attn_mask,
        torch.rand(b, h, sq, sk) >= dropout_p,
        scale,
        dropout_p,
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
