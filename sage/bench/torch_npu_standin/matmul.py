"""Quantised and fused matmuls: npu_quant_matmul, npu_quant_matmul_reduce_sum,
npu_weight_quant_batchmatmul, npu_grouped_matmul_swiglu_quant_v2, npu_ffn.

Integer products are exact in float64 up to 2^53, far past int8 x int8 sums of K < 65536
terms, so the bodies multiply int8 operands as float64 (the int32 accumulator's exact
value), then dequantise in float32: the widest float a 910B kernel has, so the chip scales
its accumulator no wider (and a compiled body holds no float64 temporary).
"""

from __future__ import annotations

from typing import Optional

import torch

from sage.bench.torch_npu_standin._op import dtype_of, int8_round, standin



def _scale_values(scale: torch.Tensor) -> torch.Tensor:
    """A quant scale as numbers: an int64 scale (npu_trans_quant_param's form) keeps the
    float32 bit pattern in its low 32 bits."""
    if scale.dtype == torch.int64:
        return (scale & 0xFFFFFFFF).to(torch.int32).view(torch.float32)
    return scale.float()


def _finish(out: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return int8_round(out) if dtype == torch.int8 else out.to(dtype)


@standin("npu_quant_matmul")
def _quant_matmul(x1: torch.Tensor, x2: torch.Tensor, scale: torch.Tensor, offset: Optional[torch.Tensor],
                  pertoken_scale: Optional[torch.Tensor], bias: Optional[torch.Tensor],
                  output_dtype: torch.dtype) -> torch.Tensor:
    """out = (x1 @ x2 + bias_int32) * scale [* pertoken_scale per row] + offset, or
    x1 @ x2 * scale + bias for a bfloat16/float32 bias; int32 output is x1 @ x2 + bias;
    int8 output rounds half to even and saturates.
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_quant_matmul.md"""
    acc = torch.matmul(x1.double(), x2.double())
    int_bias = bias is not None and bias.dtype == torch.int32
    if int_bias:
        acc = acc + bias.double()
    if output_dtype == torch.int32:
        return acc.to(torch.int32)
    out = acc.float() * _scale_values(scale)          # dequantised in float32, as the chip does
    if pertoken_scale is not None:
        out = out * pertoken_scale.float().unsqueeze(-1)
    if bias is not None and not int_bias:
        out = out + bias.float()
    if offset is not None:
        out = out + offset.float()
    return _finish(out, output_dtype)


def npu_quant_matmul(x1, x2, scale, *, offset=None, pertoken_scale=None, bias=None, output_dtype=None,
                     group_sizes=None):
    """torch_npu's form: output_dtype None means int8 (the page's default)."""
    if group_sizes:
        raise NotImplementedError("npu_quant_matmul stand-in: group_sizes (per-group quantisation)")
    return _quant_matmul(x1, x2, scale, offset, pertoken_scale, bias, dtype_of(output_dtype, torch.int8))


@standin("npu_quant_matmul_reduce_sum")
def _quant_matmul_reduce_sum(x1: torch.Tensor, x2: torch.Tensor, x1_scale: torch.Tensor,
                             x2_scale: torch.Tensor) -> torch.Tensor:
    """out = sum_b (x1[b] @ x2[b]) * x1_scale[b][:, None] * x2_scale, in bfloat16.
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_quant_matmul_reduce_sum.md"""
    prod = torch.matmul(x1.double(), x2.double()).float() * x1_scale.float().unsqueeze(-1) * x2_scale.float()
    return prod.sum(dim=0).to(torch.bfloat16)


def npu_quant_matmul_reduce_sum(x1, x2, *, x1_scale, x2_scale):
    """torch_npu's form (the scales are keyword-only there; a custom op's tensors cannot be)."""
    return _quant_matmul_reduce_sum(x1, x2, x1_scale, x2_scale)


@standin("npu_weight_quant_batchmatmul")
def npu_weight_quant_batchmatmul(x: torch.Tensor, weight: torch.Tensor, antiquant_scale: torch.Tensor,
                                 antiquant_offset: Optional[torch.Tensor] = None,
                                 quant_scale: Optional[torch.Tensor] = None,
                                 quant_offset: Optional[torch.Tensor] = None, bias: Optional[torch.Tensor] = None,
                                 antiquant_group_size: int = 0, inner_precise: int = 0) -> torch.Tensor:
    """y = x @ ((weight + antiquant_offset) * antiquant_scale) + bias; per-group scales
    ([K / group, N]) cover `antiquant_group_size` rows of K each; with quant_scale the output
    is int8 round(y * quant_scale + quant_offset), else x's dtype. inner_precise only picks
    the chip's accumulation path.
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_weight_quant_batchmatmul.md"""
    w = weight.float()
    scale = _scale_values(antiquant_scale).float()
    off = antiquant_offset.float() if antiquant_offset is not None else None
    if antiquant_group_size > 0 and scale.dim() >= 2 and scale.shape[-2] != w.shape[-2]:
        scale = scale.repeat_interleave(antiquant_group_size, dim=-2)[..., :w.shape[-2], :]
        if off is not None:
            off = off.repeat_interleave(antiquant_group_size, dim=-2)[..., :w.shape[-2], :]
    w = ((w + off) if off is not None else w) * scale
    y = torch.matmul(x.float(), w)
    if bias is not None:
        y = y + bias.float()
    if quant_scale is not None:
        y = y * _scale_values(quant_scale).float() + (quant_offset.float() if quant_offset is not None else 0.0)
        return int8_round(y)
    return y.to(x.dtype)


def _group_of_rows(group_list: torch.Tensor, rows: int, cumsum: bool) -> torch.Tensor:
    ends = group_list.long() if cumsum else group_list.long().cumsum(0)
    return torch.searchsorted(ends.contiguous(), torch.arange(rows, device=group_list.device), right=True)


@standin("npu_grouped_matmul_swiglu_quant_v2")
def _gmm_swiglu_quant(x: torch.Tensor, weight: torch.Tensor, weight_scale: torch.Tensor, x_scale: torch.Tensor,
                      group_list: torch.Tensor, group_list_type: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A8W8: rows of group e (group_list: end rows in cumsum mode 0, counts in mode 1):
    C = (x @ W[e]) * x_scale * w_scale[e] (per channel [E, N], or per group [E, K/g, N] applied
    to each K slice before summing); S = swish(first half of C) * second half;
    Q_scale = rowmax|S| / 127, Q = round(S / Q_scale) (int8). Rows past the groups are 0.
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_grouped_matmul_swiglu_quant_v2.md"""
    groups = _group_of_rows(group_list, x.shape[0], cumsum=group_list_type == 0)
    e = weight.shape[0]
    inside = groups < e
    g = groups.clamp(max=e - 1)
    xs = x.double()
    if weight_scale.dim() == 2:                      # per channel
        c = torch.einsum("mk,mkn->mn", xs, weight.double()[g]) * weight_scale.double()[g]
    else:                                            # per group along K
        kg = weight_scale.shape[1]
        w = weight.double()[g].unflatten(1, (kg, -1))                       # [M, KG, k, N]
        part = torch.einsum("mgk,mgkn->mgn", xs.unflatten(1, (kg, -1)), w)
        c = (part * weight_scale.double()[g]).sum(dim=1)
    c = c * x_scale.double().unsqueeze(-1)
    act, gate = c.chunk(2, dim=-1)
    s = torch.nn.functional.silu(act) * gate
    q_scale = s.abs().amax(dim=-1) / 127.0
    q = torch.where(q_scale.unsqueeze(-1) > 0, s / q_scale.unsqueeze(-1), torch.zeros_like(s))
    return int8_round(q) * inside.unsqueeze(-1), (q_scale * inside).float()


def npu_grouped_matmul_swiglu_quant_v2(x, weight, weight_scale, x_scale, group_list, *, smooth_scale=None,
                                       weight_assist_matrix=None, bias=None, dequant_mode=0, dequant_dtype=0,
                                       quant_mode=0, quant_dtype=0, group_list_type=0, tuning_config=None):
    """torch_npu's form (weight and weight_scale are one-tensor lists). The stand-in covers the
    A8W8 int8 form with per-token output quantisation (quant_mode 0, quant_dtype 0)."""
    if quant_mode != 0 or quant_dtype != 0 or smooth_scale is not None or weight_assist_matrix is not None \
            or bias is not None:
        raise NotImplementedError("npu_grouped_matmul_swiglu_quant_v2 stand-in: only A8W8 with per-token int8 "
                                  f"output (got quant_mode={quant_mode}, quant_dtype={quant_dtype})")
    w = weight[0] if isinstance(weight, (list, tuple)) else weight
    ws = weight_scale[0] if isinstance(weight_scale, (list, tuple)) else weight_scale
    return _gmm_swiglu_quant(x, w, ws, x_scale, group_list, int(group_list_type))


_ACTIVATIONS = {
    "relu": torch.relu,
    "silu": torch.nn.functional.silu,
    "gelu": torch.nn.functional.gelu,
    # Atlas A2/A3 fast_gelu: x / (1 + exp(-1.702 x)) (torch_npu-npu_fast_gelu.md)
    "fastgelu": lambda v: v * torch.sigmoid(1.702 * v),
}
_GLU = {"geglu": torch.nn.functional.gelu, "swiglu": torch.nn.functional.silu, "reglu": torch.relu}


@standin("npu_ffn")
def _ffn(x: torch.Tensor, weight1: torch.Tensor, weight2: torch.Tensor, activation: str,
         bias1: Optional[torch.Tensor], bias2: Optional[torch.Tensor]) -> torch.Tensor:
    """y = activation(x @ W1 + b1) @ W2 + b2 (float, no experts), the GLU activations
    (geglu/swiglu/reglu) taking act(first half) * second half, N1 = 2 * K2.
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_ffn.md"""
    h = torch.matmul(x.float(), weight1.float())
    if bias1 is not None:
        h = h + bias1.float()
    if activation in _GLU:
        a, b = h.chunk(2, dim=-1)
        h = _GLU[activation](a) * b
    elif activation in _ACTIVATIONS:
        h = _ACTIVATIONS[activation](h)
    else:
        raise ValueError(f"activation {activation!r} is not one of {sorted(_ACTIVATIONS) + sorted(_GLU)}")
    y = torch.matmul(h, weight2.float())
    if bias2 is not None:
        y = y + bias2.float()
    return y.to(x.dtype)


def npu_ffn(x, weight1, weight2, activation, *, expert_tokens=None, expert_tokens_index=None, bias1=None,
            bias2=None, scale=None, offset=None, deq_scale1=None, deq_scale2=None, antiquant_scale1=None,
            antiquant_scale2=None, antiquant_offset1=None, antiquant_offset2=None, inner_precise=None,
            output_dtype=None):
    """torch_npu's form; the stand-in covers the float form without experts or quantisation."""
    extra = {k: v for k, v in dict(expert_tokens=expert_tokens, expert_tokens_index=expert_tokens_index, scale=scale,
                                   offset=offset, deq_scale1=deq_scale1, deq_scale2=deq_scale2,
                                   antiquant_scale1=antiquant_scale1, antiquant_scale2=antiquant_scale2,
                                   antiquant_offset1=antiquant_offset1, antiquant_offset2=antiquant_offset2).items()
             if v is not None}
    if extra:
        raise NotImplementedError(f"npu_ffn stand-in: {sorted(extra)} (experts / quantised forms)")
    return _ffn(x, weight1, weight2, activation, bias1, bias2)
