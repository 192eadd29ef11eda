"""Grouped matmul (MoE experts): rows of x in group g multiply weight[g]."""

import torch

DESCRIPTION = (
    "Grouped matmul as torch_npu.npu_grouped_matmul with split_item=3, group_type=0, "
    "group_list_type=0: x [M, K], weight [G, K, N], group_list [G] int64 cumulative row "
    "ends (non-decreasing, last == M; empty groups allowed). Rows group_list[g-1]:"
    "group_list[g] of x are multiplied by weight[g]; y [M, N] in x's dtype."
)
TAGS = ["matmul", "grouped", "moe"]
# The public reference is one aten op (F.grouped_mm), which torch_npu runs as one kernel; this CPU
# reference loops over the groups instead (CPU _grouped_mm needs 16-byte strides and has no float64).
FUSED_OP = "torch._grouped_mm"


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor, weight: torch.Tensor, group_list: torch.Tensor) -> torch.Tensor:
        y = x.new_zeros(x.shape[0], weight.shape[-1])
        start = 0
        for g, end in enumerate(group_list.tolist()):
            if end > start:
                y[start:end] = x[start:end] @ weight[g]
            start = end
        return y


def get_init_inputs():
    return []


# (dtype, M, K, N, groups)
_CASES = [
    (torch.float16, 1024, 512, 384, 8),
    (torch.bfloat16, 777, 301, 256, 4),
    (torch.float32, 512, 256, 2117, 6),
]


def _group_list(m, groups):
    # Random group sizes with at least one empty group, so kernels must handle it.
    cuts = torch.sort(torch.randint(0, m + 1, (groups - 1,))).values
    cuts[0] = cuts[1]  # group 1 is empty
    return torch.cat([cuts, torch.tensor([m])]).to(torch.int64)


def _case(dtype, m, k, n, groups):
    x = torch.randn(m, k).to(dtype)
    weight = (torch.randn(groups, k, n) * k**-0.5).to(dtype)
    return [x, weight, _group_list(m, groups)]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
