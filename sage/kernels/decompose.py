"""Decompositions: composite aten operators written as simpler ones, in torch.

The compiler lowers a small set of primitive kinds (pointwise, reductions over axes,
scans, sorts, gathers and scatters, matrix products). Everything else the registry names a
decomposition for: a function with the aten operator's signature that computes the same
result with primitive ops. `trace_graph(..., decompose=True)` runs it under the recorder
instead of the operator, so the graph the compiler reads has only the primitives (the
same idea as Inductor's decomposition table). Each function says what torch computes,
not how a kernel should: precision choices (fp32 arithmetic for half inputs) are the
compiler's.

Index tensors that depend only on shapes (reflection, nearest-neighbour sources, the
output positions of a transposed convolution) are built with `arange` arithmetic, which
the compiler computes inside the kernel.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from sage.kernels.compact import is_compact
from sage.kernels.long_rows import chunk_of, reduce_in_chunks, split_long_row
from sage.kernels.unrolled_reduce import unrolled

F32 = torch.float32


def _dims(x: torch.Tensor, dim) -> list[int]:
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(x.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted(d % max(x.dim(), 1) for d in dims)


def _acc(x: torch.Tensor) -> torch.Tensor:
    """Half inputs are computed in float32 and rounded once, as torch's CPU kernels do."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


# -- softmax family and norms ---------------------------------------------------------------------
def softmax(x, dim, half_to_float=False):
    xf = _acc(x)
    e = torch.exp(xf - torch.amax(xf, dim, keepdim=True))
    out = e / torch.sum(e, dim, keepdim=True)
    return out if half_to_float else out.to(x.dtype)


def log_softmax(x, dim, half_to_float=False):
    xf = _acc(x)
    shifted = xf - torch.amax(xf, dim, keepdim=True)
    out = shifted - torch.log(torch.sum(torch.exp(shifted), dim, keepdim=True))
    return out if half_to_float else out.to(x.dtype)


def logsumexp(x, dim, keepdim=False):
    xf = _acc(x)
    m = torch.amax(xf, dim, keepdim=True)
    out = torch.log(torch.sum(torch.exp(xf - m), dim, keepdim=True)) + m
    if not keepdim:
        out = out.squeeze(_dims(x, dim))
    return out.to(x.dtype)


def _moments(xf: torch.Tensor, dims: list[int]):
    n = math.prod(xf.shape[d] for d in dims)
    mean = torch.sum(xf, dims, keepdim=True) * (1.0 / n)
    centred = xf - mean
    return mean, centred, torch.sum(centred * centred, dims, keepdim=True), n


def var(x, dim=None, *, correction=None, keepdim=False):
    dims = _dims(x, dim)
    _, _, ss, n = _moments(_acc(x), dims)
    c = 1 if correction is None else correction
    out = ss * (1.0 / max(n - c, 0)) if n - c > 0 else ss * float("nan")
    if not keepdim:
        out = out.squeeze(dims)
    return out.to(x.dtype)


def std(x, dim=None, *, correction=None, keepdim=False):
    return torch.sqrt(var(x, dim, correction=correction, keepdim=keepdim))


def native_layer_norm(x, normalized_shape, weight, bias, eps):
    dims = list(range(x.dim() - len(normalized_shape), x.dim()))
    xf = _acc(x)
    mean, centred, ss, n = _moments(xf, dims)
    rstd = torch.rsqrt(ss * (1.0 / n) + eps)
    y = centred * rstd
    if weight is not None:
        y = y * _acc(weight)
    if bias is not None:
        y = y + _acc(bias)
    return y.to(x.dtype), mean, rstd


def native_group_norm(x, weight, bias, n, c, hxw, group, eps):
    xf = _acc(x).reshape(n, group, c // group, hxw)
    mean, centred, ss, count = _moments(xf, [2, 3])
    rstd = torch.rsqrt(ss * (1.0 / count) + eps)
    y = centred * rstd
    if weight is not None:
        y = y * _acc(weight).reshape(1, group, c // group, 1)
    if bias is not None:
        y = y + _acc(bias).reshape(1, group, c // group, 1)
    return y.reshape(x.shape).to(x.dtype), mean.reshape(n, group), rstd.reshape(n, group)


def rms_norm(x, normalized_shape, weight=None, eps=None):
    dims = list(range(x.dim() - len(normalized_shape), x.dim()))
    xf = _acc(x)
    eps = torch.finfo(xf.dtype).eps if eps is None else eps
    y = xf * torch.rsqrt(torch.mean(xf * xf, dims, keepdim=True) + eps)
    if weight is not None:
        y = y * _acc(weight)
    return y.to(x.dtype)


def _row_beats_a_copy(row_bytes: int) -> bool:
    """Streaming a row of `row_bytes` costs less than the fixed cost of one GM copy (the
    preset's GM->UB fit: a copy costs the streaming time of K bytes on top of its own)."""
    from sage.kernels.target import target_for
    from sage.npu.hardware import load_preset

    return row_bytes <= load_preset(target_for().preset).transfer.gm_to_ub.k_bytes


def nll_loss_forward(logp, target, weight, reduction, ignore_index):
    """Rows shorter than one copy's fixed cost pick their target by comparing the class index
    with it over the whole row (one streaming pass, the weights too: one launch), instead of
    a gather of one element a row and an index_select of the weights, one tiny copy each."""
    keep = target != ignore_index
    if logp.dim() == 2 and _row_beats_a_copy(logp.shape[1] * logp.element_size()):
        hit = torch.arange(logp.shape[1]) == target.unsqueeze(1)
        zero = torch.zeros((), dtype=logp.dtype)
        picked = -torch.where(hit, logp, zero).sum(1)
        w = torch.ones_like(picked) if weight is None else torch.where(hit, weight, zero).sum(1)
    else:
        safe = torch.where(keep, target, torch.zeros_like(target))
        picked = -torch.gather(logp, 1, safe.unsqueeze(1)).squeeze(1)
        w = torch.ones_like(picked) if weight is None else weight[safe]
    w = torch.where(keep, w, torch.zeros_like(w))
    loss = picked * w
    if reduction == 0:
        return loss, torch.zeros((), dtype=logp.dtype)
    total = torch.sum(w)
    out = torch.sum(loss)
    if reduction == 1:
        out = out / total
    return out, total


# -- matrix products --------------------------------------------------------------------------------
def addmm(bias, a, b, *, beta=1, alpha=1):
    prod = torch.mm(a, b)
    if alpha != 1:
        prod = prod * alpha
    return prod + (bias if beta == 1 else bias * beta)


def baddbmm(bias, a, b, *, beta=1, alpha=1):
    prod = torch.bmm(a, b)
    if alpha != 1:
        prod = prod * alpha
    return prod + (bias if beta == 1 else bias * beta)


def mv(a, v):
    return torch.mm(a, v.unsqueeze(1)).squeeze(1)


def dot(a, b):
    return torch.mm(a.unsqueeze(0), b.unsqueeze(1)).reshape(())


# -- data movement ----------------------------------------------------------------------------------
def cat(tensors, dim=0):
    tensors = [t for t in tensors if not (t.dim() == 1 and t.numel() == 0)]
    dim = dim % tensors[0].dim()
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    shape = list(tensors[0].shape)
    shape[dim] = sum(t.shape[dim] for t in tensors)
    out = torch.empty(shape, dtype=dtype)
    start = 0
    for t in tensors:
        out.narrow(dim, start, t.shape[dim]).copy_(t)
        start += t.shape[dim]
    return out


def stack(tensors, dim=0):
    return cat([t.unsqueeze(dim) for t in tensors], dim)


# A border slab is worth writing as its own piece when it is one run of memory or its runs
# are at least one 32-byte block: a one-column slab of a 2-D padding is thousands of 4-byte
# strided writes, slower than filling the whole output under the copy (conv's padding).
_SLAB_RUN_BYTES = 32


def constant_pad_nd(x, pad, value=0):
    """The output in disjoint pieces where the border slabs are long runs: per padded axis,
    the slabs inside the axes already done are filled, then the source is copied into what
    is left; no piece is written twice, so the compiler runs them as one launch. Otherwise
    the whole output is filled and the source copied over it (two launches)."""
    shape = list(x.shape)
    src = x
    for i in range(len(pad) // 2):
        d = x.dim() - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        shape[d] += lo + hi
        if lo < 0:
            src = src.narrow(d, -lo, src.shape[d] + lo)
        if hi < 0:
            src = src.narrow(d, 0, src.shape[d] + hi)
    widths = [(x.dim() - 1 - i, max(pad[2 * i], 0), max(pad[2 * i + 1], 0)) for i in range(len(pad) // 2)]
    if all(_long_runs(shape, d, w, x.element_size()) for d, lo, hi in widths for w in (lo, hi) if w):
        out = torch.empty(shape, dtype=x.dtype)
        inner = out
        for d, lo, hi in widths:
            if lo:
                inner.narrow(d, 0, lo).fill_(value)
            if hi:
                inner.narrow(d, inner.shape[d] - hi, hi).fill_(value)
            inner = inner.narrow(d, lo, src.shape[d])
        inner.copy_(src)
        return out
    out = torch.full(shape, value, dtype=x.dtype)
    view = out
    for d, lo, _ in widths:
        view = view.narrow(d, lo, src.shape[d])
    view.copy_(src)
    return out


def _long_runs(shape: list[int], d: int, width: int, itemsize: int) -> bool:
    """A slab `width` wide on axis d of a dense `shape` is one run or runs of >= 32 bytes."""
    return math.prod(shape[:d]) == 1 or width * math.prod(shape[d + 1:]) * itemsize >= _SLAB_RUN_BYTES


def _pad_index(size: int, lo: int, hi: int, mode: str) -> torch.Tensor:
    """Source index of each padded position along one axis (reflect / replicate)."""
    i = torch.arange(size + lo + hi) - lo
    if mode == "replicate":
        return torch.clamp(i, 0, size - 1)
    period = 2 * (size - 1)
    r = torch.remainder(i, period)
    return torch.where(r < size, r, period - r)


def _pad_by_index(x, pad, mode):
    out = x
    for i in range(len(pad) // 2):
        d = x.dim() - 1 - i
        out = torch.index_select(out, d, _pad_index(x.shape[d], pad[2 * i], pad[2 * i + 1], mode))
    return out


def reflection_pad(x, pad):
    return _pad_by_index(x, pad, "reflect")


def replication_pad(x, pad):
    return _pad_by_index(x, pad, "replicate")


def repeat(x, repeats):
    lead = len(repeats) - x.dim()
    src = x.reshape((1,) * lead + tuple(x.shape))
    expanded = []
    for r, d in zip(repeats, src.shape):
        expanded += [r, d]
    view = src.reshape([v for pair in zip([1] * src.dim(), src.shape) for v in pair])
    return view.expand(expanded).clone().reshape([r * d for r, d in zip(repeats, src.shape)])


def flip(x, dims):
    out = x
    for d in _dims(x, dims):
        out = torch.index_select(out, d, torch.arange(x.shape[d] - 1, -1, -1))
    return out


def roll(x, shifts, dims=()):
    if not dims:
        return roll(x.reshape(-1), shifts, [0]).reshape(x.shape)
    out = x
    for s, d in zip(shifts if isinstance(shifts, Sequence) else [shifts], dims):
        n = x.shape[d]
        out = torch.index_select(out, d, torch.remainder(torch.arange(n) - s, n))
    return out


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return torch.index_select(weight, 0, indices.reshape(-1)).reshape(*indices.shape, weight.shape[1])


def _linear_index(idx, sizes):
    """The row behind index tensors over axes of `sizes` (negative indices wrapped per axis);
    the first axis's index starts it, with no product of zeros to trace and launch."""
    linear = None
    for t, n in zip(idx, sizes):
        wrapped = torch.where(t < 0, t + n, t)
        linear = wrapped if linear is None else linear * n + wrapped
    return linear


def index(x, indices):
    """Advanced indexing by integer tensors on consecutive leading-or-any axes: one linear
    index over the indexed axes, then a gather of the rows behind them."""
    dims = [i for i, t in enumerate(indices) if t is not None]
    if any(indices[d].dtype == torch.bool for d in dims) or dims != list(range(dims[0], dims[-1] + 1)):
        return NotImplemented
    idx = [indices[d].to(torch.int64) for d in dims]
    idx = torch.broadcast_tensors(*idx)
    sizes = [x.shape[d] for d in dims]
    linear = _linear_index(idx, sizes)
    lead, tail = list(x.shape[:dims[0]]), list(x.shape[dims[-1] + 1:])
    flat = x.reshape(*lead, math.prod(sizes), *tail)
    picked = torch.index_select(flat, len(lead), linear.reshape(-1))
    return picked.reshape(*lead, *idx[0].shape, *tail)


def index_put(x, indices, values, accumulate=False):
    dims = [i for i, t in enumerate(indices) if t is not None]
    if any(indices[d].dtype == torch.bool for d in dims) or dims != list(range(len(dims))):
        return NotImplemented
    out = x.clone()       # a pointwise copy, which fuses with what computes x (a kernel's own copy would not)
    if _row_put(x, indices, values):
        return out.index_put_(indices, values, accumulate)
    return index_put_(out, indices, values, accumulate)


def _row_put(x, indices, values) -> bool:
    """index_put along dim 0 by one 1-d int64 index, values already [C, *x.shape[1:]] (or one
    element) in x's dtype: the row-scatter kernel takes the call as it is and wraps negative
    indices itself, so it is left undecomposed (the index arithmetic below, which torch's
    index_copy_ needs, is a launch of its own)."""
    return (len(indices) == 1 and indices[0] is not None and indices[0].dtype == torch.int64
            and indices[0].dim() == 1 and values.dtype == x.dtype and x.dim() >= 1 and x.is_contiguous()
            and (values.numel() == 1 or tuple(values.shape) == (indices[0].shape[0], *x.shape[1:])))


def index_put_(x, indices, values, accumulate=False):
    dims = [i for i, t in enumerate(indices) if t is not None]
    if any(indices[d].dtype == torch.bool for d in dims) or dims != list(range(len(dims))) or not x.is_contiguous():
        return NotImplemented
    if _row_put(x, indices, values):
        return NotImplemented
    idx = torch.broadcast_tensors(*[indices[d].to(torch.int64) for d in dims])
    sizes = [x.shape[d] for d in dims]
    linear = _linear_index(idx, sizes)
    tail = list(x.shape[len(dims):])
    rows = linear.reshape(-1)
    flat = x.view(math.prod(sizes), *tail)
    src = values.to(x.dtype).expand(*idx[0].shape, *tail).reshape(rows.shape[0], *tail)
    if accumulate:
        flat.index_add_(0, rows, src)
    else:
        flat.index_copy_(0, rows, src)
    return x


def repeat_interleave(x, repeats=None, dim=None, *, output_size=None):
    if not isinstance(repeats, int) or isinstance(repeats, bool):
        return NotImplemented
    if dim is None:
        x, dim = x.reshape(-1), 0
    dim %= x.dim()
    shape = list(x.shape)
    view = x.unsqueeze(dim + 1)
    target = shape[:dim + 1] + [repeats] + shape[dim + 1:]
    shape[dim] *= repeats
    return view.expand(target).clone().reshape(shape)


def triu(x, diagonal=0):
    rows, cols = x.shape[-2], x.shape[-1]
    keep = torch.arange(cols).unsqueeze(0) - torch.arange(rows).unsqueeze(1) >= diagonal
    return torch.where(keep, x, torch.zeros((), dtype=x.dtype))


def tril(x, diagonal=0):
    rows, cols = x.shape[-2], x.shape[-1]
    keep = torch.arange(cols).unsqueeze(0) - torch.arange(rows).unsqueeze(1) <= diagonal
    return torch.where(keep, x, torch.zeros((), dtype=x.dtype))


# -- pooling and interpolation ----------------------------------------------------------------------
def _triple(v, n: int) -> list[int]:
    """An int or a 1- or n-element list, as n ints (torch's _ntuple)."""
    if isinstance(v, (list, tuple)):
        return list(v) * n if len(v) == 1 else list(v)
    return [v] * n


def _spatial_rank(x, kernel_size) -> int:
    """Spatial axes of a pooling: the kernel's length when it names them all (an unbatched
    [C, D, H, W] input to avg_pool3d has 3, not 2), else from the input's rank."""
    if isinstance(kernel_size, (list, tuple)) and len(kernel_size) > 1:
        return len(kernel_size)
    return 3 if x.dim() >= 5 else 2 if x.dim() >= 4 else 1


def upsample_nearest(x, output_size, *scales):
    """out[..., i] = x[..., floor(i * in / out)] along each spatial axis."""
    out = x
    n = len(output_size)
    for i, size in enumerate(output_size):
        d = x.dim() - n + i
        src = x.shape[d]
        if size % src == 0:
            k = size // src
            shape = list(out.shape)
            view = out.unsqueeze(d + 1).expand(*shape[:d + 1], k, *shape[d + 1:])
            shape[d] = size
            out = view.reshape(shape)
        else:
            idx = torch.div(torch.arange(size) * src, size, rounding_mode="floor")
            out = torch.index_select(out, d, idx)
    return out


def upsample_bilinear2d(x, output_size, align_corners, scales_h=None, scales_w=None):
    out = _acc(x)
    for i, size in enumerate(output_size):
        d = x.dim() - 2 + i
        src = x.shape[d]
        pos = torch.arange(size, dtype=F32)
        if align_corners:
            coord = pos * ((src - 1) / (size - 1) if size > 1 else 0.0)
        else:
            coord = torch.clamp((pos + 0.5) * (src / size) - 0.5, min=0.0)
        lo = torch.clamp(torch.floor(coord), max=src - 1).to(torch.int64)
        hi = torch.clamp(lo + 1, max=src - 1)
        w = coord - lo.to(F32)
        shape = [1] * out.dim()
        shape[d] = size
        a, b = torch.index_select(out, d, lo), torch.index_select(out, d, hi)
        out = a + (b - a) * w.reshape(shape)
    return out.to(x.dtype)


# -- convolution ------------------------------------------------------------------------------------
def convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups, *flags):
    n = weight.dim() - 2
    stride, padding, dilation = _triple(stride, n), _triple(padding, n), _triple(dilation, n)
    whole = not is_compact()            # compact: no per-geometry direct kernel (sage/kernels/compact.py)
    if transposed:
        return _conv_transposed(x, weight, bias, stride, padding, dilation, _triple(output_padding, n), groups)
    if groups == x.shape[1] and weight.shape[1] == 1 and weight.shape[0] == groups:
        if whole and _direct_depthwise(x, weight, bias, stride, padding, dilation):
            return NotImplemented        # kept whole: one vector-core kernel (library/conv_depthwise.py)
        if not whole:                    # one view per tap is text per window geometry: im2col instead
            return _conv_grouped(x, weight, bias, stride, padding, dilation, groups)
        return _conv_depthwise(x, weight, bias, stride, padding, dilation)
    if groups != 1:
        return _conv_grouped(x, weight, bias, stride, padding, dilation, groups)
    if whole and _direct_gemm(x, weight, bias, stride, padding, dilation):
        return NotImplemented            # kept whole: one implicit-GEMM launch (library/conv_gemm.py)
    return _conv_im2col(x, weight, bias, stride, padding, dilation)


@dataclass(frozen=True)
class ConvParams:
    kind: str                        # "depthwise2d", "gemm" (groups = 1) or "other"
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]


def conv_params(scalars: list, x_shape, w_shape) -> ConvParams | None:
    """aten.convolution's Python arguments as recorded (the last six: stride, padding,
    dilation, transposed, output_padding, groups; a None bias comes before them)."""
    if len(scalars) < 6:
        return None
    stride, padding, dilation, transposed, _, groups = scalars[-6:]
    n = len(w_shape) - 2
    st, pa, di = (tuple(_triple(v, n)) for v in (stride, padding, dilation))
    depthwise = (not transposed and n == 2 and groups == x_shape[1] and w_shape[1] == 1 and w_shape[0] == groups)
    plain = not transposed and groups == 1
    return ConvParams("depthwise2d" if depthwise else "gemm" if plain else "other", st, pa, di)


def _direct_depthwise(x, weight, bias, stride, padding, dilation) -> bool:
    """The vector-core kernel takes this depthwise convolution (dtypes, UB fit, padding)."""
    from sage.kernels.library.conv_depthwise import DepthwiseSpec, supported

    if x.dim() != 4 or (bias is not None and bias.dtype != x.dtype) or weight.dtype != x.dtype \
            or not _plain(x, weight, bias):
        return False
    spec = DepthwiseSpec(name="probe", batch=x.shape[0], channels=x.shape[1], h=x.shape[2], w=x.shape[3],
                         kh=weight.shape[2], kw=weight.shape[3], stride=tuple(stride), padding=tuple(padding),
                         dilation=tuple(dilation), dtype=str(x.dtype).removeprefix("torch."), bias=bias is not None)
    return supported(spec)


def _direct_gemm(x, weight, bias, stride, padding, dilation) -> bool:
    """The implicit-GEMM kernel takes this convolution (1-3 spatial dims, dtypes, sizes)."""
    from sage.kernels.library.conv_gemm import supported

    spec = gemm_spec("probe", x.shape, weight.shape, stride, padding, dilation,
                     str(x.dtype).removeprefix("torch."), bias is not None)
    return (spec is not None and weight.dtype == x.dtype and (bias is None or bias.dtype == x.dtype)
            and _plain(x, weight, bias) and supported(spec))


def _plain(*tensors) -> bool:
    """Dense tensors at the start of their storage: what the direct kernels read (lower_conv.py)."""
    return all(t is None or (t.is_contiguous() and t.storage_offset() == 0) for t in tensors)


def gemm_spec(name: str, x_shape, w_shape, stride, padding, dilation, dtype: str, bias: bool, **names):
    """The ConvSpec of an N-d convolution (N = 1..3; missing leading spatial dims are size 1)."""
    from sage.kernels.library.conv_gemm import ConvSpec

    n = len(w_shape) - 2
    if not 1 <= n <= 3 or len(x_shape) != n + 2:
        return None
    lead = 3 - n

    def three(v, fill):
        return (fill,) * lead + tuple(int(e) for e in v)

    return ConvSpec(name=name, batch=int(x_shape[0]), cin=int(x_shape[1]), cout=int(w_shape[0]),
                    size=three(x_shape[2:], 1), kernel=three(w_shape[2:], 1), stride=three(stride, 1),
                    padding=three(padding, 0), dilation=three(dilation, 1), dtype=dtype, bias=bias, **names)


def _padded(x, kernel, stride, padding, dilation):
    """x zero-padded on its spatial axes, dense, and the output length along each of them."""
    if any(padding):
        pad = []
        for p in reversed(padding):
            pad += [p, p]
        x = constant_pad_nd(x, pad, 0.0)
    x = x.contiguous()
    out = [(s - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i, s in enumerate(x.shape[2:])]
    return x, out


def _conv_im2col(x, weight, bias, stride, padding, dilation):
    n = weight.dim() - 2
    kernel = list(weight.shape[2:])
    x, out = _padded(x, kernel, stride, padding, dilation)
    batch, cin = x.shape[0], x.shape[1]
    st = x.stride()
    # cols[b, c, k..., p...] = x[b, c, p * stride + k * dilation]: one strided view, one copy
    window = x.as_strided([batch, cin, *kernel, *out],
                          [st[0], st[1], *(st[2 + i] * dilation[i] for i in range(n)),
                           *(st[2 + i] * stride[i] for i in range(n))], x.storage_offset())
    cols = window.reshape(batch, cin * math.prod(kernel), math.prod(out))
    w = weight.reshape(weight.shape[0], -1)
    y = torch.bmm(w.unsqueeze(0).expand(batch, *w.shape), cols)
    if bias is not None:
        y = y + bias.reshape(1, -1, 1)
    return y.reshape(batch, weight.shape[0], *out)


def _conv_grouped(x, weight, bias, stride, padding, dilation, groups):
    """A grouped convolution as one batched product over (batch, group): the im2col of each
    group's input channels against that group's filters."""
    n = weight.dim() - 2
    kernel = list(weight.shape[2:])
    x, out = _padded(x, kernel, stride, padding, dilation)
    batch, cin_g, cout_g = x.shape[0], x.shape[1] // groups, weight.shape[0] // groups
    st = x.stride()
    window = x.as_strided([batch, groups, cin_g, *kernel, *out],
                          [st[0], st[1] * cin_g, st[1], *(st[2 + i] * dilation[i] for i in range(n)),
                           *(st[2 + i] * stride[i] for i in range(n))], x.storage_offset())
    cols = window.reshape(batch * groups, cin_g * math.prod(kernel), math.prod(out))
    w = weight.reshape(1, groups, cout_g, -1).expand(batch, groups, cout_g, cin_g * math.prod(kernel))
    y = torch.bmm(w.reshape(batch * groups, cout_g, -1), cols).reshape(batch, groups * cout_g, math.prod(out))
    if bias is not None:
        y = y + bias.reshape(1, -1, 1)
    return y.reshape(batch, weight.shape[0], *out)


def _windows(x, kernel, stride, padding, dilation, fill):
    """Every window offset as one strided view of the (padded) input, and the output shape."""
    n = len(kernel)
    if any(padding):
        pad = []
        for p in reversed(padding):
            pad += [p, p]
        x = constant_pad_nd(x, pad, fill)
    spatial = x.shape[-n:]
    out = [(s - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i, s in enumerate(spatial)]
    views = []
    for offs in itertools.product(*(range(k) for k in kernel)):
        v = x
        for i, o in enumerate(offs):
            d = x.dim() - n + i
            v = v.narrow(d, o * dilation[i], (out[i] - 1) * stride[i] + 1)
            if stride[i] > 1:
                v = v.unfold(d, 1, stride[i]).squeeze(-1)
        views.append(v)
    return views, out


def _conv_depthwise(x, weight, bias, stride, padding, dilation):
    n = weight.dim() - 2
    views, _ = _windows(_acc(x), list(weight.shape[2:]), stride, padding, dilation, 0.0)
    w = _acc(weight).reshape(weight.shape[0], -1)
    total = None
    for k, v in enumerate(views):
        term = v * w[:, k].reshape((1, -1) + (1,) * n)
        total = term if total is None else total + term
    if bias is not None:
        total = total + _acc(bias).reshape((1, -1) + (1,) * n)
    return total.to(x.dtype)


def _conv_transposed(x, weight, bias, stride, padding, dilation, output_padding, groups):
    if groups != 1 or any(d != 1 for d in dilation):
        return NotImplemented
    n = weight.dim() - 2
    spatial = x.shape[2:]
    k = weight.shape[2:]
    # Zero-insert the input (stride), pad by k-1-p (plus output_padding at the end), then a
    # plain convolution with the kernel flipped and its channel axes swapped.
    dil_shape = [(s - 1) * st + 1 for s, st in zip(spatial, stride)]
    z = torch.zeros(*x.shape[:2], *dil_shape, dtype=x.dtype)
    view = z
    for i, st in enumerate(stride):
        if st > 1:
            view = view.unfold(2 + i, 1, st).squeeze(-1)
    view.copy_(x)
    pad = []
    for i in reversed(range(n)):
        lo = k[i] - 1 - padding[i]
        pad += [lo, lo + output_padding[i]]
    zp = constant_pad_nd(z, pad, 0.0)
    # Every spatial axis flipped is the flattened window reversed: one gather along the last
    # axis (the lowering writes gathers along the last axis; an inner axis it does not).
    w = flip(weight.reshape(*weight.shape[:2], -1), [2]).reshape(weight.shape).transpose(0, 1)
    return _conv_im2col(zp, w, bias, [1] * n, [0] * n, [1] * n)


# -- reductions the compiler takes in two steps ----------------------------------------------------
def _runs(x: torch.Tensor, dims: list[int]) -> list[list[int]]:
    """The reduced axes grouped into runs that are adjacent in memory, innermost run first."""
    order = sorted((d for d in range(x.dim()) if x.shape[d] > 1), key=lambda d: x.stride(d))
    runs: list[list[int]] = []
    prev = None
    for d in order:
        if d in dims:
            if runs and prev in runs[-1]:
                runs[-1].append(d)
            else:
                runs.append([d])
        prev = d
    return runs


def _split_reduce(fn, x, dims, keepdim, **kw):
    """A reduction over axes that are not one run in memory, as one reduction per run (the
    innermost first); a reduction of everything over many elements, as rows then their sums."""
    rank = x.dim()
    dims = _dims(x, dims)
    runs = _runs(x, dims)
    if len(runs) <= 1:
        short = unrolled(fn, x, dims, keepdim)
        if short is not NotImplemented:
            return short
        if len(dims) == rank and rank and x.numel() > 16384 and x.is_contiguous():
            cols = chunk_of(x.numel(), 4096, minimum=256)
            if cols is not None:
                return reduce_in_chunks(fn, x, rank, cols, keepdim, **kw)
        return split_long_row(fn, x, dims, keepdim, **kw)
    half = x.dtype in (torch.float16, torch.bfloat16) and fn is torch.sum
    out = x.float() if half else x         # partial sums stay in float32, as torch accumulates
    for run in runs:
        out = fn(out, run, keepdim=True, **kw)
        kw = {}
    out = out.to(x.dtype) if half else out
    return out if keepdim else out.squeeze(dims)


def sum_(x, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        x = x.to(dtype)
    return _split_reduce(torch.sum, x, dim, keepdim)


def amax(x, dim=(), keepdim=False):
    return _split_reduce(torch.amax, x, dim, keepdim)


def amin(x, dim=(), keepdim=False):
    return _split_reduce(torch.amin, x, dim, keepdim)


def mean(x, dim=None, keepdim=False, *, dtype=None):
    dims = _dims(x, dim)
    n = math.prod(x.shape[d] for d in dims)
    total = sum_(x, dims, keepdim, dtype=dtype)
    if total is NotImplemented:
        return NotImplemented
    return total * (1.0 / n) if n else total
