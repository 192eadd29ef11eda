"""Inference attention for prefill and decode with per-batch kv lengths, as
torch_npu.npu_fused_infer_attention_score."""

import torch

DESCRIPTION = (
    "npu_fused_infer_attention_score (input_layout='BNSD', no quantisation, no paging): "
    "query [B, N, Sq, D], key, value [B, Nkv, Skv, D] (grouped-query heads: head n uses kv "
    "head n // (N / Nkv)), atten_mask [Sq, Skv] bool (True = masked out; causal for "
    "prefill, all False for decode with Sq = 1), actual_seq_lengths_kv [B] int64 (keys at "
    "positions >= the length are ignored; lengths >= 1), scale. out = softmax(scale * q k^T "
    "over visible keys) v, [B, N, Sq, D] in query's dtype, fp32 math. (The vendor op also "
    "returns softmax_lse; only attention_out is compared.)"
)
TAGS = ["attention", "softmax", "matmul", "mask"]
FUSED_OP = "torch_npu.npu_fused_infer_attention_score"


class Model(torch.nn.Module):
    def forward(self, query, key, value, atten_mask, actual_seq_lengths_kv, scale: float):
        group = query.shape[1] // key.shape[1]
        k = key.float().repeat_interleave(group, dim=1)
        v = value.float().repeat_interleave(group, dim=1)
        skv = key.shape[2]
        beyond = torch.arange(skv)[None, :] >= actual_seq_lengths_kv[:, None]  # [B, Skv]
        hidden = atten_mask[None, None] | beyond[:, None, None, :]
        scores = torch.matmul(query.float(), k.transpose(-1, -2)) * scale
        probs = torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1)
        return torch.matmul(probs, v).to(query.dtype)


def get_init_inputs():
    return []


# (dtype, B, N, Nkv, Sq, Skv, D)
_CASES = [
    (torch.float16, 1, 16, 4, 1024, 1024, 128),
    (torch.bfloat16, 4, 32, 8, 1, 1024, 128),
    (torch.float16, 2, 8, 1, 1, 4096, 64),
    (torch.float32, 2, 4, 4, 301, 301, 64),
]


def _case(dtype, b, n, nkv, sq, skv, d):
    if sq == 1:
        mask = torch.zeros(1, skv, dtype=torch.bool)
        lengths = torch.randint(1, skv + 1, (b,), dtype=torch.int64)
    else:
        mask = torch.ones(sq, skv, dtype=torch.bool).triu(diagonal=1 + skv - sq)
        lengths = torch.randint(skv // 2, skv + 1, (b,), dtype=torch.int64)
    lengths[0] = skv
    return [
        torch.randn(b, n, sq, d).to(dtype),
        torch.randn(b, nkv, skv, d).to(dtype),
        torch.randn(b, nkv, skv, d).to(dtype),
        mask,
        lengths,
        d**-0.5,
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
