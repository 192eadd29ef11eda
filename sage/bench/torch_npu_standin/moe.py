"""Mixture-of-experts routing: npu_moe_gating_top_k_softmax, npu_moe_init_routing,
npu_moe_compute_expert_tokens, npu_moe_finalize_routing.

Each body follows its torch_npu page (Ascend/op-plugin, docs/zh/custom_APIs/torch_npu/) and,
where the page leaves a case open, the op's own test in that repository (named per op).
"""

from __future__ import annotations

from typing import Optional

import torch

from sage.bench.torch_npu_standin._op import standin


@standin("npu_moe_gating_top_k_softmax")
def npu_moe_gating_top_k_softmax(x: torch.Tensor, finished: Optional[torch.Tensor] = None,
                                 k: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """softmax over the experts (last axis), then top-k: (y in x's dtype, expert_idx int32,
    row_idx int32 = arange(rows*k).reshape(k, rows).T). A row marked `finished` takes no
    expert: its expert_idx is the expert count (test/test_custom_ops/
    test_npu_moe_gating_top_k_softmax.py in the same repository).
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_moe_gating_top_k_softmax.md"""
    probs = torch.softmax(x.float(), dim=-1)
    y, idx = torch.topk(probs, k, dim=-1)
    idx = idx.to(torch.int32)
    if finished is not None:
        idx = torch.where(finished.unsqueeze(-1), torch.full_like(idx, x.shape[-1]), idx)
    rows = idx.numel() // k
    row_idx = torch.arange(rows * k, dtype=torch.int32, device=x.device).reshape(k, rows).t()
    return y.to(x.dtype), idx, row_idx.reshape(idx.shape).contiguous()


@standin("npu_moe_init_routing")
def npu_moe_init_routing(x: torch.Tensor, row_idx: torch.Tensor, expert_idx: torch.Tensor,
                         active_num: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Stable key-value sort of the flattened expert_idx with row_idx as values:
    expanded_expert_idx = sorted experts; expanded_row_idx[sorted_row[i]] = i;
    expanded_x[i] = x[sorted_row[i] % num_rows] for the first min(num_rows, active_num) * k.
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_moe_init_routing.md"""
    num_rows, k = expert_idx.shape
    experts = expert_idx.reshape(-1)
    expanded_expert_idx, order = torch.sort(experts, stable=True)
    sorted_row = row_idx.reshape(-1)[order]
    expanded_row_idx = torch.empty_like(sorted_row)
    expanded_row_idx[sorted_row.long()] = torch.arange(sorted_row.numel(), dtype=sorted_row.dtype, device=x.device)
    active = min(active_num, num_rows) * k
    expanded_x = x[(sorted_row[:active] % num_rows).long()]
    return expanded_x, expanded_row_idx, expanded_expert_idx


@standin("npu_moe_compute_expert_tokens")
def npu_moe_compute_expert_tokens(sorted_expert_for_source_row: torch.Tensor, num_expert: int) -> torch.Tensor:
    """expert_tokens[i] = the end position of expert i's rows in the sorted expert list
    (binary search: how many entries are <= i), in the input's dtype.
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_moe_compute_expert_tokens.md"""
    s = sorted_expert_for_source_row
    experts = torch.arange(num_expert, dtype=s.dtype, device=s.device)
    return torch.searchsorted(s.contiguous(), experts, right=True).to(s.dtype)


@standin("npu_moe_finalize_routing")
def npu_moe_finalize_routing(expanded_permuted_rows: torch.Tensor, skip1: Optional[torch.Tensor],
                             skip2: Optional[torch.Tensor], bias: Optional[torch.Tensor],
                             scales: Optional[torch.Tensor], expanded_src_to_dst_row: torch.Tensor,
                             export_for_source_row: Optional[torch.Tensor],
                             drop_pad_mode: int = 0) -> torch.Tensor:
    """out[i] = skip1[i] + skip2[i] + sum_k scales[i,k] * (rows[src_to_dst[pos(i,k)]] + bias[expert[i,k]]),
    pos(i,k) = k*num_rows + i for drop_pad_mode 0/1 (column order), i*K + k for 2/3 (row
    order); modes 1/3 take rows as [E, C, H] and a -1 index contributes zero rows.
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_moe_finalize_routing.md"""
    if drop_pad_mode not in (0, 1, 2, 3):
        raise ValueError(f"drop_pad_mode must be in [0, 3], got {drop_pad_mode}")
    dtype = expanded_permuted_rows.dtype
    h = expanded_permuted_rows.shape[-1]
    rows = expanded_permuted_rows.reshape(-1, h).float()
    k = scales.shape[1] if scales is not None else (export_for_source_row.shape[1] if export_for_source_row is not None else 1)
    num_rows = expanded_src_to_dst_row.shape[0] // k
    pos = expanded_src_to_dst_row.long()
    pos = pos.reshape(k, num_rows).t() if drop_pad_mode in (0, 1) else pos.reshape(num_rows, k)
    gathered = rows[pos.clamp(min=0)] * (pos >= 0).unsqueeze(-1)          # [num_rows, K, H]
    if bias is not None and export_for_source_row is not None:
        gathered = gathered + bias.float()[export_for_source_row.long()]
    weights = scales.float() if scales is not None else torch.ones(num_rows, k, device=rows.device)
    out = (gathered * weights.unsqueeze(-1)).sum(dim=1)
    for skip in (skip1, skip2):
        if skip is not None:
            out = out + skip.float()
    return out.to(dtype)
