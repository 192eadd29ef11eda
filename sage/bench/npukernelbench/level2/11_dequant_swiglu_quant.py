"""Dequantise int32 matmul output, SwiGLU, then per-token dynamic int8 quantisation,
as torch_npu.npu_dequant_swiglu_quant."""

import torch

DESCRIPTION = (
    "npu_dequant_swiglu_quant (activate_left=True, quant_mode=1 dynamic, no groups): "
    "x [T, 2H] int32 (an int8 matmul accumulator), weight_scale [2H] fp32, "
    "activation_scale [T] fp32, quant_scale [H] fp32 (smooth scale). In fp32: "
    "d = x * weight_scale * activation_scale[:, None]; act = silu(d[:, :H]) * d[:, H:]; "
    "tmp = act * quant_scale; y [T, H] int8 = round_half_even(tmp * (127 / max|tmp|)) per "
    "row; scale [T] = max|tmp| / 127. Returns (y, scale fp32). Near-.5 values may round "
    "either way in another evaluation order (int8 off by 1)."
)
TAGS = ["quant", "activation", "reduction"]


class Model(torch.nn.Module):
    def forward(self, x, weight_scale, activation_scale, quant_scale):
        d = x.float() * weight_scale[None, :] * activation_scale[:, None]
        a, b = d.chunk(2, dim=-1)
        tmp = torch.nn.functional.silu(a) * b * quant_scale[None, :]
        row_max = tmp.abs().amax(dim=-1)
        y = torch.round(tmp * (127 / row_max)[:, None]).clamp(-128, 127).to(torch.int8)
        return y, row_max / 127


def get_init_inputs():
    return []


# (T, H)
_CASES = [
    (1024, 2048),
    (301, 1408),
    (4096, 96),
]


def _case(t, h):
    x = torch.randint(-(2**14), 2**14, (t, 2 * h), dtype=torch.int32)
    weight_scale = (0.5 + torch.rand(2 * h)) * 2**-13
    activation_scale = 0.5 + torch.rand(t)
    quant_scale = 0.5 + torch.rand(h)
    return [x, weight_scale, activation_scale, quant_scale]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
