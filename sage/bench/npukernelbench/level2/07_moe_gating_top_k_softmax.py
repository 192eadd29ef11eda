"""MoE gate: softmax over experts then top-k, as torch_npu.npu_moe_gating_top_k_softmax."""

import torch

DESCRIPTION = (
    "npu_moe_gating_top_k_softmax (finished=None): x [N, E] gate logits, k int. "
    "p = softmax(x) over experts in fp32; y [N, k] = the k largest p in descending order "
    "(x's dtype), expert_idx [N, k] int32 = their expert ids, row_idx [N, k] int32 with "
    "row_idx[i, j] = j * N + i (the layout npu_moe_init_routing expects). Logits within a "
    "row are distinct, so the top-k order is unambiguous."
)
TAGS = ["moe", "softmax", "sort", "topk"]
FUSED_OP = "torch_npu.npu_moe_gating_top_k_softmax"


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor, k: int):
        n = x.shape[0]
        probs = torch.softmax(x.float(), dim=-1)
        values, experts = torch.topk(probs, k, dim=-1, largest=True, sorted=True)
        row_idx = torch.arange(n * k, dtype=torch.int32).reshape(k, n).T.contiguous()
        return values.to(x.dtype), experts.to(torch.int32), row_idx


def get_init_inputs():
    return []


# (dtype, N, E, k)
_CASES = [
    (torch.float16, 4096, 64, 8),
    (torch.bfloat16, 301, 256, 8),
    (torch.float32, 2117, 16, 2),
]


def _distinct_rows(n, e, dtype):
    # A per-row permutation of the grid (j - e/2) / 16: distinct and exactly
    # representable in bf16 (8 significant bits) for e <= 512, so no ties.
    perm = torch.rand(n, e).argsort(dim=-1)
    return ((perm - e // 2).float() / 16).to(dtype)


def _case(dtype, n, e, k):
    return [_distinct_rows(n, e, dtype), k]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
