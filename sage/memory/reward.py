"""The episode reward r ∈ [−1, 1].

- the kernel never executed (every attempt raised):      −1
- it executed but no attempt was correct:                  −0.5
- correct, speedup s:  tanh(log2 s) for s ≥ 1, and 0.5·tanh(log2 s) for s < 1
- correct, no speedup:                                       0

The correct branch is monotone in s and 0 at s = 1 (as fast as the vendor's eager
kernels). Halving the slope below 1 keeps every correct kernel (r > −0.5) above every
wrong one, however slow it is: a slow correct kernel is still worth more than a fast
wrong one. tanh saturates, so one 50× outlier cannot dominate the running averages.
A correct outcome without a speedup is one the evaluation could not time against the
reference (a reference made only of views, torch.split say, dispatches no kernel: the
model has no time for it): it earns what matching the reference's speed earns, 0, neither
credit nor blame for a speed nothing measured.

An item's effect reward is counterfactual: what the item changed, not how the episode
ended. With e = (time without the item) / (time with it), measured by the agent on the
same work, it is tanh(log2 e): 0 for an item that changed nothing, negative for one that
slowed the kernel down, whatever the kernel's speedup over the reference. The episode
reward alone cannot tell them apart: a transferred schedule that cuts a task from 4.3×
to 2.7× still ends a good episode (docs/ablation.md).
"""

from __future__ import annotations

import math

NOT_EXECUTED = -1.0
WRONG = -0.5
UNTIMED = 0.0


def episode_reward(*, executed: bool, correct: bool, speedup: float | None) -> float:
    if not executed:
        return NOT_EXECUTED
    if not correct:
        return WRONG
    if speedup is None:
        return UNTIMED
    if not math.isfinite(speedup) or speedup <= 0:
        raise ValueError(f"a correct outcome's speedup is positive and finite (or None: not timed), got {speedup!r}")
    value = math.tanh(math.log2(speedup))
    return value if speedup >= 1.0 else 0.5 * value


def effect_reward(effects: list[float]) -> float:
    """The counterfactual reward of an item measured `effects` times in one episode (their
    geometric mean, so one faster and one as much slower trial cancel)."""
    if not effects or any(not math.isfinite(e) or e <= 0 for e in effects):
        raise ValueError(f"effects are positive finite time ratios, got {effects!r}")
    return math.tanh(sum(math.log2(e) for e in effects) / len(effects))
