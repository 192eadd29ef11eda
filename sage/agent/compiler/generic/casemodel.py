"""What one compiled case is made of, for the case classes of `rules.py`.

`TracedLaunch`: one launch traced on a symbolic spec (the kernel module's text, the
parameters' values in this case, the generator's guards, the tiling fields' formulas).
`CaseCode`: a case's launches and the host code around them (temporaries, results).
`Tilings`: per kernel, its tiling variants (a guard set and the fields it gives) in the
order the cases brought them; a variant holds for every shape on which all its guards
come out the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import torch

from sage.kernels.symbolic import Formula, evaluate, guard_holds


@dataclass
class TracedLaunch:
    kernel: str                        # the module text (take_tiling's), canonical names
    args: list[str]                    # the host buffers it is launched on
    values: list[Any]                  # its parameters' values in this case
    guards: dict[Formula, bool]        # comparisons the generator made, and their outcomes
    fields: list[Formula]              # tiling field k's formula over its parameters
    label: str = ""
    entry: str = "g_launch"            # the module's host launcher
    # for merging with other tile programs (generic/merge.py): the module before it took its
    # tiling, the concrete launch (its TileProgram decides what it may merge with), and the
    # bytes it moves as a formula of its parameters
    raw: str = ""
    launch: Any = None
    weight: Formula | None = None

    def variant(self) -> tuple:
        return (tuple(sorted(self.guards.items(), key=repr)), tuple(self.fields))

    def tiling(self) -> tuple:
        """Its fields' values in this case."""
        return tuple(evaluate(f, self.values) for f in self.fields)

    def constants(self) -> dict[str, Any]:
        """The module's size constants in this case (`NC = td2` -> NC's value): what the
        generator chose for this case, as the concrete kernel would have written it."""
        tiling = self.tiling()
        out: dict[str, Any] = {}
        for name, value in re.findall(r"^(\w+) = (td\d+|-?\d+|None)$", self.raw, re.M):
            out[name] = tiling[int(value[2:])] if value.startswith("td") else (None if value == "None" else int(value))
        return out


@dataclass
class HostCode:
    """A case's host code around its launches: its temporaries' sizes are parameters."""

    temps: list[tuple[str, int, str]] = field(default_factory=list)      # (name, numel parameter, dtype)
    returns: list[tuple] = field(default_factory=list)   # ("view", buffer, shape) | ("empty", shape, dtype)
    values: list[Any] = field(default_factory=list)

    def param(self, value: int) -> int:
        self.values.append(value)
        return len(self.values) - 1


@dataclass
class CaseCode:
    index: int                         # the case's position among the compiled cases
    flat: list                         # its forward arguments, lists of tensors spliced in
    packing: tuple[int | None, ...]
    names: list[str]                   # forward's flat parameter names (a0.., then model parameters)
    launches: list[TracedLaunch]
    host: HostCode
    long_row_limit: int | None = None  # its long reductions traced in chunks of at most this (derived.py)
    # rules.py's host expressions of this case, ranked and rank-free, made once (a case is
    # offered to every class before it gets its own; read only)
    offered: dict = field(default_factory=dict, repr=False, compare=False)

    def values(self) -> list[Any]:
        """The launches' parameters, then the temporaries' sizes."""
        return [v for launch in self.launches for v in launch.values] + list(self.host.values)

    def shapes(self) -> list[tuple[int, ...]]:
        """Each result's shape."""
        return [tuple(r[2]) if r[0] == "view" else tuple(r[1]) for r in self.host.returns]

    def signature(self, ranked: bool) -> tuple:
        """List lengths, and per argument its dtype or Python type, and its shape's pattern:
        ranked, each dimension as 0, 1 or many (`shape_pattern`: which dimensions broadcast
        decides the code path, as torch specialises sizes 0 and 1); rank-free, the first
        tensor argument of the same shape (an elementwise kernel over equal shapes is not
        one over a broadcast)."""
        sig = []
        tensors = [tuple(a.shape) for a in self.flat if isinstance(a, torch.Tensor)]
        try:
            whole = tuple(torch.broadcast_shapes(*tensors))
        except RuntimeError:
            whole = None
        for a in self.flat:
            if isinstance(a, torch.Tensor):
                # rank-free: also whether it has the broadcast's shape (a result shaped like it is)
                pattern = shape_pattern(a.shape) if ranked else (next(
                    i for i, b in enumerate(self.flat) if isinstance(b, torch.Tensor) and b.shape == a.shape),
                    len(tensors) > 1 and tuple(a.shape) == whole)
                sig.append(("t", str(a.dtype).removeprefix("torch."), pattern))
            else:
                sig.append(("s", type(a).__name__))
        return (self.packing, tuple(sig))

    def structure(self, ranked: bool) -> tuple:
        """What two cases of one class have in common: the same kernels on the same buffers,
        the same temporaries, the same results (and, `ranked`, the same ranks)."""
        rename = {name: f"t{k}" for k, (name, _, _) in enumerate(self.host.temps)}
        launches = tuple((launch.kernel, len(launch.values), tuple(rename.get(a, a) for a in launch.args))
                         for launch in self.launches)
        temps = tuple((rename[n], p, d) for n, p, d in self.host.temps)
        returns = tuple(("view", rename.get(r[1], r[1])) if r[0] == "view" else ("empty", r[2])
                        for r in self.host.returns)
        ranks = tuple(len(s) for s in self.shapes()) if ranked else ()
        return (self.signature(ranked), launches, temps, returns, len(self.host.values), ranks)


def shape_pattern(shape: Any) -> tuple[int, ...]:
    """Each dimension as 0, 1 or 2 (two or more); the host's `dims_pattern` helper."""
    return tuple(min(int(d), 2) for d in shape)


# The host helper computing `shape_pattern` in the kernel file, as a string of digits ("212"
# for [7, 1, 9]): a class's check then reads '212' rather than (2, 1, 2), shorter in files that
# hold dozens of classes (64 KB per file).
PATTERN_HELPER = """def dims_pattern(t):
    out = ''
    for d in t.shape:
        out = out + str(min(d, 2))
    return out
"""


def pattern_text(shape: Any) -> str:
    """`shape_pattern` as the kernel file's `dims_pattern` gives it."""
    return "".join(str(d) for d in shape_pattern(shape))


class Tilings:
    """Each kernel's tiling variants, in the order the cases brought them."""

    def __init__(self, codes: list[CaseCode]) -> None:
        self.variants: dict[str, list[tuple]] = {}
        self.counts: dict[str, int] = {}             # kernel -> its launch parameters
        self.values: dict[tuple, list[Any]] = {}     # (kernel, variant) -> the first case's parameter values
        for code in codes:
            for launch in code.launches:
                self.counts[launch.kernel] = len(launch.values)
                seen = self.variants.setdefault(launch.kernel, [])
                if launch.variant() not in seen:
                    seen.append(launch.variant())
                    self.values[(launch.kernel, launch.variant())] = list(launch.values)

    def tiling(self, kernel: str, values: list[Any]) -> tuple | None:
        """The fields of the first variant whose guards hold for `values` (None: none does)."""
        for guards, fields in self.variants[kernel]:
            if all(guard_holds(g, outcome, values) for g, outcome in guards):
                try:
                    return tuple(evaluate(f, values) for f in fields)
                except (ZeroDivisionError, OverflowError, ValueError):
                    return None
        return None


__all__ = ["PATTERN_HELPER", "CaseCode", "HostCode", "Tilings", "TracedLaunch", "shape_pattern"]
