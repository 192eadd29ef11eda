"""The reference's selections break ties toward the lower index.

torch leaves the order of equal keys unspecified for `topk` and for `sort(stable=False)`, and
its CPU kernels pick them by the internals of `std::nth_element` / `std::partial_sort`: on
public level2/7 (moe_gating_top_k_softmax, a softmax over bf16 logits, where equal logits give
equal probabilities) torch's topk indices kept the lower of two tied experts in some rows and
the higher in others, so a kernel that selects the same values failed on the indices. Both
are answers torch allows; the reference has to be one fixed answer. Under `stable_selection`
a `topk` is a stable sort's first k (equal keys in index order, so the lower index is
selected first, largest or smallest) and every `sort` is stable: the choice a sort-based
kernel, and torch's own `stable=True`, make. NaN stays the largest key, as in both ops.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from sage.kernels import extension_decomposition

aten = torch.ops.aten


def _topk(x: torch.Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple:  # noqa: A002
    # A row whose k + 1 first keys are distinct has one answer, torch's own; only the rows
    # with equal keys there are sorted whole (stably). On public level1/9's largest cases
    # (75 M and 134 M elements) sorting every row took 5.5 and 4.9 s against 0.3 s for torch's
    # topk; sorting the tied rows takes 1.2 s for the float32 one and still 5.3 s for the
    # float16 one, whose 128 largest of 16,384 half values tie in most rows.
    n = x.shape[dim]
    values, indices = aten.topk.default(x, min(k + 1, n), dim, largest, True)
    v, i = values.movedim(dim, -1), indices.movedim(dim, -1)
    tied = ((v[..., 1:] == v[..., :-1]) | (v[..., 1:].isnan() & v[..., :-1].isnan())).any(-1)
    v, i = v[..., :k].contiguous(), i[..., :k].contiguous()
    if tied.any():
        rows = x.movedim(dim, -1)[tied]                       # [tied rows, n]
        sv, si = aten.sort.stable(rows, stable=True, dim=-1, descending=largest)
        v[tied], i[tied] = sv[..., :k], si[..., :k]
    return v.movedim(-1, dim).contiguous(), i.movedim(-1, dim).contiguous()


def _sort(x: torch.Tensor, dim: int = -1, descending: bool = False, *, stable: bool | None = None) -> tuple:
    """aten.sort.default (dim, descending positional) and aten.sort.stable (all keywords)."""
    return aten.sort.stable(x, stable=True, dim=dim, descending=descending)


_STABLE = {aten.topk.default: _topk, aten.sort.default: _sort, aten.sort.stable: _sort}


class _StableSelection(TorchDispatchMode):
    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        # inside this method the mode is off: the replacements call torch's own kernels; a
        # torch_npu stand-in (one custom op) runs its body with the mode back on, so the
        # selections inside it are stable too
        body = extension_decomposition(func._schema.name) if func.namespace != "aten" else None
        if body is not None:
            with self:
                return body(*args, **(kwargs or {}))
        impl = _STABLE.get(func)
        if impl is None or args[0].dim() == 0:      # a 0-d tensor has no order to choose
            return func(*args, **(kwargs or {}))
        return impl(*args, **(kwargs or {}))


@contextlib.contextmanager
def stable_selection() -> Iterator[None]:
    with _StableSelection():
        yield
