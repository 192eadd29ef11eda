"""Elementwise quantisation ops: npu_dynamic_quant, npu_swiglu_quant, npu_dequant_swiglu_quant,
npu_quant_scatter. int8 outputs round half to even and saturate to [-128, 127]."""

from __future__ import annotations

from typing import Optional

import torch

from sage.bench.torch_npu_standin._op import dtype_of, int8_round, standin


def _group_rows(group_index: torch.Tensor, rows: int, cumsum: bool) -> torch.Tensor:
    """The group of every row ([rows] int64): group g holds rows [end[g-1], end[g]); rows past
    the last end get group G (no group: their outputs are zero)."""
    ends = group_index.long().cumsum(0) if not cumsum else group_index.long()
    pos = torch.arange(rows, device=group_index.device)
    return torch.searchsorted(ends.contiguous(), pos, right=True)


def _per_group(table: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
    """Row r gets table[groups[r]]; a row past the groups gets zeros."""
    padded = torch.cat([table, torch.zeros_like(table[:1])], dim=0)
    return padded[groups]


def _dynamic(y: torch.Tensor, qmax: float = 127.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-row quantisation: scale = rowmax|y| / qmax, out = round(y / scale)."""
    scale = y.abs().amax(dim=-1) / qmax
    q = torch.where(scale.unsqueeze(-1) > 0, y / scale.unsqueeze(-1), torch.zeros_like(y))
    return int8_round(q), scale


def _table(t: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
    """A per-group (or per-tensor: [G]) table of scales or offsets, one row per row of y."""
    t = t.float()
    return _per_group(t.reshape(t.shape[0], -1) if t.dim() > 0 else t.reshape(1, 1), groups)


def _quantized(y: torch.Tensor, quant_mode: int, offset: torch.Tensor | None, groups: torch.Tensor,
               group_index: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The int8 rows of y ([R, C]) and their scales: dynamic (quant_mode 1) by row, or static
    round(y + offset[g]) with scale 0; rows past the groups are zero."""
    if quant_mode == 1:
        out, scale = _dynamic(y)
    else:
        if offset is not None:
            y = y + _table(offset, groups)
        out, scale = int8_round(y), torch.zeros(y.shape[0], device=y.device)
    if group_index is not None:
        inside = groups < group_index.shape[0]
        out, scale = out * inside.unsqueeze(-1), scale * inside
    return out, scale


@standin("npu_dynamic_quant")
def _dynamic_quant(x: torch.Tensor, smooth_scales: Optional[torch.Tensor] = None,
                   group_index: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token symmetric int8 quantisation: y = x * smooth_scales (rows of group g take
    smooth_scales[g], group_index holding each group's end row), scale = rowmax|y| / 127,
    out = round(y / scale); scale has x's shape without the last axis, float32.
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_dynamic_quant.md"""
    y = x.float()
    if smooth_scales is not None:
        if group_index is None:
            y = y * smooth_scales.float()
        else:
            rows = y.reshape(-1, y.shape[-1])
            groups = _group_rows(group_index, rows.shape[0], cumsum=True)
            y = (rows * _per_group(smooth_scales.float(), groups)).reshape(y.shape)
    return _dynamic(y)


def npu_dynamic_quant(x, *, smooth_scales=None, group_index=None, dst_type=None):
    """torch_npu's form; only the int8 output (dst_type None or int8) has a stand-in."""
    if dtype_of(dst_type, torch.int8) != torch.int8:
        raise NotImplementedError(f"npu_dynamic_quant stand-in: dst_type {dst_type} (only int8)")
    return _dynamic_quant(x, smooth_scales, group_index)


def _swiglu(x: torch.Tensor, activate_left: bool) -> torch.Tensor:
    a, b = x.chunk(2, dim=-1)
    act, lin = (a, b) if activate_left else (b, a)
    return torch.nn.functional.silu(act) * lin


@standin("npu_swiglu_quant")
def _swiglu_quant(x: torch.Tensor, smooth_scales: Optional[torch.Tensor], offsets: Optional[torch.Tensor],
                  group_index: Optional[torch.Tensor], activate_left: bool, quant_mode: int,
                  group_list_type: int) -> tuple[torch.Tensor, torch.Tensor]:
    """swiglu (swish of the left half if activate_left, else of the right, times the other)
    then per group g (group_index: end rows in cumsum mode 0, row counts in count mode 1):
    y = act * smooth_scales[g] (+ offsets[g] when static); dynamic (quant_mode 1):
    scale = rowmax|y| / 127, out = round(y / scale); static (0): out = round(y), scale 0.
    Per-tensor scales ([G]) scale the whole group. Sources:
    https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_swiglu_quant.md,
    https://gitcode.com/cann/ops-nn/blob/master/quant/swi_glu_quant/docs/aclnnSwiGluQuantV2.md (formulas)."""
    act = _swiglu(x.float(), activate_left)
    rows = act.reshape(-1, act.shape[-1])
    if group_index is not None:
        groups = _group_rows(group_index, rows.shape[0], cumsum=group_list_type == 0)
    else:
        groups = torch.zeros(rows.shape[0], dtype=torch.long, device=x.device)

    y = rows * _table(smooth_scales, groups) if smooth_scales is not None else rows
    out, scale = _quantized(y, quant_mode, offsets, groups, group_index)
    return out.reshape(act.shape), scale.reshape(act.shape[:-1])


def npu_swiglu_quant(x, *, smooth_scales=None, offsets=None, group_index=None, activate_left=False, quant_mode=0,
                     group_list_type=0, dst_type=None):
    """torch_npu's form; only the int8 output has a stand-in."""
    if dtype_of(dst_type, torch.int8) != torch.int8:
        raise NotImplementedError(f"npu_swiglu_quant stand-in: dst_type {dst_type} (only int8)")
    return _swiglu_quant(x, smooth_scales, offsets, group_index, bool(activate_left), int(quant_mode),
                         int(group_list_type))


@standin("npu_dequant_swiglu_quant")
def _dequant_swiglu_quant(x: torch.Tensor, weight_scale: Optional[torch.Tensor] = None,
                             activation_scale: Optional[torch.Tensor] = None, bias: Optional[torch.Tensor] = None,
                             quant_scale: Optional[torch.Tensor] = None, quant_offset: Optional[torch.Tensor] = None,
                             group_index: Optional[torch.Tensor] = None, activate_left: bool = False,
                             quant_mode: int = 0, swiglu_mode: int = 0, clamp_limit: float = 7.0,
                             glu_alpha: float = 1.702, glu_bias: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """x (+ bias) * weight_scale[g] * activation_scale, swiglu (mode 0: halves, swish of the
    left if activate_left; mode 1: even/odd lanes, clamped, z*sigmoid(alpha z)*(lin + glu_bias);
    mode 2: halves with mode 1's arithmetic), y = act * quant_scale[g] (+ quant_offset when
    static), then int8 by row (dynamic, quant_mode 1) or round(y) (static). group_index counts
    the rows of each group; rows past them are zero (the chip leaves them unwritten).
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_dequant_swiglu_quant.md"""
    v = x.float()
    if bias is not None:
        v = v + bias.float()
    groups = (_group_rows(group_index, v.shape[0], cumsum=False) if group_index is not None
              else torch.zeros(v.shape[0], dtype=torch.long, device=x.device))

    def table(t: torch.Tensor) -> torch.Tensor:
        return _table(t, groups)

    if weight_scale is not None:
        v = v * table(weight_scale)
    if activation_scale is not None:
        v = v * activation_scale.float().reshape(-1, 1)
    if swiglu_mode == 0:
        act = _swiglu(v, activate_left)
    else:
        if swiglu_mode == 1:
            glu, lin = v[..., 0::2], v[..., 1::2]
        else:
            a, b = v.chunk(2, dim=-1)
            glu, lin = (a, b) if activate_left else (b, a)
        glu = glu.clamp(max=clamp_limit)
        lin = lin.clamp(-clamp_limit, clamp_limit)
        act = glu * torch.sigmoid(glu_alpha * glu) * (lin + glu_bias)
    y = act * table(quant_scale) if quant_scale is not None else act
    return _quantized(y, quant_mode, quant_offset, groups, group_index)


def npu_dequant_swiglu_quant(x, *, weight_scale=None, activation_scale=None, bias=None, quant_scale=None,
                             quant_offset=None, group_index=None, activate_left=False, quant_mode=0, swiglu_mode=0,
                             clamp_limit=7.0, glu_alpha=1.702, glu_bias=1.0):
    """torch_npu's form (keyword-only arguments)."""
    return _dequant_swiglu_quant(x, weight_scale, activation_scale, bias, quant_scale, quant_offset, group_index,
                                 bool(activate_left), int(quant_mode), int(swiglu_mode), float(clamp_limit),
                                 float(glu_alpha), float(glu_bias))


@standin("npu_quant_scatter")
def npu_quant_scatter(input: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor, quant_scales: torch.Tensor,
                      quant_zero_points: Optional[torch.Tensor] = None, axis: int = 0, quant_axis: int = 1,
                      reduce: str = "update") -> torch.Tensor:
    """A copy of input with, for each b of the first axis, the slice starting at indices[b]
    along `axis` (or at (indices[b,0], indices[b,1]) for 2-D indices) set to
    round(updates[b] / quant_scales + quant_zero_points) (the quantisation of npu_quantize,
    div_mode=True, along the last axis). Sources:
    https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_quant_scatter.md,
    https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_quantize.md"""
    if reduce != "update":
        raise ValueError(f"reduce must be 'update', got {reduce!r}")
    nd = updates.dim()
    axis, quant_axis = axis % nd, quant_axis % nd
    if axis in (0, nd - 1) or quant_axis != nd - 1:
        raise ValueError("axis must not be the first or last axis of updates; quant_axis must be the last")
    q = updates.float() / quant_scales.float().reshape(-1)
    if quant_zero_points is not None:
        q = q + quant_zero_points.float().reshape(-1)
    q = int8_round(q).to(input.dtype)
    out = input.clone()
    length = updates.shape[axis]
    for b in range(updates.shape[0]):
        row, start = (b, indices[b]) if indices.dim() == 1 else (indices[b, 0], indices[b, 1])
        out[row].narrow(axis - 1, int(start), length).copy_(q[b])
    return out
