"""A bench run meets hostile text: a kernel whose error message carries a lone surrogate,
escape sequences, a markdown beacon and an HTML tag, and a task file whose name is not
UTF-8 (Python hands it over with a lone surrogate). Every task gets its row in
results.jsonl, the run goes on to the tasks after them, and report.md shows the message
as text."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from sage.bench.evaluate import TaskEvaluation
from sage.bench.report import write_report
from sage.bench.runner import BenchConfig, KernelDirSolver, ResultRow, read_rows, row_line, run_bench

FIXTURES = Path(__file__).parents[1] / "fixtures"
BAD_NAME = os.fsdecode(b"bad_\xff")              # "bad_\udcff": a file name that is not UTF-8

HOSTILE_KERNEL = r"""from sage.npu.ascendc import *


def forward(x):
    raise ValueError('a|b\nrelu: correct \ud800 \x1b]0;X\x07 ![b](http://a.b/c) <img onerror=x>')
"""


@pytest.fixture(autouse=True)
def _private_reference_cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "reference-cache"))


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile_bench")
    tasks, kernels = tmp / "tasks", tmp / "kernels"
    tasks.mkdir()
    kernels.mkdir()
    for name in ("relu", "tiny_scale", "row_sum_fp16"):
        shutil.copy(FIXTURES / "tasks" / f"{name}.py", tasks / f"{name}.py")
    shutil.copy(FIXTURES / "tasks" / "relu.py", tasks / f"{BAD_NAME}.py")
    shutil.copy(FIXTURES / "kernels" / "relu_correct.py", kernels / "relu.py")
    shutil.copy(FIXTURES / "kernels" / "relu_correct.py", kernels / f"{BAD_NAME}.py")
    (kernels / "tiny_scale.py").write_text(HOSTILE_KERNEL, encoding="utf-8")
    out = tmp / "run"
    run = run_bench(BenchConfig(target=str(tasks), workers=1, executor="inline", out=out, cases=1),
                    KernelDirSolver(kernels=kernels, cases=1))
    return run, out


def test_every_task_has_its_row_and_the_file_is_utf8_json(hostile_run):
    run, out = hostile_run
    raw = (out / "results.jsonl").read_bytes().decode("utf-8")            # strict
    lines = raw.splitlines()
    assert len(lines) == 4 and all(json.loads(line) for line in lines)
    status = {r.task: r.status for r in read_rows(out / "results.jsonl")}
    assert status == {"relu": "correct", "tiny_scale": "error", "row_sum_fp16": "no_kernel",
                      "bad_\ufffd": "correct"}                              # the run went on past both
    assert {r.task for r in run.rows} == {"relu", "tiny_scale", "row_sum_fp16", BAD_NAME}


def test_the_error_message_is_stored_clean(hostile_run):
    _, out = hostile_run
    row = next(r for r in read_rows(out / "results.jsonl") if r.task == "tiny_scale")
    message = row.evaluation.error.message
    assert "\ud800" not in message and "\x1b" not in message and "\x07" not in message
    assert "a|b\nrelu: correct \ufffd \\x1b]0;X\\x07 ![b](http://a.b/c) <img onerror=x>" in message


def test_the_report_shows_the_message_as_text(hostile_run):
    _, out = hostile_run
    report = write_report(out).read_text(encoding="utf-8")
    line = next(x for x in report.splitlines() if x.startswith("| tiny_scale |"))
    assert "![" not in line and "<img" not in line and "](" not in line
    # As markdown source, capped at 120 characters of text: every escape is visible in the file.
    # The reason column leads with the error's type and case, so the cap falls inside the link.
    assert "ValueError: a\\|b relu: correct \ufffd \\\\x1b\\]0;X\\\\x07 \\!\\[b\\]\\(http\\://a.b/c…" in line
    assert len(re.findall(r"(?<!\\)\|", line)) == 11                    # 10 cells: the pipe stayed inside its own
    assert "relu: correct" not in report.replace(line, "")              # the newline made no row of its own


def test_a_row_that_pydantic_cannot_encode_is_written_repaired():
    """The last line of defence: text that reached a row by a way that does not clean it."""
    row = ResultRow(task="t", status="error", source="kernel text with a lone \udc80",
                    extra={"plan \ud800": ["\udfff"]}, evaluation=TaskEvaluation(task="t", status="error"))
    with pytest.raises(ValueError):
        row.model_dump_json()
    written = json.loads(row_line(row).encode("utf-8"))
    assert written["source"] == "kernel text with a lone \ufffd" and written["extra"] == {"plan \ufffd": ["\ufffd"]}
