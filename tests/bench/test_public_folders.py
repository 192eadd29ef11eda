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
