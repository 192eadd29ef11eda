"""Matmul with int8 weights dequantised on the fly (per-channel or per-group), as
torch_npu.npu_weight_quant_batchmatmul."""

import torch

DESCRIPTION = (
    "npu_weight_quant_batchmatmul (A16W8): x [M, K] fp16/bf16, weight [K, N] int8, "
    "antiquant_scale and antiquant_offset [N] (per-channel, group_size 0) or [K/G, N] "
    "(per-group, group_size G: rows k of weight use row k // G), in x's dtype. "
    "w = (weight + offset) * scale, y = x @ w; fp32 math, y [M, N] in x's dtype."
)
TAGS = ["quant", "matmul"]
FUSED_OP = "torch_npu.npu_weight_quant_batchmatmul"


class Model(torch.nn.Module):
    def forward(self, x, weight, antiquant_scale, antiquant_offset, group_size: int):
        scale, offset = antiquant_scale.float(), antiquant_offset.float()
        if group_size > 0:
            scale = scale.repeat_interleave(group_size, dim=0)
            offset = offset.repeat_interleave(group_size, dim=0)
        w = (weight.float() + offset) * scale
        return (x.float() @ w).to(x.dtype)


def get_init_inputs():
    return []


# (dtype, M, K, N, group_size)
_CASES = [
    (torch.float16, 256, 4096, 2117, 0),
    (torch.bfloat16, 301, 2048, 1024, 128),
    (torch.float16, 1, 4096, 2048, 64),
]


def _case(dtype, m, k, n, group_size):
    rows = k // group_size if group_size else None
    shape = (rows, n) if rows else (n,)
    return [
        torch.randn(m, k).to(dtype),
        torch.randint(-128, 128, (k, n), dtype=torch.int8),
        ((0.5 + torch.rand(shape)) / (74 * k**0.5)).to(dtype),
        torch.randint(-8, 9, shape).to(dtype),
        group_size,
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
