"""Sparse attention for long sequences: npu_lightning_indexer (which key positions matter per
query) and npu_sparse_flash_attention (attention over the selected positions).

Both take BSND or TND tensors (TND: batches split by the prefix sums actual_seq_lengths_*;
none given, one batch). Rows are handled per batch as [S, N, D] blocks. A selected position
past the batch's key length, or after the query under sparse_mode 3 (rightDownCausal:
j <= (L_kv - L_q) + i), is not attended.
"""

from __future__ import annotations

from typing import Optional

import torch

from sage.bench.torch_npu_standin._op import standin


def _segments(t: torch.Tensor, layout: str, lengths: Optional[torch.Tensor]) -> list[torch.Tensor]:
    """Per batch [S, N, D] (BSND: each batch; TND: spans between prefix sums)."""
    if layout == "BSND":
        return list(t.unbind(0))
    if layout != "TND":
        raise NotImplementedError(f"sparse attention stand-in: layout {layout!r} (supported: BSND, TND)")
    if lengths is None:
        return [t]
    ends = [0] + [int(v) for v in lengths.tolist()]
    return [t[a:b] for a, b in zip(ends[:-1], ends[1:])]


def _lengths(segs: list[torch.Tensor], lengths: Optional[torch.Tensor], layout: str) -> list[int]:
    """Valid length per batch: BSND takes actual lengths as counts; TND's are the segments."""
    if layout == "BSND" and lengths is not None:
        return [int(v) for v in lengths.tolist()]
    return [s.shape[0] for s in segs]


def _allowed(sq: int, skv: int, lq: int, lkv: int, sparse_mode: int, device: torch.device) -> torch.Tensor:
    """[Sq, Skv] positions a query may attend: within the key length, causal from the bottom right (mode 3)."""
    i = torch.arange(sq, device=device).unsqueeze(-1)
    j = torch.arange(skv, device=device)
    ok = (j < lkv) & (i >= 0)              # [Sq, Skv] in every mode
    if sparse_mode == 3:
        ok = ok & (j <= (lkv - lq) + i)
    elif sparse_mode != 0:
        raise NotImplementedError(f"sparse attention stand-in: sparse_mode {sparse_mode} (supported 0, 3)")
    return ok


@standin("npu_lightning_indexer")
def _lightning_indexer(query: torch.Tensor, key: torch.Tensor, weights: torch.Tensor,
                       actual_seq_lengths_query: Optional[torch.Tensor], actual_seq_lengths_key: Optional[torch.Tensor],
                       layout_query: str, layout_key: str, sparse_count: int, sparse_mode: int,
                       return_value: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """score[i, n2, j] = sum over the query heads h of key head n2's group of
    weights[i, h] * ReLU(q[i, h] . k[j, n2]); sparse_indices = the sparse_count best j
    (descending score), -1 where fewer positions are allowed; sparse_values their scores
    (empty unless return_value).
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_lightning_indexer.md"""
    qs = _segments(query, layout_query, actual_seq_lengths_query)
    ks = _segments(key, layout_key, actual_seq_lengths_key)
    ws = _segments(weights.unsqueeze(-1), layout_query, actual_seq_lengths_query)
    lq, lkv = _lengths(qs, actual_seq_lengths_query, layout_query), _lengths(ks, actual_seq_lengths_key, layout_key)
    idx_out, val_out = [], []
    for q, k, w, a, b in zip(qs, ks, ws, lq, lkv):
        n1, n2 = q.shape[1], k.shape[1]
        dots = torch.einsum("ihd,jnd->ihnj", q.float(), k.float()).relu()                   # [Sq, N1, N2, Skv]
        group = torch.arange(n1, device=q.device) // (n1 // n2)
        own = (group.unsqueeze(-1) == torch.arange(n2, device=q.device))                      # [N1, N2]
        score = torch.einsum("ihnj,ih,hn->inj", dots, w.squeeze(-1).float(), own.float())     # [Sq, N2, Skv]
        score = score.masked_fill(~_allowed(q.shape[0], k.shape[0], a, b, sparse_mode, q.device).unsqueeze(1),
                                  float("-inf"))
        top = min(sparse_count, k.shape[0])
        vals, idx = score.topk(top, dim=-1)
        idx = idx.to(torch.int32)        # the op's output dtype; int32 holds any key position
        idx = torch.where(torch.isfinite(vals), idx, torch.full_like(idx, -1))
        pad = sparse_count - top
        idx_out.append(torch.nn.functional.pad(idx, (0, pad), value=-1))
        val_out.append(torch.nn.functional.pad(vals, (0, pad), value=float("-inf")))
    stack = torch.stack if layout_query == "BSND" else torch.cat
    indices = stack(idx_out)
    values = stack(val_out).to(query.dtype) if return_value else torch.empty(0, dtype=query.dtype, device=query.device)
    return indices, values


def npu_lightning_indexer(query, key, weights, *, actual_seq_lengths_query=None, actual_seq_lengths_key=None,
                          block_table=None, layout_query="BSND", layout_key="BSND", sparse_count=2048, sparse_mode=3,
                          pre_tokens=2**63 - 1, next_tokens=2**63 - 1, return_value=False):
    """torch_npu's form; the paged key (block_table, PA_BSND) has no stand-in."""
    if block_table is not None or layout_key == "PA_BSND":
        raise NotImplementedError("npu_lightning_indexer stand-in: paged keys (block_table / PA_BSND)")
    return _lightning_indexer(query, key, weights, actual_seq_lengths_query, actual_seq_lengths_key, str(layout_query),
                              str(layout_key), int(sparse_count), int(sparse_mode), bool(return_value))


@standin("npu_sparse_flash_attention")
def _sparse_flash_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, sparse_indices: torch.Tensor,
                            scale_value: float, actual_seq_lengths_query: Optional[torch.Tensor],
                            actual_seq_lengths_kv: Optional[torch.Tensor], query_rope: Optional[torch.Tensor],
                            key_rope: Optional[torch.Tensor], sparse_block_size: int, layout_query: str,
                            layout_kv: str, sparse_mode: int,
                            return_softmax_lse: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """softmax(scale * Q K~^T) V~ where K~, V~ gather, for each query and key head, the
    sparse_block_size tokens starting at index * sparse_block_size of every selected index
    (negative or past the key length: none; a repeated index gathers its block twice);
    query_rope/key_rope, when given, extend Q and K (MLA-absorb). softmax_max/softmax_sum
    [B, N2, S1, N1/N2] when return_softmax_lse, else empty.
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_sparse_flash_attention.md"""
    qf, kf = query.float(), key.float()
    if query_rope is not None and key_rope is not None:
        qf, kf = torch.cat([qf, query_rope.float()], -1), torch.cat([kf, key_rope.float()], -1)
    qs = _segments(qf, layout_query, actual_seq_lengths_query)
    ks = _segments(kf, layout_kv, actual_seq_lengths_kv)
    vs = _segments(value.float(), layout_kv, actual_seq_lengths_kv)
    ids = _segments(sparse_indices, layout_query, actual_seq_lengths_query)
    lq, lkv = _lengths(qs, actual_seq_lengths_query, layout_query), _lengths(ks, actual_seq_lengths_kv, layout_kv)
    outs, maxes, sums = [], [], []
    for q, k, v, idx, a, b in zip(qs, ks, vs, ids, lq, lkv):
        sq, n1 = q.shape[:2]
        skv, n2 = k.shape[:2]
        blocks = -(-skv // sparse_block_size)
        ok = (idx >= 0) & (idx < blocks)
        count = torch.zeros(sq, n2, blocks + 1, device=q.device)
        count.scatter_add_(-1, torch.where(ok, idx, blocks).long(), ok.float())
        count = count[..., :blocks].repeat_interleave(sparse_block_size, dim=-1)[..., :skv]      # [Sq, N2, Skv]
        count = count * _allowed(sq, skv, a, b, sparse_mode, q.device).unsqueeze(1)
        group = n1 // n2
        count = count.repeat_interleave(group, dim=1)                                           # [Sq, N1, Skv]
        s = scale_value * torch.einsum("ihd,jhd->ihj", q, k.repeat_interleave(group, dim=1))
        s = s.masked_fill(count == 0, float("-inf"))
        row_max = s.amax(-1, keepdim=True)
        live = torch.isfinite(row_max)
        e = torch.exp(s - torch.where(live, row_max, torch.zeros_like(row_max))) * count
        row_sum = e.sum(-1, keepdim=True)
        p = torch.where(live, e / row_sum.clamp(min=torch.finfo(torch.float32).tiny), torch.zeros_like(e))
        outs.append(torch.einsum("ihj,jhd->ihd", p, v.repeat_interleave(group, dim=1)))
        maxes.append(row_max.squeeze(-1).unflatten(1, (n2, group)).transpose(0, 1))             # [N2, Sq, G]
        sums.append(row_sum.squeeze(-1).unflatten(1, (n2, group)).transpose(0, 1))
    stack = torch.stack if layout_query == "BSND" else torch.cat
    out = stack(outs).to(query.dtype)
    if not return_softmax_lse:
        empty = torch.empty(0, device=query.device)
        return out, empty, empty.clone()
    join = torch.stack if layout_query == "BSND" else (lambda xs: torch.cat(xs, dim=1))
    return out, join(maxes), join(sums)


def npu_sparse_flash_attention(query, key, value, sparse_indices, scale_value, *, block_table=None,
                               actual_seq_lengths_query=None, actual_seq_lengths_kv=None, query_rope=None, key_rope=None,
                               sparse_block_size=1, layout_query="BSND", layout_kv="BSND", sparse_mode=3,
                               pre_tokens=9223372036854775807, next_tokens=9223372036854775807, attention_mode=0,
                               return_softmax_lse=False, sinks=None):
    """torch_npu's form; paged KV (block_table, PA_BSND) and sinks have no stand-in."""
    if block_table is not None or layout_kv == "PA_BSND" or sinks is not None:
        raise NotImplementedError("npu_sparse_flash_attention stand-in: paged KV (block_table / PA_BSND) or sinks")
    return _sparse_flash_attention(query, key, value, sparse_indices, float(scale_value), actual_seq_lengths_query,
                                   actual_seq_lengths_kv, query_rope, key_rope, int(sparse_block_size),
                                   str(layout_query), str(layout_kv), int(sparse_mode), bool(return_softmax_lse))
