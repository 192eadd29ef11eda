"""An unwritable HOME or memory path: every command that writes there says so in one line
with exit code 2, before any work; the commands that write nothing there still run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage.cli import app

FIXTURES = Path(__file__).parents[1] / "fixtures"
RELU_TASK = FIXTURES / "tasks" / "relu.py"
RELU_KERNEL = FIXTURES / "kernels" / "relu_correct.py"

NEEDS_HOME = [
    ["synth", "--op", "relu", "--iterations", "0"],
    ["npu", "run", str(RELU_KERNEL), "--task", str(RELU_TASK)],
    ["bench", "reference", "--op", "relu"],
    ["bench", str(RELU_TASK), "--reference-only", "--workers", "1", "--out", "{tmp}/run"],
    ["memory", "inspect"], ["memory", "show", "E1"], ["memory", "stats"], ["memory", "export", "{tmp}/x.json"],
    ["memory", "reset", "--yes"],
]


def _invoke(args: list[str], tmp: Path, home: Path):
    env = {"HOME": str(home), "SAGE_CACHE_DIR": None, "SAGE_MEMORY_URL": None}
    return CliRunner().invoke(app, [a.format(tmp=tmp) for a in args], env=env)


def _one_line_error(result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.output.count("\n") == 1, result.output
    assert result.output.startswith("error: cannot write") or "read-only" in result.output
    for word in words:
        assert word in result.output


@pytest.mark.parametrize("args", NEEDS_HOME, ids=lambda a: " ".join(a[:2]))
def test_home_that_is_a_file(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    home = tmp_path / "home-is-a-file"
    home.write_text("")
    _one_line_error(_invoke(args, tmp_path, home), str(home / ".sage"), "set HOME")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permission bits: a read-only ~/.sage "
                                               "cannot be made here (the HOME-is-a-file test covers root)")
@pytest.mark.parametrize("args", NEEDS_HOME, ids=lambda a: " ".join(a[:2]))
def test_read_only_sage_folder(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "home" / ".sage" / "cache").mkdir(parents=True)
    for folder in (tmp_path / "home" / ".sage" / "cache", tmp_path / "home" / ".sage"):
        folder.chmod(0o500)
    try:
        _one_line_error(_invoke(args, tmp_path, tmp_path / "home"))
    finally:
        for folder in (tmp_path / "home" / ".sage", tmp_path / "home" / ".sage" / "cache"):
            folder.chmod(0o700)


def test_an_unwritable_memory_url(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path / "cache"))
    for args in (["memory", "stats"], ["synth", "--op", "relu"]):
        result = CliRunner().invoke(app, [*args, "--memory-url", f"sqlite:///{blocker}/m.db"])
        _one_line_error(result, "the memory database")


@pytest.mark.parametrize("args", [["ops", "list", "--level", "0", "--no-plans"], ["npu", "presets"]])
def test_commands_that_write_nothing_there_still_run(tmp_path, args):
    home = tmp_path / "home-is-a-file"
    home.write_text("")
    result = _invoke(args, tmp_path, home)
    assert result.exit_code == 0, result.output
