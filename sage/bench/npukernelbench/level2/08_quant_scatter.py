"""Quantise updates to int8 and scatter them into an int8 cache, as torch_npu.npu_quant_scatter."""

import torch

DESCRIPTION = (
    "npu_quant_scatter (axis=-2, quant_axis=-1, reduce='update'): var [B, S, H] int8 "
    "(a quantised KV cache), indices [B] int32 (start row per batch), updates [B, U, H] "
    "fp16/bf16, quant_scales [H], quant_zero_points [H]. q = clamp(round_half_even("
    "updates / quant_scales + quant_zero_points), -128, 127) computed in fp32; "
    "out = copy of var with out[b, indices[b]:indices[b]+U, :] = q[b]. Returns out [B, S, H] "
    "int8 (the vendor op leaves var unchanged and returns the result). Values exactly at "
    ".5 after scaling are measure-zero for random data but would round to even."
)
TAGS = ["quant", "scatter", "index", "kvcache"]
FUSED_OP = "torch_npu.npu_quant_scatter"


class Model(torch.nn.Module):
    def forward(self, var, indices, updates, quant_scales, quant_zero_points):
        scaled = updates.float() / quant_scales.float() + quant_zero_points.float()
        q = torch.round(scaled).clamp(-128, 127).to(torch.int8)
        out = var.clone()
        span = updates.shape[1]
        for b, start in enumerate(indices.tolist()):
            out[b, start:start + span] = q[b]
        return out


def get_init_inputs():
    return []


# (update dtype, B, S, H, U)
_CASES = [
    (torch.float16, 16, 2048, 128, 1),
    (torch.bfloat16, 8, 1024, 512, 1),
    (torch.float16, 4, 301, 200, 3),
]


def _case(dtype, b, s, h, span):
    var = torch.randint(-128, 128, (b, s, h), dtype=torch.int8)
    indices = torch.randint(0, s - span + 1, (b,), dtype=torch.int32)
    updates = torch.randn(b, span, h).to(dtype)
    # Scales sized so that quantised values use most of the int8 range without clipping.
    # The random factor keeps updates / scale off exact .5 ties, which a "round" ratio of
    # two fp16 values would otherwise produce.
    scale = updates.float().abs().amax(dim=(0, 1)).clamp_min(1e-3) / (120 * (1 + 0.01 * torch.rand(h)))
    # Vendor dtype pairs: fp16 updates take fp32 scales and int32 zero points; bf16 take bf16.
    if dtype == torch.bfloat16:
        scale, zero = scale.to(torch.bfloat16), torch.randint(-4, 5, (h,)).to(torch.bfloat16)
    else:
        zero = torch.randint(-4, 5, (h,), dtype=torch.int32)
    return [var, indices, updates, scale, zero]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
