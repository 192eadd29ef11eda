"""DeepSeek-V3.2 sparse attention: each query attends only to the key/value rows named by
sparse_indices, as torch_npu.npu_sparse_flash_attention."""

import torch

DESCRIPTION = (
    "npu_sparse_flash_attention (layout BSND, sparse_mode=3 causal): query [B, S, N, Dk], "
    "key [B, Skv, 1, Dk], value [B, Skv, 1, Dv] (one kv head shared by all N heads, as in "
    "MLA), sparse_indices [B, S, 1, top_k] int32 (key rows per query, -1 = unused), "
    "scale. Query t sits at absolute position Skv - S + t; it attends to the rows in its "
    "index list that are >= 0 and <= that position (each list names the query's own "
    "position, so no row is empty). out[b, t, n] = softmax_j(scale * q . key[idx_j]) "
    "weighted sum of value[idx_j]; [B, S, N, Dv] in query's dtype, fp32 math."
)
TAGS = ["attention", "gather", "softmax", "sparse"]
FUSED_OP = "torch_npu.npu_sparse_flash_attention"


class Model(torch.nn.Module):
    def forward(self, query, key, value, sparse_indices, scale: float):
        b, s = query.shape[:2]
        skv = key.shape[1]
        idx = sparse_indices[:, :, 0].long()  # [B, S, top_k]
        positions = (torch.arange(s) + (skv - s))[None, :, None]
        valid = (idx >= 0) & (idx <= positions)
        safe = idx.clamp_min(0)
        batch = torch.arange(b)[:, None, None]
        k_sel = key[:, :, 0].float()[batch, safe]  # [B, S, top_k, Dk]
        v_sel = value[:, :, 0].float()[batch, safe]
        scores = torch.einsum("bsnd,bskd->bsnk", query.float(), k_sel) * scale
        scores = scores.masked_fill(~valid[:, :, None, :], float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        return torch.einsum("bsnk,bskd->bsnd", probs, v_sel).to(query.dtype)


def get_init_inputs():
    return []


# (dtype, B, S, Skv, N, Dk, Dv, top_k)
_CASES = [
    (torch.bfloat16, 1, 256, 256, 16, 192, 128, 128),
    (torch.bfloat16, 4, 1, 2048, 64, 576, 512, 512),
    (torch.float16, 2, 301, 301, 8, 128, 128, 64),
]


def _indices(b, s, skv, top_k):
    idx = torch.full((b, s, 1, top_k), -1, dtype=torch.int32)
    for bi in range(b):
        for t in range(s):
            pos = skv - s + t
            count = min(top_k, pos + 1)
            picks = torch.cat((torch.tensor([pos]), torch.randperm(pos)[: count - 1]))
            idx[bi, t, 0, :count] = picks[torch.randperm(count)].to(torch.int32)
    return idx


def _case(dtype, b, s, skv, n, dk, dv, top_k):
    return [
        torch.randn(b, s, n, dk).to(dtype),
        torch.randn(b, skv, 1, dk).to(dtype),
        torch.randn(b, skv, 1, dv).to(dtype),
        _indices(b, s, skv, top_k),
        dk**-0.5,
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
