"""Decompositions of the indexed operators into the primitives the compiler lowers
(index_add, index_select, gather), written as torch's CPU kernels compute them."""

from __future__ import annotations

import torch


def embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    """The gradient of an embedding table: grad_weight[k] = sum of the grad rows i with indices[i] = k
    (each times 1 / count[k] with scale_grad_by_freq), the padding_idx row zero.

    torch's CPU kernel (aten/src/ATen/native/Embedding.cpp) splits num_weights among threads and
    adds row i into row k only when k != padding_idx and k lies in a thread's range [0,
    num_weights): an index equal to padding_idx, and one out of range (the public task files draw
    indices from [0, num_weights] inclusive), adds nothing and raises nothing. Here such rows are
    zeroed and sent to row 0 (adding zero changes nothing), which costs one pass over grad
    (N x D), small beside the zero fill of the num_weights x D result. count[k] counts every
    occurrence of a kept row k, as torch's does. Sums are accumulated in the output dtype, as torch's CPU kernel does."""
    dim = grad_output.shape[-1]
    idx = indices.reshape(-1)
    grad = grad_output.reshape(-1, dim)
    keep = torch.logical_and(idx >= 0, idx < num_weights)
    if padding_idx >= 0:
        keep = torch.logical_and(keep, idx != padding_idx)
    safe = torch.where(keep, idx, torch.zeros_like(idx))
    if scale_grad_by_freq:
        # Dropped indices are counted in an extra last bin, so they leave the counts of kept rows alone.
        # Counted by index_add of ones (exact in float32 below 2^24 occurrences), not bincount,
        # whose kernel keeps its bins in UB (8192 at most; level1's tables have 64001 rows).
        binned = torch.where(keep, idx, torch.full_like(idx, num_weights))
        ones = torch.ones(idx.shape, dtype=torch.float32)
        counts = torch.zeros(num_weights + 1, dtype=torch.float32).index_add_(0, binned, ones)
        scale = 1.0 / torch.index_select(counts, 0, safe)
        grad = (grad.float() * scale.unsqueeze(1)).to(grad.dtype)
    grad = torch.where(keep.unsqueeze(1), grad, torch.zeros((), dtype=grad.dtype))
    return torch.zeros(num_weights, dim, dtype=grad.dtype).index_add_(0, safe, grad)


def gather(x, dim, index, sparse_grad=False):
    """torch.gather with an index smaller than the source off the gathered axis (torch
    allows index.size(d) <= x.size(d) for d != dim, and out[.., j, ..] reads x[.., j, ..]
    there): the source narrowed to the index's extent on those axes (a dense copy, as the
    gather kernel reads a dense source), then the gather whose shapes agree. Shapes that
    agree already are the gather primitive itself (NotImplemented)."""
    if x.dim() != index.dim() or x.dim() == 0:
        return NotImplemented
    d = dim % x.dim()
    if all(a == b for j, (a, b) in enumerate(zip(index.shape, x.shape)) if j != d):
        return NotImplemented
    narrowed = x
    for j in range(x.dim()):
        if j != d and index.shape[j] < x.shape[j]:
            narrowed = narrowed.narrow(j, 0, index.shape[j])
    return torch.gather(narrowed.contiguous(), d, index)


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None, sorter=None):
    """Where each value goes in the sorted last axis: the count of entries below it (right:
    at or below it), entries compared with values as a [..., N, M] broadcast and summed over
    M, so the work is N x M compares (the vendor's searchsorted is a binary search; the
    compares keep it a vector program, no data-dependent loop). NaN and a `sorter` are left
    to torch. Same results as torch.searchsorted on a sorted sequence (tests/kernels)."""
    if sorter is not None or not isinstance(values, torch.Tensor) or sorted_sequence.dim() == 0:
        return NotImplemented
    upper = right or side == "right"
    seq = sorted_sequence.unsqueeze(-2)
    vals = values.unsqueeze(-1)
    below = seq <= vals if upper else seq < vals
    return below.sum(-1, dtype=torch.int32 if out_int32 else torch.int64)


def bucketize(values, boundaries, *, out_int32=False, right=False):
    """torch.bucketize(x, boundaries, right) is searchsorted(boundaries, x, right), for values
    of any shape: right=False counts the boundaries below x, right=True those at or below."""
    if not isinstance(values, torch.Tensor) or boundaries.dim() != 1:
        return NotImplemented
    return searchsorted(boundaries, values, out_int32=out_int32, right=right)
