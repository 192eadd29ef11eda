"""Progress goes to stderr, only on a terminal, never with --json; stdout holds the results."""

import json
import re

from typer.testing import CliRunner

from sage.cli import app

TERMINAL = {"TTY_COMPATIBLE": "1", "COLUMNS": "100"}      # rich's way to say "this stream is a terminal"


def test_progress_only_on_a_terminal_and_never_with_json(monkeypatch, tmp_path):
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path / "cache"))
    watched = CliRunner().invoke(app, ["ops", "list", "--level", "0"], env=TERMINAL)
    assert watched.exit_code == 0 and "loading tasks" in watched.stderr
    assert "loading tasks" not in watched.stdout and "level0/01_logical_and" in watched.stdout
    piped = CliRunner().invoke(app, ["ops", "list", "--level", "0"])
    assert piped.exit_code == 0 and piped.stderr == ""
    as_json = CliRunner().invoke(app, ["ops", "list", "--level", "0", "--json"], env=TERMINAL)
    assert as_json.stderr == "" and json.loads(as_json.stdout)


def test_a_cold_ops_list_compiles_nothing(monkeypatch, tmp_path):
    """The first `sage ops list` on an empty cache answers without the compiler (it took 268 s)."""
    import sage.cli.plans as plans

    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(plans, "decide", lambda path: (_ for _ in ()).throw(AssertionError("compiled")))
    result = CliRunner().invoke(app, ["ops", "list"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert re.search(r"\d+ task\(s\) not decided yet", " ".join(result.stdout.split()))


def test_synth_prints_its_attempts_and_its_summary_on_stdout(monkeypatch, tmp_path):
    """`sage synth ... | tee log` keeps both; a terminal sees the attempts redrawn on stderr."""
    from tests.agent.conftest import TINY_RELU

    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny_relu.py").write_text(TINY_RELU)
    args = ["synth", "--task", "tiny_relu.py", "--memory-url", f"sqlite:///{tmp_path / 'm.db'}", "--iterations", "0"]
    piped = CliRunner().invoke(app, args, env={"COLUMNS": "100"})
    assert piped.exit_code == 0, piped.output
    assert "sage synth tiny_relu (offline)" in piped.stdout and "roofline fraction" in piped.stdout
    assert piped.stderr == ""
    watched = CliRunner().invoke(app, [*args, "--out", "again.py"], env=TERMINAL)
    assert watched.exit_code == 0 and "roofline fraction" in watched.stdout
    as_json = CliRunner().invoke(app, [*args, "--out", "third.py", "--json"], env=TERMINAL)
    assert as_json.stderr == "" and json.loads(as_json.stdout)["status"] == "correct"
