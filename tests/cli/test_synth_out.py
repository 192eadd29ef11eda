"""The default --out of `sage synth` never overwrites an earlier kernel; an explicit --out
replaces its file and says so."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage.cli import app
from sage.cli.synth import free_path
from tests.agent.conftest import TINY_RELU

pytestmark = pytest.mark.slow



def test_free_path(tmp_path):
    first = tmp_path / "op_kernel.py"
    assert free_path(first) == first
    first.write_text("earlier")
    assert free_path(first) == tmp_path / "op_kernel-2.py"
    (tmp_path / "op_kernel-2.py").write_text("earlier too")
    assert free_path(first) == tmp_path / "op_kernel-3.py"


def test_the_default_out_keeps_the_earlier_kernel(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path / "cache"))
    task = tmp_path / "tiny.py"
    task.write_text(TINY_RELU)
    earlier = tmp_path / "tiny_kernel.py"
    earlier.write_text("# a kernel from yesterday\n")
    args = ["synth", "--task", str(task), "--iterations", "0", "--memory", "none",
            "--memory-url", f"sqlite:///{tmp_path / 'm.db'}"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert earlier.read_text() == "# a kernel from yesterday\n"
    assert "def forward(" in (tmp_path / "tiny_kernel-2.py").read_text()
    assert "tiny_kernel-2.py (tiny_kernel.py exists: kept)" in result.output

    explicit = CliRunner().invoke(app, [*args, "--out", str(earlier)], env={"COLUMNS": "200"})
    assert explicit.exit_code == 0, explicit.output
    assert "def forward(" in earlier.read_text() and "replaced the file there, as --out asked" in explicit.output
