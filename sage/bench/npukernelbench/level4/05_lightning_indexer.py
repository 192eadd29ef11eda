"""DeepSeek-V3.2 lightning indexer: per query token, the top-k key positions by index
score, as torch_npu.npu_lightning_indexer."""

import torch

DESCRIPTION = (
    "npu_lightning_indexer (layout BSND, sparse_mode=3 causal): query [B, S, Ni, D] index "
    "queries, key [B, Skv, 1, D] index keys, weights [B, S, Ni], top_k int. Score of key s "
    "for query t: I[t, s] = sum_j weights[t, j] * relu(query[t, j] . key[s]). Query t sits "
    "at absolute position Skv - S + t and sees keys s <= that position. Returns "
    "sparse_indices [B, S, 1, top_k] int32: the visible keys ordered by descending score, "
    "equal scores by ascending position, padded with -1 when fewer than top_k are visible. "
    "Test data are small integers, so every score is an exact integer in fp32 and the order "
    "(ties included) is fully determined."
)
TAGS = ["sort", "topk", "matmul", "attention", "index"]
FUSED_OP = "torch_npu.npu_lightning_indexer"


class Model(torch.nn.Module):
    def forward(self, query, key, weights, top_k: int):
        b, s, heads, _ = query.shape
        skv = key.shape[1]
        k = key[:, :, 0].float()
        scores = torch.zeros(b, s, skv)
        for j in range(heads):
            dots = torch.matmul(query[:, :, j].float(), k.transpose(-1, -2))
            scores += weights[:, :, j, None].float() * torch.relu(dots)
        positions = torch.arange(s)[:, None] + (skv - s)
        visible = torch.arange(skv)[None, :] <= positions
        scores = scores.masked_fill(~visible, float("-inf"))
        order = torch.sort(scores, dim=-1, descending=True, stable=True).indices[..., :top_k]
        chosen = scores.gather(-1, order)
        indices = torch.where(chosen == float("-inf"), -1, order).to(torch.int32)
        if indices.shape[-1] < top_k:
            pad = torch.full((b, s, top_k - indices.shape[-1]), -1, dtype=torch.int32)
            indices = torch.cat((indices, pad), dim=-1)
        return indices[:, :, None, :]


def get_init_inputs():
    return []


# (dtype, B, S, Skv, Ni, D, top_k)
_CASES = [
    (torch.bfloat16, 1, 512, 512, 64, 128, 128),
    (torch.float16, 4, 1, 2048, 64, 128, 256),
    (torch.bfloat16, 2, 301, 301, 32, 128, 64),
]


def _case(dtype, b, s, skv, heads, d, top_k):
    # Integers in [-2, 2] and weights in [-2, 3]: |score| < 2^24, exact in fp32.
    return [
        torch.randint(-2, 3, (b, s, heads, d)).to(dtype),
        torch.randint(-2, 3, (b, skv, 1, d)).to(dtype),
        torch.randint(-2, 4, (b, s, heads)).to(dtype),
        top_k,
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
