"""Legality checks against the instruction table: each raises UnsupportedError with the
hardware's reason and what to do instead (the kernel line is attached by the runner)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from sage.npu.errors import UnsupportedError
from sage.npu.isa.table import allowed_dtypes, allowed_pairs, cast_modes, load_table

# Ascend C spells these two differently from numpy; the others keep numpy's name
_ASCEND_NAME = {"float16": "half", "float32": "float"}


def ascend_name(dt: np.dtype | str) -> str:
    name = dt if isinstance(dt, str) else np.dtype(dt).name
    return _ASCEND_NAME.get(name, name)


def _names(dts: Iterable) -> str:
    return ", ".join(ascend_name(d) for d in dts)


def product_name() -> str:
    """The chip family, short ("Atlas A2")."""
    return _product()


def _product() -> str:
    return load_table().meta.product.split(" (")[0].replace(" training/inference series", "")


def dtype(api: str, dt: np.dtype) -> None:
    """`api` on operands of type `dt`: legal, or UnsupportedError."""
    if dt in allowed_dtypes(api):
        return
    table = load_table()
    row = table.api[api]
    fix = row.fix or table.fix.get(np.dtype(dt).name, "Cast to a supported type first")
    raise UnsupportedError(f"{api} does not support {ascend_name(dt)} on {_product()} "
                           f"(supported: {_names(row.dtypes)}); {fix}")


def combo(api: str, *dts: np.dtype) -> None:
    """`api` on a (src, dst) pair or (a, b, c) triple of types."""
    if tuple(dts) in allowed_pairs(api):
        return
    row = load_table().api[api]
    listed = "; ".join("->".join(ascend_name(d) for d in c) for c in (*row.pairs, *row.triples))
    raise UnsupportedError(f"{api} does not support {'->'.join(ascend_name(d) for d in dts)} on {_product()} "
                           f"(supported: {listed})")


def compare_mode(api: str, dt: np.dtype, mode_name: str) -> None:
    only = load_table().api[api].modes.get(np.dtype(dt).name)
    if only is not None and mode_name not in only:
        raise UnsupportedError(f"{api} on {ascend_name(dt)} supports only CMPMODE.{'/'.join(only)} on "
                               f"{_product()}; Cast to float first for CMPMODE.{mode_name}")


def cast(src: np.dtype, dst: np.dtype, mode_name: str) -> None:
    """Cast src -> dst with RoundMode `mode_name`: a pair and mode the Cast page lists."""
    modes = cast_modes().get((src, dst))
    if modes is None:
        reachable = sorted(ascend_name(d) for (s, d) in cast_modes() if s == src)
        via = (f"; from {ascend_name(src)} Cast reaches {', '.join(reachable)}: go through one of them"
               if reachable else f"; Cast has no conversion from {ascend_name(src)}")
        raise UnsupportedError(f"Cast {ascend_name(src)} -> {ascend_name(dst)} is not supported on {_product()}{via}")
    if mode_name not in modes:
        raise UnsupportedError(f"Cast {ascend_name(src)} -> {ascend_name(dst)} does not support RoundMode.{mode_name} "
                               f"on {_product()} (supported: {', '.join(sorted(modes))})")


def repeat_times(api: str, rep: int) -> None:
    limit = load_table().limits.max_repeat
    if not 0 <= rep <= limit:
        raise UnsupportedError(f"{api}: repeatTimes {rep} is outside [0, {limit}] (an 8-bit field on {_product()}); "
                               f"split the work into several calls or use the count form")


def mask(api: str, value, itemsize: int) -> None:
    """A continuous mask (int) or a bitwise mask ([low64, high64]) for operands of `itemsize` bytes."""
    top = load_table().limits.mask_max[str(itemsize)]
    if isinstance(value, tuple):
        words = [int(w) for w in value]
        if len(words) != 2 or any(not 0 <= w < 1 << 64 for w in words):
            raise UnsupportedError(f"{api}: a bitwise mask is two 64-bit words [low, high], got {list(value)}")
        if top <= 64 and words[1]:
            raise UnsupportedError(f"{api}: with {itemsize * 8}-bit operands a repeat has {top} lanes, so the high "
                                   f"mask word must be 0 (got {words[1]:#x})")
        if top < 64 and words[0] >> top:
            raise UnsupportedError(f"{api}: with {itemsize * 8}-bit operands only the low {top} mask bits exist")
        if not any(words):
            raise UnsupportedError(f"{api}: the bitwise mask selects no lane (both words 0)")
        return
    if not 1 <= value <= top:
        raise UnsupportedError(f"{api}: mask must be in [1, {top}] for {itemsize * 8}-bit operands "
                               f"({top} lanes per 256 B repeat), got {value}")
