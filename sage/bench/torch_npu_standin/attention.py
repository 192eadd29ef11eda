"""Fused attention: npu_fusion_attention (training) and npu_fused_infer_attention_score
(inference), one softmax(scale * QK^T + pse, masked) V core over the layouts the pages list.

Mask convention of both pages: a true (1) atten_mask element is *not* computed. With no
atten_mask the whole matrix is computed whatever sparse_mode, pre_tockens and next_tockens
say (npu_fusion_attention page, sparse_mode notes). A row with every element masked is an
"invalid row" the chip writes as zeros.
"""

from __future__ import annotations

from typing import Optional

import torch

from sage.bench.torch_npu_standin._op import standin

_LAYOUTS = ("BSH", "SBH", "BSND", "BNSD")


def to_bnsd(t: torch.Tensor, layout: str, heads: int) -> torch.Tensor:
    """[B, N, S, D] view of a tensor in one of the 3-/4-D layouts (heads: N for BSH/SBH)."""
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(1, 2)
    if layout == "BSH":
        return t.unflatten(-1, (heads, -1)).transpose(1, 2)
    if layout == "SBH":
        return t.unflatten(-1, (heads, -1)).permute(1, 2, 0, 3)
    raise NotImplementedError(f"attention stand-in: input_layout {layout!r} (supported: {', '.join(_LAYOUTS)})")


def from_bnsd(t: torch.Tensor, layout: str) -> torch.Tensor:
    """The inverse of to_bnsd."""
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(1, 2)
    if layout == "BSH":
        return t.transpose(1, 2).flatten(-2)
    return t.permute(2, 0, 1, 3).flatten(-2)        # SBH


def sparse_mask(atten_mask: Optional[torch.Tensor], sparse_mode: int, pre: int, nxt: int, sq: int, skv: int,
                device: torch.device) -> Optional[torch.Tensor]:
    """The masked (not computed) positions, broadcastable to [B, N, Sq, Skv], or None.
    Modes 0/1/5: the given mask (0 also bounded by the pre/next band from the top-left);
    2: causal from the top-left; 3: causal from the bottom-right; 4: the pre/next band from
    the bottom-right (2-4 take a compressed mask that only encodes this shape)."""
    if atten_mask is None:
        return None
    i = torch.arange(sq, device=device).unsqueeze(-1)
    j = torch.arange(skv, device=device)
    shift = skv - sq
    if sparse_mode in (0, 1, 5):
        given = atten_mask.to(torch.bool)
        given = given.reshape(given.shape[-2:]) if given.dim() == 2 else given
        if sparse_mode == 0:
            return given | (j - i > nxt) | (i - j > pre)
        return given
    if sparse_mode == 2:
        return j > i
    if sparse_mode == 3:
        return j > i + shift
    if sparse_mode == 4:
        d = j - i - shift
        return (d > nxt) | (d < -pre)
    raise NotImplementedError(f"attention stand-in: sparse_mode {sparse_mode} (supported 0-5)")


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, mask: Optional[torch.Tensor],
           pse: Optional[torch.Tensor] = None, keep_prob: float = 1.0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """softmax(scale * (QK^T + pse), masked) V in float32 over [B, N, S, D] tensors (key and
    value heads repeated for grouped-query attention); also the row max and row sum of the
    exponentials (the softmax statistics both ops return)."""
    group = q.shape[1] // k.shape[1]
    kf = k.float().repeat_interleave(group, dim=1)
    vf = v.float().repeat_interleave(group, dim=1)
    s = torch.matmul(q.float(), kf.transpose(-1, -2))
    if pse is not None:
        s = s + pse.float()
    s = s * scale
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))
    row_max = s.amax(dim=-1, keepdim=True)
    valid = torch.isfinite(row_max)
    e = torch.exp(s - torch.where(valid, row_max, torch.zeros_like(row_max)))
    row_sum = e.sum(dim=-1, keepdim=True)
    p = torch.where(valid, e / row_sum.clamp(min=torch.finfo(torch.float32).tiny), torch.zeros_like(e))
    if keep_prob < 1.0:
        # the chip draws its mask with its own Philox stream: the stand-in's draw is not the chip's
        p = p * (torch.rand_like(p) < keep_prob) / keep_prob
    return torch.matmul(p, vf), row_max, row_sum


@standin("npu_fusion_attention")
def _fusion_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, head_num: int, input_layout: str,
                      pse: Optional[torch.Tensor], atten_mask: Optional[torch.Tensor], scale: float, keep_prob: float,
                      pre_tockens: int, next_tockens: int, sparse_mode: int
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """attention_out = Dropout(Softmax(Mask(scale * (pse + query key^T), atten_mask)), keep_prob) value,
    with softmax_max and softmax_sum ([B, N, Sq, 8] float32, the statistic repeated 8 times)
    and the reserved softmax_out (empty).
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_fusion_attention.md"""
    q = to_bnsd(query, input_layout, head_num)
    d = q.shape[-1]
    kv_heads = key.shape[-1] // d if input_layout in ("BSH", "SBH") else None
    k = to_bnsd(key, input_layout, kv_heads or 0)
    v = to_bnsd(value, input_layout, kv_heads or 0)
    mask = sparse_mask(atten_mask, sparse_mode, pre_tockens, next_tockens, q.shape[2], k.shape[2], query.device)
    out, row_max, row_sum = attend(q, k, v, scale, mask, pse, keep_prob)
    return (from_bnsd(out, input_layout).to(query.dtype).contiguous(), row_max.expand(*row_max.shape[:-1], 8).contiguous(),
            row_sum.expand(*row_sum.shape[:-1], 8).contiguous(), torch.empty(0, dtype=query.dtype, device=query.device))


def npu_fusion_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None,
                         scale=1.0, keep_prob=1.0, pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0,
                         prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                         gen_mask_parallel=True, sync=False, softmax_layout="", sink=None, dropout_mask=None, seed=0,
                         offset=0):
    """torch_npu's form: (attention_out, softmax_max, softmax_sum, softmax_out, seed, offset,
    numels). Varlen (TND, actual_seq_*), prefix modes, sink and a given dropout mask have no stand-in."""
    unsupported = {k: v for k, v in dict(padding_mask=padding_mask, prefix=prefix, actual_seq_qlen=actual_seq_qlen,
                                         actual_seq_kvlen=actual_seq_kvlen, sink=sink, dropout_mask=dropout_mask).items()
                   if v is not None}
    if unsupported:
        raise NotImplementedError(f"npu_fusion_attention stand-in: {sorted(unsupported)}")
    out = _fusion_attention(query, key, value, int(head_num), str(input_layout), pse, atten_mask, float(scale),
                            float(keep_prob), int(pre_tockens), int(next_tockens), int(sparse_mode))
    numels = 0 if keep_prob >= 1.0 else out[1].shape[0] * out[1].shape[1] * out[1].shape[2] * key.shape[-2]
    return (*out, int(seed), int(offset), numels)


@standin("npu_fused_infer_attention_score")
def _fused_infer_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                           pse_shift: Optional[torch.Tensor], atten_mask: Optional[torch.Tensor], num_heads: int,
                           scale: float, pre_tokens: int, next_tokens: int, input_layout: str,
                           num_key_value_heads: int, sparse_mode: int,
                           softmax_lse_flag: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """attention_out = softmax(scale * query key^T + pse_shift, masked) value over num_heads
    query heads and num_key_value_heads (0: as many) key/value heads; softmax_lse =
    log(sum exp) + max per row ([B, N, Sq, 1] float32) when asked, else a zero of shape (1,).
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_fused_infer_attention_score.md"""
    kv_heads = num_key_value_heads or num_heads
    q = to_bnsd(query, input_layout, num_heads)
    k = to_bnsd(key, input_layout, kv_heads)
    v = to_bnsd(value, input_layout, kv_heads)
    mask = sparse_mask(atten_mask, sparse_mode, pre_tokens, next_tokens, q.shape[2], k.shape[2], query.device)
    # the page scales QK^T before adding pse_shift: pass it pre-divided so attend's
    # scale * (QK^T + pse) is scale * QK^T + pse_shift
    pse = pse_shift.float() / scale if pse_shift is not None else None
    out, row_max, row_sum = attend(q, k, v, scale, mask, pse)
    lse = (row_sum.log() + row_max) if softmax_lse_flag else torch.zeros(1, device=query.device)
    return from_bnsd(out, input_layout).to(query.dtype).contiguous(), lse


def npu_fused_infer_attention_score(query, key, value, *, pse_shift=None, atten_mask=None, num_heads=1, scale=1.0,
                                    pre_tokens=2147483647, next_tokens=2147483647, input_layout="BSH",
                                    num_key_value_heads=0, sparse_mode=0, inner_precise=0, block_size=0,
                                    antiquant_mode=0, softmax_lse_flag=False, key_antiquant_mode=0,
                                    value_antiquant_mode=0, **optional):
    """torch_npu's form; the quantised, paged (block_table), prefix, rope-split and varlen
    arguments (all in `optional`) have no stand-in and must be None."""
    given = sorted(k for k, v in optional.items() if v is not None)
    if given:
        raise NotImplementedError(f"npu_fused_infer_attention_score stand-in: {given}")
    return _fused_infer_attention(query, key, value, pse_shift, atten_mask, int(num_heads), float(scale),
                                  int(pre_tokens), int(next_tokens), str(input_layout), int(num_key_value_heads),
                                  int(sparse_mode), bool(softmax_lse_flag))
