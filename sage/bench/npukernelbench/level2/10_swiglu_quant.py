"""SwiGLU followed by per-token dynamic int8 quantisation with per-group smooth scales,
as torch_npu.npu_swiglu_quant."""

import torch

DESCRIPTION = (
    "npu_swiglu_quant (MoE dynamic quantisation, group_list_type=0 cumsum): x [T, 2H], "
    "smooth_scales [G, H] fp32, group_index [G] int64 cumulative row ends (last == T). "
    "In fp32: a, b = x[:, :H], x[:, H:]; act = silu(a) * b; tmp = act * smooth_scales[g] "
    "for the rows of group g; inv = 127 / max|tmp| per row; y [T, H] int8 = "
    "round_half_even(tmp * inv); scale [T] = max|tmp| / 127. Returns (y, scale fp32). "
    "A value within an ulp of .5 can round either way, so an int8 result may differ by 1 "
    "from a kernel that evaluates the same formula in another order."
)
TAGS = ["quant", "activation", "reduction", "moe"]
FUSED_OP = "torch_npu.npu_swiglu_quant"


class Model(torch.nn.Module):
    def forward(self, x, smooth_scales, group_index):
        a, b = x.float().chunk(2, dim=-1)
        act = torch.nn.functional.silu(a) * b
        counts = torch.diff(group_index, prepend=group_index.new_zeros(1))
        group_of_row = torch.repeat_interleave(torch.arange(len(counts)), counts)
        tmp = act * smooth_scales.float()[group_of_row]
        row_max = tmp.abs().amax(dim=-1)
        y = torch.round(tmp * (127 / row_max)[:, None]).clamp(-128, 127).to(torch.int8)
        return y, row_max / 127


def get_init_inputs():
    return []


# (dtype, T, H, G)
_CASES = [
    (torch.bfloat16, 1024, 2048, 8),
    (torch.float16, 301, 1408, 4),
    (torch.float32, 2117, 192, 16),
]


def _case(dtype, t, h, g):
    x = torch.randn(t, 2 * h).to(dtype)
    smooth = 0.5 + torch.rand(g, h)
    cuts = torch.sort(torch.randint(0, t + 1, (g - 1,))).values
    group_index = torch.cat([cuts, torch.tensor([t])]).to(torch.int64)
    return [x, smooth, group_index]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
