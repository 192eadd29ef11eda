from __future__ import annotations

import math

import pytest

from sage.memory import count_tokens, episode_reward


def test_reward_levels_and_monotone_speedup() -> None:
    assert episode_reward(executed=False, correct=False, speedup=None) == -1.0
    assert episode_reward(executed=True, correct=False, speedup=3.0) == -0.5
    assert episode_reward(executed=True, correct=True, speedup=1.0) == 0.0
    assert episode_reward(executed=True, correct=True, speedup=2.0) == pytest.approx(math.tanh(1.0))
    assert episode_reward(executed=True, correct=True, speedup=0.5) == pytest.approx(-0.5 * math.tanh(1.0))
    speeds = [0.01, 0.1, 0.5, 0.9, 1.0, 1.1, 2.0, 8.0, 100.0]
    rewards = [episode_reward(executed=True, correct=True, speedup=s) for s in speeds]
    assert rewards == sorted(rewards) and len(set(rewards)) == len(rewards)
    assert -0.5 < rewards[0] and rewards[-1] < 1.0  # any correct kernel beats any wrong one
    # correct but not timed (a views-only reference has no time): neither credit nor blame for speed
    assert episode_reward(executed=True, correct=True, speedup=None) == 0.0
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError):
            episode_reward(executed=True, correct=True, speedup=bad)


def test_token_estimate() -> None:
    assert count_tokens("") == 0
    assert count_tokens("Use two buffers.") == 5  # use, two: 1 each; buffers (7 letters): 2; ".": 1
    assert count_tokens("BUFFER_NUM=2") == 5  # BUFFER _ NUM = 2
    assert count_tokens("double-buffering") == 4  # double - buffer(9 letters → 2)
    assert count_tokens("1234567") == 3  # digits in threes


def test_the_memory_does_not_pull_in_the_simulator_or_torch() -> None:
    import subprocess
    import sys

    # sage.bench.roofline (how every command formats one figure) may come with the CLI; the
    # modules that evaluate, load tasks or run the reference may not.
    heavy = ('torch', 'sage.npu', 'sage.bench.evaluate', 'sage.bench.tasks', 'sage.bench.runner', 'sage.bench.reference')
    code = f"import sys, sage.memory, sage.cli.memory; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"
