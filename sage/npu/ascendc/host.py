"""Host side: GM handles (metadata only), output allocation and kernel launches.

``forward`` receives its tensors as ``GmHandle`` objects. A handle exposes shape, dtype and
contiguous re-views, never data: every way of reading data on the host raises, so all
computation happens in kernels.
"""

from __future__ import annotations

import math

import numpy as np

from sage.npu import dtypes
from sage.npu.ascendc import handles
from sage.npu.errors import LaunchError
from sage.npu.pages import pages_for
from sage.npu.sim import core as core_mod
from sage.npu.sim.session import GmBuffer, Session

_session: Session | None = None


def current_session(what: str) -> Session:
    if _session is None:
        raise LaunchError(f"{what} needs a running simulation (sage.npu.execute.run_kernel_source)")
    return _session


def set_session(session: Session | None) -> None:
    global _session
    _session = session


def _shape_arg(shape) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


class GmHandle:
    """A tensor in GM as the host sees it: ``shape``, ``dtype``, ``numel()``, ``view``/``reshape``/``flatten``."""

    __slots__ = ("_buf", "_shape")
    API = ("shape", "dtype", "ndim", "nbytes", "dim", "numel", "size", "element_size", "view", "reshape",
           "flatten", "__len__", "__getitem__", "__setitem__", "__iter__", "__bool__", "__float__", "__int__",
           "__index__", "item", "tolist", "numpy", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__",
           "__rmul__", "__truediv__", "__rtruediv__", "__lt__", "__le__", "__gt__", "__ge__", "__neg__",
           "__matmul__")

    def __init__(self, buf: GmBuffer, shape: tuple[int, ...]):
        self._buf = buf
        self._shape = shape

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._buf.dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    def numel(self) -> int:
        return math.prod(self._shape)

    def size(self, dim: int | None = None):
        return self._shape if dim is None else self._shape[dim]

    def element_size(self) -> int:
        return self._buf.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self._buf.dtype.itemsize

    def view(self, *shape) -> GmHandle:
        """A new shape over the same contiguous data (one dimension may be -1)."""
        shape = _shape_arg(shape)
        n = self.numel()
        if shape.count(-1) > 1:
            raise LaunchError(f"view{shape}: only one dimension can be -1")
        if -1 in shape:
            known = math.prod(s for s in shape if s != -1)
            if known == 0 or n % known:
                raise LaunchError(f"view{shape} does not fit {n} elements of shape {self._shape}")
            shape = tuple(n // known if s == -1 else s for s in shape)
        if math.prod(shape) != n:
            raise LaunchError(f"view{shape} has {math.prod(shape)} elements, the tensor has {n} (shape {self._shape})")
        return GmHandle(self._buf, shape)

    reshape = view

    def flatten(self) -> GmHandle:
        return GmHandle(self._buf, (self.numel(),))

    def __len__(self) -> int:
        return self._shape[0] if self._shape else 0

    def __repr__(self) -> str:
        return f"GmHandle(shape={self._shape}, dtype={self._buf.dtype.name})"

    def _no_data(self, *args, **kwargs):
        raise LaunchError("host code cannot read tensor data: GM handles carry only shape and dtype; "
                          "do the computation in a kernel")

    __getitem__ = __setitem__ = __iter__ = __array__ = __bool__ = __float__ = __int__ = __index__ = _no_data
    item = tolist = numpy = _no_data
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _no_data
    __lt__ = __le__ = __gt__ = __ge__ = __neg__ = __matmul__ = _no_data


def empty(shape, dtype=dtypes.float32) -> GmHandle:
    """A fresh GM allocation (contents are garbage until a kernel writes them)."""
    session = current_session("empty()")
    if core_mod._current is not None:
        raise LaunchError("empty()/empty_like() allocate GM on the host side (in forward), not inside a kernel")
    shape = _shape_arg(shape if isinstance(shape, (tuple, list)) else (shape,))
    dt = dtypes.as_dtype(dtype)
    with pages_for(math.prod(shape) * dt.itemsize):
        data = np.empty(math.prod(shape), dtype=dt)
    data.view(np.uint8)[:] = 0xFF  # NaN / -1 everywhere: an unwritten output cannot pass for zeros
    return GmHandle(session.allocate(data, is_input=False), shape)


def empty_like(x: GmHandle, dtype=None) -> GmHandle:
    """A fresh GM allocation of x's shape (and dtype unless given)."""
    return empty(x.shape, x.dtype if dtype is None else dtype)


# A data-dependent output size (nonzero, masked_select, unique, repeat_interleave with tensor
# repeats) needs a count from the device before the host can allocate the output: torch_npu
# reads it back with a device->host sync, and so may forward(). Each read-back is charged as a
# sync step of the eager timeline (the preset's `launch.sync_us`, after the device drained), and
# a forward() may read back only this many scalars in all, so a host side cannot compute the
# operator from read-back data instead of in a kernel.
MAX_READ_BACK_SCALARS = 8


def read_back(x: GmHandle, count: int = 1) -> list:
    """First `count` elements of x on the host, for a data-dependent output size; one device->host sync, 8 scalars per forward() at most.

    A kernel counts, the host reads the count back and allocates the output."""
    session = current_session("read_back()")
    if core_mod._current is not None:
        raise LaunchError("read_back() is a host call (in forward), not a kernel API")
    x = handles.unwrap(x) if handles.is_handle(x) else x
    if not isinstance(x, GmHandle):
        raise LaunchError(f"read_back() reads a GM tensor, not a {type(x).__name__}")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= x.numel():
        raise LaunchError(f"read_back(x, count): count must be an int in 1..{x.numel()} (x has shape {x.shape})")
    used = sum(session.trace.read_backs)
    if used + count > MAX_READ_BACK_SCALARS:
        raise LaunchError(f"read_back(): {used + count} scalars read back in this forward(), more than the "
                          f"{MAX_READ_BACK_SCALARS} allowed (read back counts and sizes, compute in kernels)")
    session.trace.syncs.append(len(session.trace.launches))
    session.trace.read_backs.append(count)
    return [v.item() for v in x._buf.data[:count]]


class Kernel:
    """A function marked ``@kernel`` (Ascend C's ``extern "C" __global__ __aicore__``).

    Launch it with ``kern[block_dim](*args)``, like ``kern<<<block_dim>>>(args)``.
    """

    API = ("__getitem__", "__call__")

    def __init__(self, fn):
        self.fn = fn
        self.name = getattr(fn, "__name__", "kernel")

    def __getitem__(self, block_dim) -> _Launch:
        return _Launch(self, block_dim)

    def __call__(self, *args, **kwargs):
        raise LaunchError(f"launch a kernel with {self.name}[block_dim](...), not {self.name}(...)")


class _Launch:
    API = ("__call__",)

    def __init__(self, kern: Kernel, block_dim):
        self.kern, self.block_dim = kern, block_dim

    def __call__(self, *args, **kwargs) -> None:
        session = current_session(f"{self.kern.name}[...]()")
        if core_mod._current is not None:
            raise LaunchError("a kernel cannot launch another kernel; launch both from forward()")
        from sage.npu.ascendc import handles

        session.launch(self.kern.fn, self.kern.name, self.block_dim, args, kwargs, on_block_end=handles.end_block)


def kernel(fn) -> Kernel:
    """Decorator for a kernel function (extern "C" __global__ __aicore__); launch with kern[block_dim](args)."""
    return Kernel(fn)
