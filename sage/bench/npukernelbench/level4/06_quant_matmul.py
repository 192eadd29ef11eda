"""int8 x int8 matmul with per-channel and per-token dequantisation, as torch_npu.npu_quant_matmul."""

import torch

DESCRIPTION = (
    "npu_quant_matmul (A8W8): x1 [M, K] int8, x2 [K, N] int8, scale [N] (per output "
    "channel), pertoken_scale [M] fp32, bias [N] int32. acc = x1 @ x2 + bias exactly "
    "(int32); out = float32(acc) * scale * pertoken_scale[:, None] (fp32, left to right). "
    "Output dtype follows scale: fp32 scale -> float16 output (output_dtype=float16), "
    "bf16 scale -> bfloat16 output. Returns out [M, N]."
)
TAGS = ["quant", "matmul"]
FUSED_OP = "torch_npu.npu_quant_matmul"


class Model(torch.nn.Module):
    def forward(self, x1, x2, scale, pertoken_scale, bias):
        # float64 represents every int32 accumulator of these sizes exactly.
        acc = (x1.double() @ x2.double() + bias.double()).float()
        out = acc * scale.float() * pertoken_scale[:, None]
        out_dtype = torch.bfloat16 if scale.dtype == torch.bfloat16 else torch.float16
        return out.to(out_dtype)


def get_init_inputs():
    return []


# (scale dtype, M, K, N)
_CASES = [
    (torch.float32, 1024, 2048, 1024),
    (torch.bfloat16, 301, 4096, 2117),
    (torch.float32, 2048, 512, 301),
]


def _case(scale_dtype, m, k, n):
    return [
        torch.randint(-128, 128, (m, k), dtype=torch.int8),
        torch.randint(-128, 128, (k, n), dtype=torch.int8),
        ((0.5 + torch.rand(n)) / (74 * 74 * k**0.5)).to(scale_dtype),
        0.5 + torch.rand(m),
        torch.randint(-(2**16), 2**16, (n,), dtype=torch.int32),
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
