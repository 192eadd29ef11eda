"""benchmarks/public_folders.py's per-folder counts from hand-made rows: a folder whose run
stopped part-way shows its unrun files, and the commit the rows were made at."""

from __future__ import annotations

import json

from benchmarks.public_folders import RUN_INFO, folder_summary, markdown
from sage.bench.evaluate import TaskEvaluation
from sage.bench.runner import ResultRow

TASK = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n" \
       "def get_inputs():\n    return [torch.ones(2)]\ndef get_init_inputs():\n    return []\n"


def _row(task: str, correct: bool, speedup: float | None) -> ResultRow:
    status = "correct" if correct else "incorrect"
    ev = TaskEvaluation(task=task, level=None, status=status, executed=True, correct=correct, speedup=speedup)
    return ResultRow(task=task, level=None, status=status, evaluation=ev, seed=0)


def test_a_part_run_folder_counts_its_unrun_files_and_names_its_commit(tmp_path):
    folder, out = tmp_path / "reference" / "math", tmp_path / "out" / "math"
    folder.mkdir(parents=True)
    out.mkdir(parents=True)
    for name in ("a", "b", "c"):
        (folder / f"{name}.py").write_text(TASK)
    (folder / "helper.py").write_text("SCALE = 2\n")          # imported by tasks, not a task
    rows = [_row("a", True, 2.0), _row("b", True, 0.5)]
    (out / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows))
    (out / RUN_INFO).write_text(json.dumps({"sage_commits": ["abc1234"]}))

    summary = folder_summary(out, folder)
    assert (summary["files"], summary["unrun"], summary["loaded"], summary["correct"], summary["faster"]) == \
        (3, 1, 2, 2, 1)

    class Args:
        cases, workers, max_input_gb, task_timeout, commit, folders = None, 1, 4.0, 300.0, "460a972", None

    table = markdown({"math": summary}, Args(), unrun=["fuse"])
    assert "| math | 3 (1 not run) | 2 | 2 | 1 | 0 | 0 | abc1234 |" in table
    assert "Folders not run yet (no row): fuse." in table
    assert "another limit per task" not in table    # no limit recorded: the header's holds

    (out / RUN_INFO).write_text(json.dumps({"sage_commits": ["abc1234"], "task_timeout_s": 1500}))
    table = markdown({"math": folder_summary(out, folder)}, Args(), unrun=[])
    assert "Run with another limit per task: math (1500 s)." in table


def test_a_doc_keeps_the_rows_of_folders_this_run_did_not_make(tmp_path, monkeypatch):
    """Run folders are not in the repository: a later run of one folder rewrites its row and
    keeps the others' (with their commits, limits and over-budget tasks), first from the
    doc's own table, then from data/public_folders.json written beside it."""
    import sys

    from benchmarks import public_folders

    doc = tmp_path / "docs" / "results.md"
    doc.parent.mkdir()
    doc.write_text(f"# R\n\n{public_folders.BEGIN}\n| folder | files | loaded | correct | faster | over budget | "
                   "torch_npu | sage at |\n|---|---|---|---|---|---|---|---|\n"
                   "| loss | 7 | 7 | 0 | 0 | 0 | 0 | e9c6f34 |\n"
                   "| npukernelbench_level1 | 31 (24 not run) | 7 | 2 | 1 | 1 | 0 | 39ac132 |\n"
                   "| all | 38 | 14 | 2 | 1 | 1 | 0 | |\n\nOver the input budget: level1/17_adam_w.\n\n"
                   f"Run with another limit per task: loss (900 s).\n{public_folders.END}\n")
    checkout = tmp_path / "mkb"
    for name in ("loss", "math", "npukernelbench_level1"):
        (checkout / "reference" / name).mkdir(parents=True)
    (checkout / "reference" / "math" / "a.py").write_text(TASK)
    out = tmp_path / "out"
    (out / "math").mkdir(parents=True)
    (out / "math" / "results.jsonl").write_text(_row("a", True, 3.0).model_dump_json() + "\n")
    (out / "math" / RUN_INFO).write_text(json.dumps({"sage_commits": ["fff0000"]}))
    argv = ["public_folders.py", str(checkout), "--out", str(out), "--report-only", "--doc", str(doc)]
    for _ in range(2):                     # the second time from the data file: the same table
        monkeypatch.setattr(sys, "argv", argv)
        public_folders.main()
        text = doc.read_text()
        assert "| loss | 7 | 7 | 0 | 0 | 0 | 0 | e9c6f34 |" in text
        assert "| math | 1 | 1 | 1 | 1 | 0 | 0 | fff0000 |" in text
        assert "| npukernelbench_level1 | 31 (24 not run) | 7 | 2 | 1 | 1 | 0 | 39ac132 |" in text
        assert "Over the input budget: level1/17_adam_w." in text
        assert "Run with another limit per task: loss (900 s)." in text
        assert "2 rows kept from an earlier table" in text
    assert (doc.parent / "data" / "public_folders.json").exists()


def test_the_time_split_sums_the_rows_parts_and_counts_stopped_tasks_apart(tmp_path):
    from sage.bench.evaluate import Split

    out = tmp_path / "out"
    out.mkdir()
    ev = TaskEvaluation(task="a", status="correct", executed=True, correct=True, wall_s=50.0,
                        split=Split(reference=10.0, time_model=5.0, simulate=30.0, check=2.0))
    rows = [ResultRow(task="a", level=None, status="correct", evaluation=ev, seed=0, wall_s=80.0),
            ResultRow(task="b", level=None, status="no_kernel", seed=0, wall_s=12.0,
                      evaluation=TaskEvaluation(task="b", status="no_kernel")),
            ResultRow(task="c", level=None, status="timeout", seed=0,
                      evaluation=TaskEvaluation(task="c", status="error"))]
    (out / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows))
    (out / RUN_INFO).write_text(json.dumps({"sage_commits": ["abc1234"], "wall_s": 600.0}))
    seconds = folder_summary(out)["seconds"]
    # the job outside its evaluation is the compile: 80 - 50
    assert seconds == {"compile": 30.0, "reference": 10.0, "time_model": 5.0, "simulate": 30.0, "check": 2.0,
                       "unsplit": 12.0, "timeouts": 1, "wall": 600.0}

    class Args:
        cases, workers, max_input_gb, task_timeout, commit, folders = None, 2, 4.0, 300.0, "460a972", None

    table = markdown({"math": folder_summary(out)}, Args(), unrun=[])
    assert "| math | 10.0 | 0.5 | 0.2 | 0.1 | 0.5 | 0.0 | 0.2 | 1 |" in table


def test_rows_made_before_the_split_have_none():
    from benchmarks.public_folders import time_split

    assert time_split([_row("a", True, 2.0)], None) is None
