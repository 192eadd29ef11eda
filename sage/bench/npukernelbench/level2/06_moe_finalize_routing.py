"""MoE combine: weighted sum of each token's expert outputs plus skips, as
torch_npu.npu_moe_finalize_routing."""

import torch

DESCRIPTION = (
    "npu_moe_finalize_routing (drop_pad_mode=0): expanded_permuted_rows [N*K, H] (expert "
    "outputs in expert-sorted order), skip1, skip2 [N, H], bias [E, H], scales [N, K], "
    "expanded_src_to_dst_row [N*K] int32 (a permutation; row of pair (i, k) is "
    "expanded_src_to_dst_row[k * N + i]), export_for_source_row [N, K] int32 (expert of "
    "pair (i, k)). out[i] = skip1[i] + skip2[i] + sum_k scales[i, k] * "
    "(expanded_permuted_rows[expanded_src_to_dst_row[k*N + i]] + bias[export_for_source_row[i, k]]). "
    "out [N, H] in the input dtype, accumulated in fp32."
)
TAGS = ["moe", "gather", "reduction"]
FUSED_OP = "torch_npu.npu_moe_finalize_routing"


class Model(torch.nn.Module):
    def forward(self, expanded_permuted_rows, skip1, skip2, bias, scales,
                expanded_src_to_dst_row, export_for_source_row):
        n, k = scales.shape
        dst = expanded_src_to_dst_row.long().reshape(k, n).T
        rows = expanded_permuted_rows.float()[dst] + bias.float()[export_for_source_row.long()]
        out = skip1.float() + skip2.float() + (rows * scales.float()[..., None]).sum(dim=1)
        return out.to(expanded_permuted_rows.dtype)


def get_init_inputs():
    return []


# (dtype, N, H, K, experts)
_CASES = [
    (torch.float16, 1024, 2048, 2, 8),
    (torch.bfloat16, 301, 2048, 8, 256),
    (torch.float32, 2117, 512, 4, 64),
]


def _case(dtype, n, h, k, experts):
    expert = torch.rand(n, experts).argsort(dim=-1)[:, :k].to(torch.int32)
    # The routing that npu_moe_init_routing would have produced for these experts.
    order = torch.argsort(expert.reshape(-1), stable=True)
    src_rows = torch.arange(n * k).reshape(k, n).T.reshape(-1)[order]
    src_to_dst = torch.empty(n * k, dtype=torch.int32)
    src_to_dst[src_rows] = torch.arange(n * k, dtype=torch.int32)
    scales = torch.softmax(torch.randn(n, k), dim=-1).to(dtype)
    return [
        torch.randn(n * k, h).to(dtype),
        torch.randn(n, h).to(dtype),
        torch.randn(n, h).to(dtype),
        (0.1 * torch.randn(experts, h)).to(dtype),
        scales,
        src_to_dst,
        expert,
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
