"""NumPy calls on a tensor's host copy, traced as the torch op they compute.

A reference may compute on the host: `np.cumsum(x.cpu().numpy(), axis=dim, dtype=np.float32)`
wrapped back with `torch.from_numpy` (public level1/5_cumsum does, to get a serial sum). The
trace would hold the result as a captured constant, which no kernel computes. While a trace
runs, `host_numpy_twins()` makes `Tensor.numpy()` return the data as a `HostCopy` (a plain
ndarray that remembers its tensor); a NumPy function in TWINS applied to one runs its torch
twin on the tensor instead (recorded like any op) and returns the result's HostCopy, and
`torch.from_numpy` of a HostCopy gives that tensor back. Anything else on a HostCopy is plain
NumPy, whose result remembers nothing: it still reaches the trace as a captured constant and
is refused as before. The evaluation runs the reference as written; only the trace changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

_TORCH_DTYPES = {np.dtype(np.float16): torch.float16, np.dtype(np.float32): torch.float32,
                 np.dtype(np.float64): torch.float64, np.dtype(np.int32): torch.int32,
                 np.dtype(np.int64): torch.int64}


def _scan(op: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor | None]:
    """np.cumsum / np.cumprod(a, axis=None, dtype=None): along `axis`, or over the flattened
    array; None (plain NumPy) for an `out=` or a dtype torch has no twin of."""
    def twin(t: torch.Tensor, axis: int | None = None, dtype: Any = None, out: Any = None) -> torch.Tensor | None:
        if out is not None:
            return None
        to = None if dtype is None else _TORCH_DTYPES.get(np.dtype(dtype))
        if dtype is not None and to is None:
            return None
        # the tensor's own dtype is torch's default result dtype: no explicit dtype, so the
        # lowering computes as it does for torch.cumsum(x) (float32 inside for half inputs)
        return op(t.reshape(-1) if axis is None else t, dim=0 if axis is None else axis,
                  dtype=None if to == t.dtype else to)
    return twin


# NumPy function -> its torch twin over the HostCopy's tensor (None: no twin for these arguments)
TWINS: dict[Callable[..., Any], Callable[..., torch.Tensor | None]] = {
    np.cumsum: _scan(torch.cumsum),
    np.cumprod: _scan(torch.cumprod),
}


class HostCopy(np.ndarray):
    """A tensor's data on the host, remembering the tensor (only the array `Tensor.numpy()`
    gave, or a twin's result: derived arrays remember nothing)."""

    tensor: torch.Tensor | None = None

    def __array_finalize__(self, obj: Any) -> None:
        self.tensor = None

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        twin = TWINS.get(func)
        if twin is not None and args and args[0] is self and self.tensor is not None:
            result = twin(self.tensor, *args[1:], **kwargs)
            if result is not None:
                return host_copy(result)
        return super().__array_function__(func, types, args, kwargs)

    # the method forms (x.numpy().cumsum(0)) go through the functions, so through the twins
    def cumsum(self, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
        return np.cumsum(self, axis=axis, dtype=dtype, out=out)

    def cumprod(self, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
        return np.cumprod(self, axis=axis, dtype=dtype, out=out)


def host_copy(t: torch.Tensor) -> HostCopy:
    view = _ORIGINAL_NUMPY(t).view(HostCopy)
    view.tensor = t
    return view


_ORIGINAL_NUMPY = torch.Tensor.numpy
_ORIGINAL_FROM_NUMPY = torch.from_numpy


def _from_numpy(a: Any) -> torch.Tensor:
    if isinstance(a, HostCopy) and a.tensor is not None:
        return a.tensor
    return _ORIGINAL_FROM_NUMPY(np.asarray(a) if isinstance(a, HostCopy) else a)


@contextmanager
def host_numpy_twins() -> Iterator[None]:
    """Inside the block, Tensor.numpy() gives HostCopy arrays and torch.from_numpy takes them back."""
    torch.Tensor.numpy = lambda self, *, force=False: host_copy(self)   # type: ignore[method-assign]
    torch.from_numpy = _from_numpy                                        # type: ignore[assignment]
    try:
        yield
    finally:
        torch.Tensor.numpy = _ORIGINAL_NUMPY                             # type: ignore[method-assign]
        torch.from_numpy = _ORIGINAL_FROM_NUMPY                          # type: ignore[assignment]
