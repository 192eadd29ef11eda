"""Attention under several masks at once, outputs mixed by per-mask weights."""

import torch

DESCRIPTION = (
    "q, k, v [B, H, S, D], masks [M, S, S] bool (True = attend; every row has a True), "
    "mask_weights [M] fp32, scale. For each mask m: O_m = softmax(scale * q k^T with "
    "~masks[m] set to -inf) v. out = sum_m mask_weights[m] * O_m, [B, H, S, D] in q's dtype "
    "(fp32 math). Typical masks: causal, local window, random sparse with diagonal."
)
TAGS = ["attention", "softmax", "matmul", "mask"]


class Model(torch.nn.Module):
    def forward(self, q, k, v, masks, mask_weights, scale: float):
        scores = torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale
        out = torch.zeros(q.shape, dtype=torch.float32)
        for m in range(masks.shape[0]):
            probs = torch.softmax(scores.masked_fill(~masks[m], float("-inf")), dim=-1)
            out = out + mask_weights[m].float() * torch.matmul(probs, v.float())
        return out.to(q.dtype)


def get_init_inputs():
    return []


# (dtype, B, H, S, D, M)
_CASES = [
    (torch.float32, 1, 8, 256, 64, 3),
    (torch.bfloat16, 2, 4, 512, 128, 2),
    (torch.float16, 1, 4, 301, 64, 4),
]


def _masks(s, count):
    i = torch.arange(s)[:, None]
    j = torch.arange(s)[None, :]
    patterns = [j <= i, (i - j).abs() < 32, (torch.rand(s, s) < 0.1) | (i == j),
                (j <= i) & ((i - j) % 4 == 0)]
    return torch.stack(patterns[:count])


def _case(dtype, b, h, s, d, count):
    return [
        torch.randn(b, h, s, d).to(dtype),
        torch.randn(b, h, s, d).to(dtype),
        torch.randn(b, h, s, d).to(dtype),
        _masks(s, count),
        torch.softmax(torch.randn(count), dim=0),
        d**-0.5,
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
