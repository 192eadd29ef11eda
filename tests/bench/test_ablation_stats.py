"""The ablation's intervals and adoption precision, against hand-made rows."""

from __future__ import annotations

from sage.bench.ablation_stats import IntervalSection, adoption_precision, bootstrap
from sage.bench.evaluate import TaskEvaluation
from sage.bench.runner import ResultRow


def _ev(task: str, correct: bool, speedup: float | None = None) -> TaskEvaluation:
    return TaskEvaluation(task=task, status="correct" if correct else "incorrect", executed=True, correct=correct,
                          speedup=speedup)


def _row(mode: str, task: str, ev: TaskEvaluation, adopted=(), epoch=0, attempt=0, **extra) -> ResultRow:
    return ResultRow(task=task, status=ev.status, evaluation=ev, epoch=epoch, attempt=attempt, seed=0,
                     extra={"ablation_mode": mode, "adopted": list(adopted), **extra})


def test_an_all_correct_suite_has_a_point_interval_and_the_interval_is_seeded():
    evals = [_ev(f"t{i}", True, 1.5) for i in range(20)]
    assert bootstrap(evals, lambda m: m.correctness_rate) == (1.0, 1.0)
    half = [_ev(f"t{i}", i % 2 == 0, 2.0) for i in range(100)]
    ci = bootstrap(half, lambda m: m.correctness_rate)
    assert ci == bootstrap(half, lambda m: m.correctness_rate)
    # a share of 0.5 over 100 tasks: standard error 0.05, so about 0.5 -/+ 0.1
    assert 0.38 <= ci[0] <= 0.44 and 0.56 <= ci[1] <= 0.62


def test_adoption_precision_compares_with_the_same_attempt_without_memory():
    rows = [_row("none", "a", _ev("a", True, 1.0)), _row("atu", "a", _ev("a", True, 1.2), ["E1"]),   # faster: a win
            _row("none", "b", _ev("b", True, 1.3)), _row("atu", "b", _ev("b", True, 1.1), ["E1"]),   # slower
            _row("none", "c", _ev("c", False)), _row("atu", "c", _ev("c", True, 0.8), ["E2"]),       # correct: a win
            _row("none", "d", _ev("d", True, 1.0)), _row("atu", "d", _ev("d", True, 5.0)),           # adopted nothing
            _row("atu", "e", _ev("e", True, 2.0), ["E3"])]                                          # nothing to compare
    assert adoption_precision(rows, "atu") == (2, 0, 3)


def test_the_section_lists_every_mode_and_epoch(tmp_path):
    rows = [_row(m, t, _ev(t, True, 1.1), ["E1"] if m == "atu" else (), epoch=e, promoted={"R1": "x"} if e else {},
                 trials={"E2": 0.5, "E3": 1.2} if (m, t) == ("atu", "a") else {})
            for m in ("none", "atu") for e in (0, 1) for t in ("a", "b")]
    text = IntervalSection().render(rows, tmp_path)
    lines = [ln for ln in text.splitlines() if ln.startswith("| none") or ln.startswith("| atu")]
    assert len(lines) == 4
    atu2 = next(ln for ln in lines if ln.startswith("| atu | 2 |"))
    # 2 adopting attempts tying none's equal ones; 2 promotions; 2 trials of which 1 lost
    assert "| 2 | 0/2 (0%) | 2/2 | 2 | 0 | 2 (1) |" in atu2


def test_the_spread_over_seed_runs_is_the_mean_and_range(tmp_path):
    from benchmarks.ablation_seeds import markdown, spread

    def run(name: str, correct: int) -> object:
        folder = tmp_path / name / "none"
        folder.mkdir(parents=True)
        rows = [_row("none", f"t{i}", _ev(f"t{i}", i < correct, 2.0)) for i in range(4)]
        (folder / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows))
        return tmp_path / name

    runs = [run("s0", 1), run("s1", 3)]
    table = spread(runs)
    assert table["none"][0]["correct"] == [1.0, 3.0]
    # geomean over all 4 tasks, failures as 1x: 2^(1/4) and 2^(3/4)
    assert [round(v, 4) for v in table["none"][0]["geomean_all"]] == [round(2 ** 0.25, 4), round(2 ** 0.75, 4)]
    assert "| none | 1 | 2 | 2.0 (1.0-3.0) |" in markdown(table, runs)
    from benchmarks.ablation_seeds import plot

    plot(table, tmp_path / "curve.png")
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_saved_summary_stands_in_for_its_run_folder(tmp_path):
    """Run folders are not committed; the summaries --save writes are, and give the same table."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from benchmarks.ablation_seeds import spread

    run = tmp_path / "ablation_s3"
    for e in (0, 1):
        folder = run / "atu"
        folder.mkdir(parents=True, exist_ok=True)
        rows = [_row("atu", f"t{i}", _ev(f"t{i}", i <= e, 1.5), epoch=e) for i in range(3)]
        with (folder / "results.jsonl").open("a") as f:
            f.write("".join(r.model_dump_json() + "\n" for r in rows))
    (run / "compare.json").write_text(json.dumps({"seed": 3, "command": "python y", "commit": "def",
                                                  "wall_s": {"atu": 180.0}}))
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "ablation_seeds.py"
    done = subprocess.run([sys.executable, str(script), str(run), "--save", str(tmp_path / "saved"), "--json"],
                          capture_output=True, text=True, check=True)
    saved = tmp_path / "saved" / "ablation_s3.json"
    assert f"wrote {saved}" in done.stdout
    assert spread([saved]) == spread([run])
    assert spread([saved])["atu"][1]["correct"] == [2.0]       # epoch 2: t0 and t1 correct
    from benchmarks.ablation_seeds import intervals

    assert intervals([saved]) == intervals([run])
    low, high = intervals([saved])["atu"][1]["correct"]
    assert 0.0 <= low < high <= 3.0    # 2 of 3 correct: resamples of the 3 tasks give 0..3
    summary = json.loads(saved.read_text())
    assert (summary["seed"], summary["commit"], summary["wall_s"]) == (3, "def", {"atu": 180.0})
    missing = subprocess.run([sys.executable, str(script), str(tmp_path / "nothing.txt")], capture_output=True,
                             text=True)
    assert missing.returncode != 0 and "neither a run folder nor a summary" in missing.stderr


def test_the_verdict_checks_the_claimed_order_of_the_modes_at_the_last_epoch():
    from benchmarks.ablation_seeds import verdict

    def modes(correct: dict[str, float], geomean: dict[str, float]) -> dict:
        return {m: {0: {"correct": [0.0], "fast_1": [0.0], "geomean_all": [1.0]},
                    1: {"correct": [correct[m]], "fast_1": [0.0], "geomean_all": [geomean[m]]}}
                for m in ("none", "uniform", "atu", "sage")}

    ordered = verdict(modes({"sage": 9, "atu": 9, "uniform": 8, "none": 8},
                            {"sage": 1.3, "atu": 1.2, "uniform": 1.1, "none": 1.0}))[-1]
    assert "epoch 2" in ordered and "correct 9.0 / 9.0 / 8.0 / 8.0: met" in ordered
    assert "1.3000 / 1.2000 / 1.1000 / 1.0000: met" in ordered
    tied = verdict(modes(dict.fromkeys(("sage", "atu", "uniform", "none"), 5.0),
                         dict.fromkeys(("sage", "atu", "uniform", "none"), 1.1)))[-1]
    assert tied.count("not met") == 2          # atu > uniform fails on a tie
    assert verdict({"none": {0: {"correct": [1.0], "fast_1": [0.0], "geomean_all": [1.0]}}}) == []


def test_the_search_headroom_compares_the_same_tasks_at_two_budgets(tmp_path):
    import json

    from benchmarks.search_headroom import compare, markdown

    def run(name: str, speedups: dict[str, float | None], budget: int) -> object:
        folder = tmp_path / name
        (folder / "none").mkdir(parents=True)
        rows = [_row("none", t, _ev(t, s is not None, s)) for t, s in speedups.items()]
        (folder / "none" / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows))
        (folder / "compare.json").write_text(json.dumps({"search_budget": budget, "iterations": 1, "commit": "abc",
                                                         "seed": 0, "cases": 1, "wall_s": {"none": 60.0}}))
        return folder

    base = run("b4", {"a": 1.0, "b": 2.0, "c": None, "d": 1.5}, 4)
    wide = run("b16", {"a": 1.1, "b": 2.0, "c": 3.0, "d": 1.2}, 16)
    result = compare(base, wide)
    # c is correct only in the wide run: left out of the per-task ratios (a 1.1x, b 1x, d 0.8x)
    assert result["both_correct"] == 3 and result["base"]["correct"] == 3 and result["wide"]["correct"] == 4
    assert result["gained"] == {"1.02": 1, "1.05": 1} and result["lost"] == {"1.02": 1, "1.05": 1}
    assert result["largest"][0] == {"task": "a", "ratio": 1.1}
    assert abs(result["geomean_both"]["wide"] - (1.1 * 2.0 * 1.2) ** (1 / 3)) < 1e-9
    assert result["base"]["failures"] == {"incorrect": 1}
    text = markdown(result)
    assert "commit abc:" in text and "| default budget | 4 | 2 | 3/4 |" in text


def test_the_seeds_block_is_written_once_and_kept_when_the_doc_is_regenerated(tmp_path):
    import json

    from benchmarks.ablation_seeds import SEEDS_BEGIN, SEEDS_END, write_doc
    from benchmarks.offline_suite import kept_blocks

    run = tmp_path / "s0"
    run.mkdir()
    (run / "compare.json").write_text(json.dumps({"seed": 0, "command": "python x", "commit": "abc",
                                                  "wall_s": {"none": 120.0, "atu": 60.0}}))
    doc = tmp_path / "ablation.md"
    doc.write_text("# Results\n\nbody\n")
    write_doc(doc, "| table 1 |", [run])
    write_doc(doc, "| table 2 |", [run])                 # rewritten in place, not appended again
    text = doc.read_text()
    assert text.count(SEEDS_BEGIN) == 1 and "| table 2 |" in text and "| table 1 |" not in text
    assert "- seed 0: `python x` at abc, 3 min" in text and text.startswith("# Results\n\nbody\n")
    kept = kept_blocks(text)
    assert kept.strip().startswith(SEEDS_BEGIN) and kept.strip().endswith(SEEDS_END)


def test_a_runs_line_reads_as_a_command_to_rerun_from_the_checkout(tmp_path):
    from benchmarks.ablation_seeds import provenance

    rec = {"seed": 2, "commit": "abc1234", "wall_s": {"none": 600.0, "atu": 60.0},
           "command": f"python benchmarks/offline_suite.py --out {tmp_path}/runs/s2 --seed 2 --resume"}
    line = provenance(rec, tmp_path)
    assert line == ("- seed 2: `python benchmarks/offline_suite.py --out runs/s2 --seed 2 --resume` at abc1234, "
                    "11 min (resumed after a stop: the stopped mode's earlier time is not in it)")
    rec["command"] = rec["command"].replace(" --resume", "")
    assert provenance(rec, tmp_path).endswith("at abc1234, 11 min")


def test_the_pooled_interval_resamples_the_same_tasks_in_every_seed_run():
    from sage.bench.ablation_stats import pooled_intervals

    stat = {"correct": lambda m: float(m.correct)}
    # seed A solves t0 only, seed B t1 only: every joint draw of two tasks gives the two runs
    # 2 + 0, 1 + 1 or 0 + 2 correct, a mean of 1 (independent draws would spread 0..2)
    a = {"t0": _ev("t0", True, 2.0), "t1": _ev("t1", False, 1.0)}
    b = {"t0": _ev("t0", False, 1.0), "t1": _ev("t1", True, 2.0)}
    assert pooled_intervals([a, b], stat) == {"correct": (1.0, 1.0)}
    # one run alone: draws of (t0, t0) and (t1, t1) happen, so the interval is 0..2
    assert pooled_intervals([a], stat) == {"correct": (0.0, 2.0)}
    assert pooled_intervals([a, {"t9": _ev("t9", True, 2.0)}], stat) == {"correct": None}   # no shared task
