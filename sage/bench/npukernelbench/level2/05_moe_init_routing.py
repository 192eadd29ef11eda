"""MoE routing: sort (token, expert) pairs by expert and gather token rows, as
torch_npu.npu_moe_init_routing."""

import torch

DESCRIPTION = (
    "npu_moe_init_routing: x [N, H], row_idx [N, K] int32 (row_idx[i, j] = j * N + i), "
    "expert_idx [N, K] int32, active_num int. Flatten expert_idx row-major and sort it "
    "stably (key-value sort with row_idx): expanded_expert_idx [N*K] int32 = sorted ids; "
    "sorted_row = row_idx flattened in that order; expanded_row_idx [N*K] int32 with "
    "expanded_row_idx[sorted_row[i]] = i; expanded_x [min(N, active_num) * K, H] with "
    "expanded_x[i] = x[sorted_row[i] % N]. Returns (expanded_x, expanded_row_idx, "
    "expanded_expert_idx)."
)
TAGS = ["moe", "sort", "gather", "index"]
FUSED_OP = "torch_npu.npu_moe_init_routing"


class Model(torch.nn.Module):
    def forward(self, x, row_idx, expert_idx, active_num: int):
        n, k = expert_idx.shape
        flat = expert_idx.reshape(-1)
        order = torch.argsort(flat, stable=True)
        expanded_expert_idx = flat[order]
        sorted_row = row_idx.reshape(-1)[order]
        expanded_row_idx = torch.empty_like(sorted_row)
        expanded_row_idx[sorted_row.long()] = torch.arange(n * k, dtype=sorted_row.dtype)
        active = min(active_num, n) * k
        expanded_x = x[sorted_row[:active].long() % n]
        return expanded_x, expanded_row_idx, expanded_expert_idx


def get_init_inputs():
    return []


# (dtype, N, H, K, experts, active_num)
_CASES = [
    (torch.float16, 1024, 2048, 2, 8, 1024),
    (torch.bfloat16, 301, 7168, 8, 256, 301),
    (torch.float32, 2117, 512, 4, 64, 1000),
]


def _case(dtype, n, h, k, experts, active_num):
    x = torch.randn(n, h).to(dtype)
    row_idx = torch.arange(n * k, dtype=torch.int32).reshape(k, n).T.contiguous()
    # Distinct experts per token, as a top-k gate produces.
    expert_idx = torch.rand(n, experts).argsort(dim=-1)[:, :k].to(torch.int32)
    return [x, row_idx, expert_idx, active_num]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
