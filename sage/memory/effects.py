"""An item's measured effect in one episode, the evidence ATU's counterfactual credit uses.

Two sources, both measurements sage made itself (an LLM's claims are never one):
- the agent's own timing runs (the offline agent's schedule search times a group with the
  item's schedule and with the default), recorded through `Episode.record_effect`;
- the episode's evaluated attempts: an item declared in some correct attempts and absent
  from others has effect (best speedup with it) / (best speedup without it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Measured:
    kind: str          # "experience" | "rule"
    number: int
    attempt: int
    effect: float      # time without the item / time with it
    note: str


def check_effect(effect: float) -> float:
    if isinstance(effect, bool) or not isinstance(effect, (int, float)) or not math.isfinite(effect) or effect <= 0:
        raise ValueError(f"an effect is a positive finite time ratio (without / with), got {effect!r}")
    return float(effect)


def attempt_effects(attempts: list[dict[str, Any]], declared: Iterable[tuple[str, int, int]]) -> list[Measured]:
    """Effects read off the attempts: `attempts` as Episode records them (number, status,
    speedup), `declared` as (kind, number, attempt) adoption declarations."""
    correct = {a["number"]: a["speedup"] for a in attempts
               if a["status"] == "correct" and a.get("speedup") and a["speedup"] > 0}
    with_item: dict[tuple[str, int], set[int]] = {}
    for kind, number, attempt in declared:
        with_item.setdefault((kind, number), set()).add(attempt)
    out = []
    for (kind, number), numbers in sorted(with_item.items()):
        inside = {n: s for n, s in correct.items() if n in numbers}
        outside = {n: s for n, s in correct.items() if n not in numbers}
        if not inside or not outside:
            continue
        best_in = max(inside, key=lambda n: (inside[n], -n))
        best_out = max(outside, key=lambda n: (outside[n], -n))
        out.append(Measured(kind, number, best_in, inside[best_in] / outside[best_out],
                            f"attempt {best_in} with it ({inside[best_in]:.3f}x) against attempt {best_out} "
                            f"without it ({outside[best_out]:.3f}x)"))
    return out


def by_item(measured: Iterable[Measured]) -> dict[tuple[str, int], list[float]]:
    out: dict[tuple[str, int], list[float]] = {}
    for m in measured:
        out.setdefault((m.kind, m.number), []).append(m.effect)
    return out
