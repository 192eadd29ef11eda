"""Sampling filter: keep only the top-k and top-p (nucleus) logits, as torch_npu.npu_top_k_top_p."""

import torch

DESCRIPTION = (
    "npu_top_k_top_p (vLLM apply_top_k_top_p): logits [B, V], p [B] fp32 in (0, 1], "
    "k [B] int32 in [1, V]. Sort each row ascending; logits below the k-th largest are "
    "set to -inf; then with probs = softmax(sorted logits) (fp32) and c = cumsum(probs), "
    "positions with c <= 1 - p are set to -inf, except the largest logit which is always "
    "kept. Returns the filtered logits [B, V] in the original order and dtype (kept "
    "entries unchanged, the rest -inf). Logits are distinct per row and each p sits "
    "halfway between two cumulative sums, so the cut-off is unambiguous."
)
TAGS = ["sort", "softmax", "scan", "mask", "sampling"]
FUSED_OP = "torch_npu.npu_top_k_top_p"


class Model(torch.nn.Module):
    def forward(self, logits: torch.Tensor, p: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        sorted_logits, order = logits.sort(dim=-1, descending=False)
        vocab = logits.shape[-1]
        kth = sorted_logits.gather(1, (vocab - k.long())[:, None])
        sorted_logits = sorted_logits.masked_fill(sorted_logits < kth, float("-inf"))
        cumulative = torch.softmax(sorted_logits.float(), dim=-1).cumsum(dim=-1)
        drop = cumulative <= 1 - p.float()[:, None]
        drop[:, -1] = False
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        return sorted_logits.scatter(1, order, sorted_logits)


def get_init_inputs():
    return []


# (dtype, B, V)
_CASES = [
    (torch.float32, 8, 32000),
    (torch.float16, 16, 15013),
    (torch.bfloat16, 32, 2117),
]


def _value_pool(dtype):
    """Every value a row may draw from: distinct and exactly representable in `dtype`."""
    if dtype == torch.float32:
        return torch.arange(-(2**15), 2**15, dtype=torch.float32) * 2**-10
    bits = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16)
    values = bits.view(dtype).float()
    keep = torch.isfinite(values) & (values.abs() >= 2**-6) & (values.abs() <= 32)
    return values[keep]


def _distinct_logits(pool, rows, v):
    # Sampling without replacement (Gumbel top-k), weighted like a N(0, 4^2), gives
    # distinct logits with a realistic peaked softmax: a few tokens carry most of the mass.
    log_weights = -pool.double() ** 2 / 32
    gumbel = -torch.log(-torch.log(torch.rand(rows, len(pool), dtype=torch.float64)))
    return pool[(log_weights + gumbel).topk(v, dim=-1).indices]


def _threshold(logits_row, k):
    """A p whose threshold 1 - p lies halfway between two cumulative sums that differ by
    at least 1e-3, far beyond fp32 summation error; None if the row has no such step."""
    v = logits_row.numel()
    sorted_row = logits_row.double().sort().values
    kept = sorted_row >= sorted_row[v - k]
    probs = torch.softmax(sorted_row.masked_fill(~kept, float("-inf")), dim=0)
    cumulative = probs.cumsum(dim=0)
    candidates = torch.nonzero(kept & (probs >= 1e-3)).flatten()
    if len(candidates) == 0:
        return None
    cut = int(candidates[torch.randint(len(candidates), (1,))])
    low = float(cumulative[cut - 1]) if cut > 0 else 0.0
    return 1 - (low + float(cumulative[cut])) / 2


def _case(dtype, b, v):
    pool = _value_pool(dtype)
    k = torch.randint(1, v + 1, (b,), dtype=torch.int32)
    k[0] = v  # one row filtered by top-p alone
    logits = _distinct_logits(pool, b, v)
    p = torch.empty(b, dtype=torch.float32)
    for row in range(b):
        threshold = _threshold(logits[row], int(k[row]))
        while threshold is None:  # no usable step: draw this row again
            logits[row] = _distinct_logits(pool, 1, v)[0]
            threshold = _threshold(logits[row], int(k[row]))
        p[row] = threshold
    return [logits.to(dtype), p, k]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
