import torch

DESCRIPTION = (
    "Per-row (per-token) symmetric dynamic int8 quantisation, as torch_npu.npu_dynamic_quant without smooth "
    "scales: scale = max(|x|) / 127 over the last dim (float32), y = round(x / scale) as int8. "
    "Input: x (..., D) in float16/bfloat16; returns (y int8 with x's shape, scale float32 with x.shape[:-1])."
)
TAGS = ["quant", "reduction"]
FUSED_OP = "torch_npu.npu_dynamic_quant"


class Model(torch.nn.Module):
    def forward(self, x):
        xf = x.float()
        scale = xf.abs().amax(dim=-1) / 127.0
        y = torch.round(xf / scale.unsqueeze(-1)).to(torch.int8)
        return y, scale


_CASES = [
    ((4096, 1024), torch.float16),
    ((1000, 301), torch.bfloat16),
    ((8, 256, 2117), torch.float16),
    ((16, 64, 768), torch.bfloat16),
]


def _case(shape, dtype):
    # x = s * u per row, s a power of two and u on a quarter grid avoiding .5 (|u| <= 126.75 in
    # fp16, <= 31.75 in bf16 so it is exact there), with one element per row at exactly
    # +-127 s. Then scale == s exactly and x / scale is exactly u, never a rounding tie: every
    # correct implementation gives identical int8 codes, while truncation would still be caught.
    limit = 126 if dtype == torch.float16 else 31
    quarters = torch.randint(-limit * 4, limit * 4 + 1, shape)
    quarters = torch.where(quarters % 4 == 2, quarters + 1, quarters)
    u = quarters.float() / 4.0
    rows = u.reshape(-1, shape[-1])
    peak_col = torch.randint(0, shape[-1], (rows.shape[0],))
    peak_sign = torch.randint(0, 2, (rows.shape[0],)).float() * 2 - 1
    rows[torch.arange(rows.shape[0]), peak_col] = 127.0 * peak_sign
    row_scale = torch.pow(2.0, torch.randint(-6, 3, (rows.shape[0], 1)).float())
    return [(rows * row_scale).reshape(shape).to(dtype)]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
