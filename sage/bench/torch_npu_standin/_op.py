"""How a stand-in becomes one operator: a torch.library custom op in the `npu_standin`
namespace.

sage times a reference by recording its aten calls (`sage.kernels.record`, a
TorchDispatchMode). A custom op reaches that mode as itself, `npu_standin::npu_rotary_mul`,
not as the ops its CPU body runs, so the reference model sees the single fused kernel the
chip runs (`sage.bench.reference.standin_work` times it). The body is also the op's fake
(meta) implementation: every body builds its outputs from its inputs' shapes with
device-following torch calls, so sized (meta) cases trace without data; a body that needs
values (a data-dependent count) raises on meta and the case is timed on real inputs, as for
any reference (sage.bench.reference_run).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch.library import custom_op

from sage.kernels import register_extension_decomposition

NAMESPACE = "npu_standin"

# dtypes the task files name as strings (JSON attrs) or torch dtypes
_DTYPES = {"int8": torch.int8, "int32": torch.int32, "int64": torch.int64, "float16": torch.float16,
           "bfloat16": torch.bfloat16, "float32": torch.float32, "float": torch.float32,
           "half": torch.float16}


def standin(name: str, mutates_args: Iterable[str] = (), compile_inplace: bool = False) -> Callable:
    """Registers the decorated body as `torch.ops.npu_standin.<name>` with itself as fake.
    `compile_inplace`: the body of an op that writes its arguments is also what the compiler
    records (pointwise math, then one copy_ into each written argument)."""
    def wrap(fn: Callable) -> Callable:
        op = custom_op(f"{NAMESPACE}::{name}", fn, mutates_args=tuple(mutates_args))
        op.register_fake(fn)
        if not mutates_args:
            # the compiler records the body's aten ops (a kernel implements the documented
            # semantics)
            register_extension_decomposition(f"{NAMESPACE}::{name}", fn)
        elif compile_inplace:
            # an op that writes its arguments in place is compiled only when its body says
            # so: its copy_ into each argument is recorded as that argument's new value
            # (sage.kernels.record); the others stay one opaque call
            register_extension_decomposition(f"{NAMESPACE}::{name}", fn)
        return op
    return wrap


def dtype_of(value: object, default: torch.dtype) -> torch.dtype:
    """A dtype argument as torch_npu takes it: None (the default), a torch dtype, or its name."""
    if value is None:
        return default
    if isinstance(value, torch.dtype):
        return value
    if isinstance(value, str) and value.removeprefix("torch.") in _DTYPES:
        return _DTYPES[value.removeprefix("torch.")]
    raise ValueError(f"unsupported dtype argument {value!r}")


def int8_round(y: torch.Tensor, qmax: float = 127.0, qmin: float = -128.0) -> torch.Tensor:
    """Round half to even (Ascend's Cast with ROUND mode) then saturate into int8."""
    return torch.round(y).clamp(qmin, qmax).to(torch.int8)
