"""ATU, adoption-traced utility, and the baselines it is compared with.

    atu / sage:  every experience or rule the agent declared adopted: U ← U + α(r − U)
    uniform:     every experience retrieved in the episode gets that update, declared or not
                 (the rule of MemRL/ReMe-style memories)
    none:        nothing is retrieved and nothing is credited

Under every mode a retrieved item's `retrieved` count moves, and a declared item's
`adopted` (and, if the episode was correct, `adopted_succeeded`) count moves: those are
observations, not credit.
"""

from __future__ import annotations

from dataclasses import dataclass

from sage.memory.models import Mode


def atu_step(utility: float, reward: float, alpha: float) -> float:
    return utility + alpha * (reward - utility)


@dataclass(frozen=True)
class CreditTargets:
    experiences: frozenset[int]
    rules: frozenset[int]


def credit_targets(mode: Mode, *, retrieved: set[int], adopted_experiences: set[int], adopted_rules: set[int]) -> CreditTargets:
    if mode == "none":
        return CreditTargets(frozenset(), frozenset())
    if mode == "uniform":
        return CreditTargets(frozenset(retrieved), frozenset())
    return CreditTargets(frozenset(adopted_experiences), frozenset(adopted_rules))
