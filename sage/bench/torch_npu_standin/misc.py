"""Optimiser, box and sampling ops: npu_apply_adam, npu_iou, npu_top_k_top_p,
npu_advance_step_flashattn."""

from __future__ import annotations

import torch

from sage.bench.torch_npu_standin._op import standin


@standin("npu_apply_adam", mutates_args=("var", "m", "v"), compile_inplace=True)
def _apply_adam(var: torch.Tensor, m: torch.Tensor, v: torch.Tensor, grad: torch.Tensor, beta1_power: float,
                beta2_power: float, lr: float, beta1: float, beta2: float, epsilon: float,
                use_nesterov: bool) -> None:
    """The ApplyAdam update in place (TensorFlow's ApplyAdam, which the CANN op implements):
    lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power); m += (1 - beta1) * (g - m);
    v += (1 - beta2) * (g^2 - v); var -= lr_t * m / (sqrt(v) + eps), or with Nesterov
    lr_t * (beta1 * m + (1 - beta1) * g) / (sqrt(v) + eps).
    Sources: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/（beta）torch_npu-npu_apply_adam.md
    (signature), https://www.tensorflow.org/api_docs/python/tf/raw_ops/ApplyAdam (formula).
    level1/17_adam_w's docstring writes the update as m_hat / (sqrt(v_hat) + eps), which is this
    one with eps scaled by sqrt(1 - beta2_power); the op is TensorFlow's, as above.
    The compiler records this body too (compile_inplace): pointwise ops in float32, then one
    copy_ per state tensor, each rounding once to that tensor's dtype."""
    g = grad.float()
    m_new = m.float() * beta1 + (1 - beta1) * g
    v_new = v.float() * beta2 + (1 - beta2) * g * g
    lr_t = lr * (1 - beta2_power) ** 0.5 / (1 - beta1_power)
    step = beta1 * m_new + (1 - beta1) * g if use_nesterov else m_new
    var.copy_(var.float() - lr_t * step / (v_new.sqrt() + epsilon))
    m.copy_(m_new)
    v.copy_(v_new)


def npu_apply_adam(beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, use_locking=False,
                   use_nesterov=False, out=None):
    """torch_npu's calling form: the state tensors come as out=(var, m, v), updated in place
    and returned (use_locking has no meaning for one stream)."""
    if out is None or len(out) != 3:
        raise ValueError("npu_apply_adam needs out=(var, m, v)")
    var, m, v = out
    _apply_adam(var, m, v, grad, float(beta1_power), float(beta2_power), float(lr), float(beta1), float(beta2),
                float(epsilon), bool(use_nesterov))
    return var, m, v


@standin("npu_iou")
def npu_iou(bboxes: torch.Tensor, gtboxes: torch.Tensor, mode: int = 0) -> torch.Tensor:
    """Intersection over union (mode 0) or over the ground-truth area (mode 1, IoF) of every
    (gtbox, bbox) pair of [x1, y1, x2, y2] boxes: shape [M gtboxes, N bboxes], bboxes' dtype.
    The page's example (0.4985 for [0,0,10,10] vs [0,0,10,20]) shows areas without a +1 offset.
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/（beta）torch_npu-npu_iou.md"""
    if mode not in (0, 1):
        raise ValueError(f"mode must be 0 (IoU) or 1 (IoF), got {mode}")
    b, g = bboxes.float(), gtboxes.float()
    x1 = torch.maximum(g[:, None, 0], b[None, :, 0])
    y1 = torch.maximum(g[:, None, 1], b[None, :, 1])
    x2 = torch.minimum(g[:, None, 2], b[None, :, 2])
    y2 = torch.minimum(g[:, None, 3], b[None, :, 3])
    inter = (x2 - x1).clamp(min=0) * (y2 - y1).clamp(min=0)
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    area_g = (g[:, 2] - g[:, 0]) * (g[:, 3] - g[:, 1])
    denom = area_g[:, None] + area_b[None, :] - inter if mode == 0 else area_g[:, None].expand_as(inter)
    out = torch.where(denom > 0, inter / denom.clamp(min=torch.finfo(torch.float32).tiny), torch.zeros_like(inter))
    return out.to(bboxes.dtype)


@standin("npu_top_k_top_p")
def npu_top_k_top_p(logits: torch.Tensor, p: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Per row b: sort ascending (stable); mask values below the k[b]-th largest; softmax of
    the kept values; mask positions whose ascending cumulative probability is <= 1 - p[b]
    (the largest always kept); masked logits become -inf, in the original order.
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_top_k_top_p.md"""
    vals, order = torch.sort(logits.float(), dim=-1, stable=True)
    v = logits.shape[-1]
    kth = vals.gather(-1, (v - k.long()).clamp(0, v - 1).unsqueeze(-1))
    vals = vals.masked_fill(vals < kth, float("-inf"))
    cum = torch.softmax(vals, dim=-1).cumsum(dim=-1)
    drop = cum <= (1 - p.float()).unsqueeze(-1)
    drop[..., -1] = False
    vals = vals.masked_fill(drop, float("-inf"))
    return torch.empty_like(vals).scatter_(-1, order, vals).to(logits.dtype)


@standin("npu_advance_step_flashattn",
         mutates_args=("input_tokens", "input_positions", "seq_lens", "slot_mapping"))
def _advance_step(input_tokens: torch.Tensor, sampled_token_ids: torch.Tensor, input_positions: torch.Tensor,
                  seq_lens: torch.Tensor, slot_mapping: torch.Tensor, block_tables: torch.Tensor,
                  num_seqs: int, num_queries: int, block_size: int) -> None:
    """vLLM's advance step in place, for each query i < num_queries (non-speculative form):
    input_tokens[i] = sampled[i]; input_positions[i] = seq_lens[i]; seq_lens[i] += 1;
    slot_mapping[i] = table_i[pos // block_size] * block_size + pos % block_size with
    pos = the new input position and table_i read at row i's start of the flat table (the
    page's `blockTables + blockTablesStride * blockIdx`). A block index past the table reads
    memory the op does not own on the chip; the stand-in reads the flat table modulo its size.
    Source: https://github.com/Ascend/op-plugin/blob/master/docs/zh/custom_APIs/torch_npu/torch_npu-npu_advance_step_flashattn.md"""
    q = num_queries
    pos = seq_lens[:q].clone()
    input_tokens[:q] = sampled_token_ids.reshape(-1)[:q]
    input_positions[:q] = pos
    seq_lens[:q] = pos + 1
    flat = block_tables.reshape(-1)
    rows = torch.arange(q, device=pos.device) * block_tables.stride(0)
    block = flat[(rows + torch.div(pos, block_size, rounding_mode="floor")) % flat.numel()]
    slot_mapping[:q] = block * block_size + pos % block_size


def npu_advance_step_flashattn(input_tokens, sampled_token_ids, input_positions, seq_lens, slot_mapping,
                               block_tables, num_seqs, num_queries, block_size, spec_token=None, accepted_num=None):
    """torch_npu's form (returns nothing; its four state tensors are updated in place)."""
    if spec_token is not None or accepted_num is not None:
        raise NotImplementedError("the speculative form of npu_advance_step_flashattn has no stand-in")
    _advance_step(input_tokens, sampled_token_ids, input_positions, seq_lens, slot_mapping, block_tables,
                  int(num_seqs), int(num_queries), int(block_size))
