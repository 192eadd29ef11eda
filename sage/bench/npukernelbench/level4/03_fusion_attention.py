"""Fused scaled-dot-product attention with a boolean mask, as torch_npu.npu_fusion_attention."""

import torch

DESCRIPTION = (
    "npu_fusion_attention (input_layout='BNSD', keep_prob=1, no pse): query [B, N, S, D], "
    "key, value [B, Nkv, Skv, D] (N a multiple of Nkv: grouped-query heads share kv head "
    "n // (N / Nkv)), atten_mask [S, Skv] bool with True = masked out (the NPU convention; "
    "every row keeps at least one key), scale. out = softmax(scale * q k^T, masked "
    "positions -inf) v, [B, N, S, D] in query's dtype, fp32 math."
)
TAGS = ["attention", "softmax", "matmul", "mask"]
FUSED_OP = "torch_npu.npu_fusion_attention"


class Model(torch.nn.Module):
    def forward(self, query, key, value, atten_mask, scale: float):
        group = query.shape[1] // key.shape[1]
        k = key.float().repeat_interleave(group, dim=1)
        v = value.float().repeat_interleave(group, dim=1)
        scores = torch.matmul(query.float(), k.transpose(-1, -2)) * scale
        probs = torch.softmax(scores.masked_fill(atten_mask, float("-inf")), dim=-1)
        return torch.matmul(probs, v).to(query.dtype)


def get_init_inputs():
    return []


# (dtype, B, N, Nkv, S, D, mask kind)
_CASES = [
    (torch.float16, 1, 16, 16, 1024, 128, "causal"),
    (torch.bfloat16, 2, 8, 2, 512, 128, "causal"),
    (torch.float32, 1, 4, 4, 301, 64, "random"),
]


def _case(dtype, b, n, nkv, s, d, mask_kind):
    if mask_kind == "causal":
        mask = torch.ones(s, s, dtype=torch.bool).triu(diagonal=1)
    else:
        mask = torch.rand(s, s) < 0.5
        mask.fill_diagonal_(False)
    return [
        torch.randn(b, n, s, d).to(dtype),
        torch.randn(b, nkv, s, d).to(dtype),
        torch.randn(b, nkv, s, d).to(dtype),
        mask,
        d**-0.5,
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
