"""References whose floating outputs only copy elements: their float64 truth is their eager output.

The truth of docs/evaluation.md is the reference run again with floating inputs promoted to
float64. For a reference made only of data movement (permute, cat, repeat_interleave, pad
with a representable value, gather, ...) every output element is an input element or an
exact constant, so that second run gives the eager output again, element for element, at
several times its cost: a float64 copy of a 268M-element fp16 tensor is 2 GB (public
level1/23_repeat_interleave: the truth was 69 of its 245 s of evaluation, issue 31).

`recorded_ops()` records the aten ops a forward dispatches (after composite ops decompose)
and any step it takes outside torch (`.numpy()`, `torch.from_numpy`, `.item()`, ...);
`copies_only()` says whether each is in COPY_OPS, or in CONSTANT_OPS with a fill value the
output dtype holds exactly. Ops with no floating result (index arithmetic, masks) are not
recorded: the float64 run computes them from the same values, so they come out the same.
Anything else (arithmetic, casts, reductions, an op not listed) keeps the float64 run.
`tests/bench/test_copy_only.py` checks every listed op against that run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

# aten ops (overload packets) whose floating outputs hold only elements of their floating
# inputs, unchanged: views, copies, gathers, concatenation, reordering, integer index
# arithmetic. A cast (_to_copy) is not here: a narrowing one rounds.
COPY_OPS = frozenset({
    "alias", "as_strided", "cat", "chunk", "clone", "contiguous", "copy_", "detach", "diagonal", "embedding",
    "expand", "flip", "gather", "index", "index_select", "lift_fresh", "lift_fresh_copy", "movedim", "narrow",
    "permute", "reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "repeat", "repeat_interleave",
    "replication_pad1d", "replication_pad2d", "replication_pad3d", "reshape", "roll", "select", "slice", "split",
    "split_with_sizes", "squeeze", "stack", "t", "take_along_dim", "transpose", "unbind", "unfold", "unsqueeze",
    "view", "_unsafe_view", "zeros", "zeros_like", "empty", "empty_like", "new_zeros", "new_empty", "arange",
})
# ops that also write one constant: a copy where the output dtype holds it exactly (0, ±1 and
# 0.5 do in every float type). The position of the constant among the op's arguments.
CONSTANT_OPS = {"constant_pad_nd": 2, "fill": 1, "fill_": 1, "full": 1, "new_full": 2, "full_like": 1,
                "masked_fill": 2, "masked_fill_": 2}


class _Recorder(TorchDispatchMode):
    def __init__(self, ops: set[str]) -> None:
        super().__init__()
        self.ops = ops

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if not any(isinstance(t, torch.Tensor) and t.is_floating_point() for t in tree_flatten(out)[0]):
            return out                 # integer and bool results (index arithmetic, masks) are exact in both runs
        name = func.overloadpacket.__name__
        if name in CONSTANT_OPS and not _holds_exactly(out, _argument(func, args, kwargs, CONSTANT_OPS[name])):
            name = f"{name} (an inexact fill value)"
        self.ops.add(name)
        return out


# Ways a forward computes outside torch, where no op is dispatched (public level1/5_cumsum:
# np.cumsum of x.numpy(), back through torch.from_numpy): each is recorded as a host step,
# which no table holds, so such a reference keeps its float64 run.
HOST_BRIDGES = ((torch.Tensor, "numpy"), (torch.Tensor, "tolist"), (torch.Tensor, "item"),
                (torch, "from_numpy"), (torch, "as_tensor"), (torch, "frombuffer"))


@contextmanager
def recorded_ops() -> Iterator[set[str]]:
    """The names of the aten ops dispatched inside the block (filled as they run), and a
    "host: ..." entry for each bridge out of torch the block used."""
    ops: set[str] = set()
    originals = [(owner, name, getattr(owner, name)) for owner, name in HOST_BRIDGES]
    for owner, name, real in originals:
        setattr(owner, name, _noting(real, f"host: {name}", ops))
    try:
        with _Recorder(ops):
            yield ops
    finally:
        for owner, name, real in originals:
            setattr(owner, name, real)


def _noting(real: Any, note: str, ops: set[str]) -> Any:
    def bridge(*args: Any, **kwargs: Any) -> Any:
        ops.add(note)
        return real(*args, **kwargs)
    return bridge


def copies_only(ops: set[str]) -> bool:
    """Every op recorded only moves elements (or writes a constant its output holds exactly)."""
    return bool(ops) and all(op in COPY_OPS or op in CONSTANT_OPS for op in ops)


def _argument(func: Any, args: tuple, kwargs: dict | None, position: int) -> Any:
    if position < len(args):
        return args[position]
    schema = func._schema.arguments
    name = schema[position].name if position < len(schema) else None
    if kwargs and name in kwargs:
        return kwargs[name]
    default = schema[position].default_value if position < len(schema) else None
    return 0 if default is None else default


def _holds_exactly(out: Any, value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            return False
        value = value.item()
    if not isinstance(out, torch.Tensor) or not out.is_floating_point():
        return True                    # an integer or bool output is compared exactly anyway
    if not isinstance(value, (int, float, bool)):
        return False
    return float(torch.tensor(float(value), dtype=out.dtype)) == float(value)
