"""ATU, adoption-traced utility, and the baselines it is compared with.

    atu / sage:  every experience or rule the agent declared adopted or measured:
                 U ← U + α(r_i − U), where r_i is the item's counterfactual effect reward
                 when the episode measured it (reward.effect_reward), else the episode's r
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


def credit_targets(mode: Mode, *, retrieved: set[int], adopted_experiences: set[int], adopted_rules: set[int],
                   measured_experiences: frozenset[int] = frozenset(),
                   measured_rules: frozenset[int] = frozenset()) -> CreditTargets:
    """Which items an episode credits. A measured item (a trial: the agent timed the work
    with and without it) is credited under ATU even when the agent then left it out: the
    measurement is the evidence, and an item that keeps losing its trials must fall."""
    if mode == "none":
        return CreditTargets(frozenset(), frozenset())
    if mode == "uniform":
        return CreditTargets(frozenset(retrieved), frozenset())
    return CreditTargets(frozenset(adopted_experiences) | measured_experiences,
                         frozenset(adopted_rules) | measured_rules)
