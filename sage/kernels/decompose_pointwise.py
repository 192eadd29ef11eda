"""Decompositions of pointwise operators that have no vector recipe of their own
(activation backwards, lerp, addcdiv, addcmul): torch's formulas (torch/_decomp) in ops
the compiler lowers. Half inputs are computed in float32 and rounded once, as torch's CPU
kernels do, to the promoted dtype of the operands; where an op's CPU kernel returns
another dtype (mish_backward: its input's), the recorder casts to what the op returns."""

from __future__ import annotations

import torch

from sage.kernels.decompose import _acc


def _done(out: torch.Tensor, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """A float16 grad with a float32 input gives float32, as torch's type promotion does."""
    return out.to(torch.promote_types(grad.dtype, x.dtype))


def threshold_backward(grad, x, threshold):
    return _done(torch.where(x <= threshold, torch.zeros_like(grad), grad), grad, x)


def hardsigmoid_backward(grad, x):
    g, xf = _acc(grad), _acc(x)
    return _done(torch.where(torch.logical_and(xf > -3.0, xf < 3.0), g * (1.0 / 6.0), torch.zeros_like(g)), grad, x)


def hardswish_backward(grad, x):
    g, xf = _acc(grad), _acc(x)
    inner = torch.where(xf <= 3.0, g * (xf * (1.0 / 3.0) + 0.5), g)
    return _done(torch.where(xf < -3.0, torch.zeros_like(g), inner), grad, x)


def silu_backward(grad, x):
    g, xf = _acc(grad), _acc(x)
    sig = torch.sigmoid(xf)
    return _done(g * sig * (1.0 + xf * (1.0 - sig)), grad, x)


def mish_backward(grad, x):
    g, xf = _acc(grad), _acc(x)
    t = torch.tanh(torch.nn.functional.softplus(xf))
    return _done(g * (t + xf * torch.sigmoid(xf) * (1.0 - t * t)), grad, x)


def softplus_backward(grad, x, beta, threshold):
    g, xf = _acc(grad), _acc(x)
    z = torch.exp(xf * beta)
    return _done(torch.where(xf * beta > threshold, g, g * z / (z + 1.0)), grad, x)


def leaky_relu_backward(grad, x, negative_slope, self_is_result=False):
    g = _acc(grad)
    return _done(torch.where(x > 0, g, g * negative_slope), grad, x)


def lerp(start, end, weight):
    return start + weight * (end - start)


def addcdiv(x, t1, t2, *, value=1):
    return x + value * (t1 / t2)


def addcmul(x, t1, t2, *, value=1):
    return x + value * (t1 * t2)


DECOMPOSED = {
    "threshold_backward": threshold_backward, "hardsigmoid_backward": hardsigmoid_backward,
    "hardswish_backward": hardswish_backward, "silu_backward": silu_backward, "mish_backward": mish_backward,
    "softplus_backward": softplus_backward, "leaky_relu_backward": leaky_relu_backward, "lerp": lerp,
    "addcdiv": addcdiv, "addcmul": addcmul,
}
