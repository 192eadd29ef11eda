"""Group-limited MoE routing (DeepSeek-V3): score groups of experts, keep the best groups."""

import torch

DESCRIPTION = (
    "logits [T, E] (router output), e_score_correction_bias [E] fp32, n_group, topk_group. "
    "In fp32: s = sigmoid(logits) + bias; viewing s as [T, n_group, E/n_group], each "
    "group's score is the sum of its two largest s; the topk_group best groups are kept. "
    "Returns (masked_scores [T, E] fp32 = s where the expert's group is kept, else 0; "
    "group_mask [T, n_group] bool). Group scores are well separated by construction."
)
TAGS = ["moe", "topk", "reduction", "mask"]


class Model(torch.nn.Module):
    def forward(self, logits, e_score_correction_bias, n_group: int, topk_group: int):
        t, e = logits.shape
        scores = torch.sigmoid(logits.float()) + e_score_correction_bias.float()
        grouped = scores.reshape(t, n_group, e // n_group)
        group_scores = grouped.topk(2, dim=-1).values.sum(dim=-1)
        best = group_scores.topk(topk_group, dim=-1).indices
        group_mask = torch.zeros(t, n_group, dtype=torch.bool).scatter(1, best, True)
        expert_mask = group_mask[:, :, None].expand(t, n_group, e // n_group).reshape(t, e)
        return scores.masked_fill(~expert_mask, 0.0), group_mask


def get_init_inputs():
    return []


# (dtype, T, E, n_group, topk_group)
_CASES = [
    (torch.float32, 1024, 256, 8, 4),
    (torch.bfloat16, 301, 64, 8, 3),
    (torch.float32, 4096, 160, 8, 3),
]


def _case(dtype, t, e, n_group, topk_group):
    # Each group gets its own logit offset (0.5 apart, random order per token) plus small
    # noise, so group scores differ by far more than any rounding: no near-ties.
    offsets = (torch.rand(t, n_group).argsort(dim=-1).float() - n_group / 2) * 0.5
    noise = (torch.rand(t, n_group, e // n_group) - 0.5) * 0.1
    logits = (offsets[..., None] + noise).reshape(t, e).to(dtype)
    bias = (torch.rand(e) - 0.5) * 0.02
    return [logits, bias, n_group, topk_group]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
