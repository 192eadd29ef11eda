"""Quantised batched matmul summed over the batch, as torch_npu.npu_quant_matmul_reduce_sum."""

import torch

DESCRIPTION = (
    "npu_quant_matmul_reduce_sum (dims=[0]): x1 [B, M, K] int8, x2 [B, K, N] int8, "
    "x1_scale [B, M] fp32 (per token and batch), x2_scale [N] bf16 (per channel). "
    "out = sum_b float32(x1[b] @ x2[b]) * x1_scale[b, :, None] * x2_scale[None, :]; "
    "integer products exact, scaling and the sum over b in fp32; out [M, N] bfloat16."
)
TAGS = ["quant", "matmul", "reduction", "batched"]
FUSED_OP = "torch_npu.npu_quant_matmul_reduce_sum"


class Model(torch.nn.Module):
    def forward(self, x1, x2, x1_scale, x2_scale):
        acc = torch.matmul(x1.double(), x2.double()).float()  # exact int32 values
        scaled = acc * x1_scale[:, :, None] * x2_scale.float()[None, None, :]
        return scaled.sum(dim=0).to(torch.bfloat16)


def get_init_inputs():
    return []


# (B, M, K, N)
_CASES = [
    (8, 512, 1024, 512),
    (4, 301, 1024, 2117),
    (16, 128, 512, 96),
]


def _case(b, m, k, n):
    return [
        torch.randint(-128, 128, (b, m, k), dtype=torch.int8),
        torch.randint(-128, 128, (b, k, n), dtype=torch.int8),
        (0.5 + torch.rand(b, m)) / (74 * 74 * (k * b) ** 0.5),
        (0.5 + torch.rand(n)).to(torch.bfloat16),
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
