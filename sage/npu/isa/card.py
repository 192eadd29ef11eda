"""The legality rules of the instruction table, compacted for the DSL reference card: instructions
grouped by the element types they take, Cast pairs grouped by the modes they allow."""

from __future__ import annotations

from collections import defaultdict

from sage.npu.isa.legal import ascend_name
from sage.npu.isa.table import IsaTable, load_table

_ORDER = ("int8", "uint8", "int16", "uint16", "float16", "bfloat16", "int32", "uint32", "float32", "int64")
_MODE_ORDER = ("CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC", "CAST_ODD")
# copies, atomics and the cube: their own sections of the card cover them
_MOVES = ("DataCopy", "DataCopyPad", "LoadData", "SetAtomicAdd", "SetAtomicMax", "SetAtomicMin")


def _types(names) -> str:
    return ", ".join(ascend_name(d) for d in sorted(names, key=_ORDER.index))


def _compact(names: list[str]) -> str:
    """ReduceSum ReduceMax ReduceMin -> Reduce{Sum,Max,Min}: the families share a stem."""
    stems: dict[str, list[str]] = defaultdict(list)
    for n in names:
        stem = n[:-3] if n[-3:] in ("Sum", "Max", "Min") and len(n) > 3 else n
        stems[stem].append(n[len(stem):])
    return " ".join(s + ("{" + ",".join(t) + "}" if len(t) > 1 else t[0]) for s, t in stems.items())


def _dtype_groups(table: IsaTable, high_level: set[str]) -> list[str]:
    groups: dict[tuple, list[str]] = defaultdict(list)
    for name, row in table.api.items():
        if row.dtypes and name not in _MOVES and name not in high_level:
            groups[tuple(sorted(row.dtypes, key=_ORDER.index))].append(name)
    lines = [f"{_types(types)}: {_compact(names)}" for types, names in sorted(groups.items(), key=lambda g: -len(g[1]))]
    return lines


def _cast_groups(table: IsaTable) -> list[str]:
    by_modes: dict[tuple, list[str]] = defaultdict(list)
    for row in table.cast:
        modes = tuple(m for m in _MODE_ORDER if m in row.modes)
        by_modes[modes].append(f"{ascend_name(row.src)}->{ascend_name(row.dst)}")
    return [f"{' '.join(pairs)}: {'/'.join(m.removeprefix('CAST_') for m in modes)}" for modes, pairs in by_modes.items()]


def legality_lines(high_level: set[str]) -> list[str]:
    """Card bullets: types per instruction, the special cases, Cast pairs and modes, repeat and mask limits."""
    table = load_table()
    lim = table.limits
    modes = table.api["Compare"].modes
    lines = ["- Types: " + "; ".join(_dtype_groups(table, high_level)) + "."]
    lines.append(f"- Compare/CompareScalar on {', '.join(ascend_name(d) for d in modes)}: only CMPMODE."
                 f"{'/'.join(next(iter(modes.values())))}. Axpy (src->dst): "
                 + ", ".join("->".join(ascend_name(d) for d in p) for p in table.api["Axpy"].pairs) + ".")
    lines.append("- Cast (src->dst: modes; no other pair, go through float or half): " + "; ".join(_cast_groups(table))
                 + ". NONE = RINT when inexact (exact otherwise); RINT ties to even, ROUND ties away from zero.")
    lines.append(f"- repeatTimes 0..{lim.max_repeat} (the count form has no limit); mask [1, {lim.mask_max['2']}] "
                 f"for 16-bit, [1, {lim.mask_max['4']}] for 32-bit operands; a bitwise mask [low64, high64] needs "
                 "high = 0 for 32-bit.")
    return lines
