"""int8 grouped matmul + dequant + SwiGLU + per-token int8 quant (MoE up-projection),
as torch_npu.npu_grouped_matmul_swiglu_quant."""

import torch

DESCRIPTION = (
    "npu_grouped_matmul_swiglu_quant (A8W8, per-token x scale, per-channel weight scale, "
    "group_list_type=0 cumsum): x [M, K] int8, weight [E, K, N] int8, weight_scale [E, N] "
    "fp32, x_scale [M] fp32, group_list [E] int64 cumulative row ends (last == M, empty "
    "groups allowed). For the rows of group e: acc = x @ weight[e] exactly (int32), "
    "C = float32(acc) * weight_scale[e] * x_scale[:, None] (left to right, fp32); "
    "S = silu(C[:, :N/2]) * C[:, N/2:]; inv = 127 / max|S| per row; q [M, N/2] int8 = "
    "round_half_even(S * inv); q_scale [M] = 1 / inv. Returns (q, q_scale). This is the "
    "vendor's own golden formula; its tests accept int8 results within 1 of it."
)
TAGS = ["quant", "matmul", "grouped", "moe", "activation"]
FUSED_OP = "torch_npu.npu_grouped_matmul_swiglu_quant"


class Model(torch.nn.Module):
    def forward(self, x, weight, weight_scale, x_scale, group_list):
        m, n = x.shape[0], weight.shape[-1]
        c = torch.zeros(m, n, dtype=torch.float32)
        start = 0
        for e, end in enumerate(group_list.tolist()):
            if end > start:
                # float64 holds every int8 x int8 dot product of these sizes exactly.
                acc = (x[start:end].double() @ weight[e].double()).float()
                c[start:end] = acc * weight_scale[e] * x_scale[start:end, None]
            start = end
        act, gate = c.chunk(2, dim=-1)
        s = torch.nn.functional.silu(act) * gate
        inv = 127 / s.abs().amax(dim=-1)
        q = torch.round(s * inv[:, None]).clamp(-128, 127).to(torch.int8)
        return q, 1 / inv


def get_init_inputs():
    return []


# (M, K, N, E)
_CASES = [
    (512, 1024, 768, 8),
    (301, 2048, 512, 4),
    (2117, 512, 256, 16),
]


def _case(m, k, n, e):
    cuts = torch.sort(torch.randint(0, m + 1, (e - 1,))).values
    group_list = torch.cat([cuts, torch.tensor([m])]).to(torch.int64)
    # Scales put C in O(1): an int8 dot product over K has std ~ 74 * 74 * sqrt(K).
    return [
        torch.randint(-128, 128, (m, k), dtype=torch.int8),
        torch.randint(-128, 128, (e, k, n), dtype=torch.int8),
        (0.5 + torch.rand(e, n)) / (74 * 74 * k**0.5),
        0.5 + torch.rand(m),
        group_list,
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
