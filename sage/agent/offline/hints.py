"""Knob hints: what an experience or rule advises, as the offline agent applies it.

A hint is a dict of knobs (`tile_len`, `buffer_num`, `block_dim`, `copy_mode`,
`fp32_compute`, `row_axis`, `row_split`, the cube's `base_m`/`base_n`/`base_k`/`l1_k`), optionally
scoped to the groups it was learned on: `op_class`, `dtype`, `regime`
("<log2 elements>/<log2 row>") and `bottleneck` (what bounds the group under the default
schedule: MTE2, V, MTE3 or HBM). A scoped hint applies to a group of that op class, dtype
and bottleneck whose regime is within two powers of two; an unscoped one to every group.
The bottleneck is part of the key because a knob's effect follows it: a longer tile
amortises each copy's fixed cost, which matters to a group bound by its copies (MTE2/MTE3)
and not to one bound by HBM bandwidth or by the vector unit.
"""

from __future__ import annotations

from typing import Any

from sage.agent.compiler.schedule import GroupKey, Schedule

SCOPE = ("op_class", "dtype", "regime", "bottleneck")
# Hint keys of older experiences (before the compiler) mapped to the schedule's fields.
ALIASES = {"cube_buffer_num": "buffer_num", "cube_block_dim": "block_dim"}
CUBE = {"base_m", "base_n", "base_k", "l1_k"}
KNOBS = {"tile_len", "buffer_num", "block_dim", "copy_mode", "fp32_compute", "row_axis", "row_split", "base_m", "base_n",
         "base_k", "l1_k"}


def knobs_of(hints: dict[str, Any]) -> dict[str, Any] | None:
    """The schedule fields a hint sets, validated; None when it sets nothing usable."""
    out: dict[str, Any] = {}
    for key, value in hints.items():
        if key in SCOPE:
            continue
        field = ALIASES.get(key, key)
        if field not in KNOBS:
            return None                  # advice for something this agent does not schedule
        if field == "block_dim" and value in ("all", None):
            value = None
        out[field] = value
    if not out:
        return None
    try:
        Schedule(**out)
    except ValueError:
        return None
    return out


def applies(hints: dict[str, Any], key: GroupKey, bottleneck: str | None = None) -> bool:
    """Whether a hint's scope covers group `key`, whose default schedule is bound by `bottleneck`."""
    if "op_class" in hints and hints["op_class"] != key.op_class:
        return False
    if "dtype" in hints and hints["dtype"] != key.dtype:
        return False
    if "bottleneck" in hints and hints["bottleneck"] != bottleneck:
        return False
    if "regime" in hints:
        try:
            want = int(str(hints["regime"]).split("/")[0])
            have = int(key.regime.split("/")[0])
        except ValueError:
            return False
        if abs(want - have) > 2:
            return False
    return True


def apply(start: Schedule, knobs: dict[str, Any]) -> Schedule | None:
    """`start` with the knobs set, or None when that changes nothing."""
    if all(getattr(start, k) == v for k, v in knobs.items()):
        return None
    return start.model_copy(update=knobs)


def in_effect(knobs: dict[str, Any], sched: Schedule) -> bool:
    return all(getattr(sched, k) == v for k, v in knobs.items())


def decision_hints(key: GroupKey, knobs: dict[str, Any], bottleneck: str | None) -> dict[str, Any]:
    """A search decision as the hints an experience stores."""
    scope = {"op_class": key.op_class, "dtype": key.dtype, "regime": key.regime}
    if bottleneck is not None:
        scope["bottleneck"] = bottleneck
    return {**scope, **knobs}
