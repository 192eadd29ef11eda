"""Which cases of a task an Ascend 910B kernel can take, and how a case is named in messages.

Task files may carry cases that no 910B kernel can run: the public NPUKernelBench files
have fp64 and complex tensors (and complex scalars) among their cases. Such a case still
loads and its reference still runs; `case_support` says why a kernel cannot be judged on
it, so the evaluator reports the case as unsupported instead of failing or crashing.

Some public cases are also far larger than a simulated run can take (one has 2.83 G
elements): a case over `MAX_CASE_ELEMENTS` is unsupported with that reason. The case-file
reader makes such tensors as `meta` tensors (shape and dtype, no data),
so even generating the inputs costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from sage.npu import dtypes as npu_dtypes

_NO_FP64 = "the 910B vector unit has no fp64 instructions"
_NO_COMPLEX = "the 910B vector unit has no complex instructions"
# Element types with a known reason; any other type outside the DSL's gets the generic one.
UNSUPPORTED_DTYPES: dict[torch.dtype, str] = {
    torch.float64: _NO_FP64,
    torch.complex32: _NO_COMPLEX,
    torch.complex64: _NO_COMPLEX,
    torch.complex128: _NO_COMPLEX,
}
SUPPORTED_DTYPE_NAMES = frozenset(dt.name for dt in npu_dtypes.ALL)
# Elements over all tensor arguments of one case. The sandbox gives a kernel 4 GiB
# (`Limits.memory_mb`) and the simulator executes every element in Python-driven numpy:
# 2**28 elements (1 GiB of fp32 inputs, as much again in outputs) is the largest case that
# fits both the memory limit and the default wall-clock limit with room to spare.
MAX_CASE_ELEMENTS = 1 << 28


def case_support(case: Sequence[Any], not_made: str | None = None) -> str | None:
    """None when a kernel can take every argument of the case; else why not, naming the
    argument and its shape: "argument 1 (float64[4, 5]): the 910B vector unit has no fp64 instructions".
    `not_made`: why its meta tensors were not made, when the caller knows (the input budget)."""
    for position, arg in enumerate(case):
        reason = _unsupported(arg)
        if reason:
            return f"argument {position} ({describe_arg(arg)}): {reason}"
    return size_support(case, not_made)


def size_support(case: Sequence[Any], not_made: str | None = None) -> str | None:
    """None when the case's tensors fit a simulated run, else why not (`not_made`: why its meta
    tensors were not made, when the caller knows it)."""
    total = sum(t.numel() for t in tensors_of(case))
    if total > MAX_CASE_ELEMENTS:
        return (f"{total:,} elements in its tensors ({describe_case(case)}): more than the "
                f"{MAX_CASE_ELEMENTS:,} a simulated run can take")
    if any(t.is_meta for t in tensors_of(case)):
        return not_made or f"its inputs were not made ({describe_case(case)}: meta tensors carry no data)"
    return None


def dtype_support(dtype: torch.dtype) -> str | None:
    """None for an element type a kernel can use, else why not."""
    if dtype in UNSUPPORTED_DTYPES:
        return UNSUPPORTED_DTYPES[dtype]
    name = dtype_name(dtype)
    if name not in SUPPORTED_DTYPE_NAMES:
        return f"{name} is not an element type of sage's NPU DSL ({', '.join(sorted(SUPPORTED_DTYPE_NAMES))})"
    return None


def describe_case(case: Sequence[Any]) -> str:
    """The arguments of a case in one line: "float16[0, 7], int64[], 0.5, None"."""
    return ", ".join(describe_arg(a) for a in case)


def describe_arg(arg: Any) -> str:
    if isinstance(arg, torch.Tensor):
        return f"{dtype_name(arg.dtype)}{list(arg.shape)}"
    if isinstance(arg, (list, tuple)) and any(isinstance(a, torch.Tensor) for a in arg):
        inner = ", ".join(describe_arg(a) for a in arg[:3]) + (", ..." if len(arg) > 3 else "")
        return f"[{inner}]"
    text = repr(arg)
    return text if len(text) <= 40 else text[:37] + "..."


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tensors_of(value: Any) -> list[torch.Tensor]:
    """The tensors of a case or argument, lists of tensors flattened."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_of(v)]
    return []


def _unsupported(arg: Any) -> str | None:
    if isinstance(arg, torch.Tensor):
        return dtype_support(arg.dtype)
    if isinstance(arg, complex):
        return _NO_COMPLEX
    if isinstance(arg, (list, tuple)):
        return next((r for r in map(_unsupported, arg) if r), None)
    return None
