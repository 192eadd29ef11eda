"""The synthetic credit study (benchmarks/credit_assignment.py): its table and a short run."""

from __future__ import annotations

import math


def test_the_table_bolds_the_best_mean_of_each_column_and_dashes_what_a_mode_cannot_measure():
    from benchmarks.credit_assignment import MODES, markdown

    nan = float("nan")
    row = {"spearman": nan, "separation": nan, "precision_at_k": nan, "late_reward": 0.1}
    results = {m: [dict(row)] for m in MODES}
    results["atu"] = [{"spearman": 0.7, "separation": 0.5, "precision_at_k": 0.5, "late_reward": 0.4},
                      {"spearman": 0.5, "separation": 0.3, "precision_at_k": 0.3, "late_reward": 0.6}]
    results["sage"] = [{"spearman": 0.2, "separation": 0.1, "precision_at_k": 0.6, "late_reward": 0.9}]
    lines = markdown(results, episodes=10, seeds=2, cpu_s=1.4).splitlines()
    assert lines[0].startswith("10 episodes per run, 2 seed(s) (mean ± sd), 1 s of CPU")
    by_mode = {line.split(" | ")[0].lstrip("| "): line for line in lines if line.startswith("| ") and "mode" not in line}
    assert by_mode["none"] == "| none | — | — | — | +0.100 ± 0.000 |"
    # atu: means 0.6, 0.4, 0.4, 0.5 with sd 0.141 each; sage wins precision (0.6) and reward (0.9)
    assert by_mode["atu"] == "| atu | **+0.600 ± 0.141** | **+0.400 ± 0.141** | +0.400 ± 0.141 | +0.500 ± 0.141 |"
    assert by_mode["sage"] == "| sage | +0.200 ± 0.000 | +0.100 ± 0.000 | **+0.600 ± 0.000** | **+0.900 ± 0.000** |"


def test_a_short_study_credits_nothing_without_memory_and_ranks_items_with_it():
    from benchmarks.credit_assignment import MODES, study

    results = study(episodes=12, seeds=1)
    assert set(results) == set(MODES) and all(len(runs) == 1 for runs in results.values())
    assert math.isnan(results["none"][0]["spearman"])  # no memory: no item is ever retrieved
    for mode in ("uniform", "atu", "sage"):
        assert results[mode][0]["seen"] > 0 and -1.0 <= results[mode][0]["spearman"] <= 1.0
