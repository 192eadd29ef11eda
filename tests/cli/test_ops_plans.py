"""`sage ops list` says which tasks the offline synthesizer has a plan for, and caches it."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage.cli import app
from sage.cli.plans import PLANS_FILE, offline_plans

pytestmark = pytest.mark.slow

ELEMENTWISE = '''
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.sigmoid(x) * 2.0


def get_input_groups():
    return [[torch.randn(64, 128)], [torch.randn(8, 33).half()]]
'''
# A running sum along rows: a scan, which none of the offline templates (elementwise, row
# reductions, matmul) computes.
SCAN = ELEMENTWISE.replace("torch.sigmoid(x) * 2.0", "torch.cumsum(x, dim=1)")


def test_plans_are_decided_and_cached(tmp_path):
    files = {}
    for name, text in (("elementwise", ELEMENTWISE), ("scan", SCAN)):
        files[name] = tmp_path / f"{name}.py"
        files[name].write_text(text)
    cache = tmp_path / "cache" / PLANS_FILE
    calls = []
    plans = offline_plans(list(files.values()), cache, workers=1, on_progress=lambda d, t: calls.append((d, t)))
    assert plans[files["elementwise"]] is None
    assert "cumsum" in plans[files["scan"]]
    assert calls[-1] == (2, 2) and cache.exists()
    calls.clear()
    assert offline_plans(list(files.values()), cache, workers=1, on_progress=lambda d, t: calls.append(1)) == plans
    assert calls == []                                  # answered from the cache
    files["scan"].write_text(ELEMENTWISE)               # a changed task file is asked again
    assert offline_plans([files["scan"]], cache, workers=1)[files["scan"]] is None


def test_ops_list_shows_the_offline_plans(monkeypatch, tmp_path):
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(app, ["ops", "list", "--level", "3", "--json"])
    assert result.exit_code == 0, result.output
    entries = {e["name"]: e for e in json.loads(result.stdout)}
    assert entries["level3/01_batch_matmul"]["offline_plan"] is True
    conv = entries["level3/07_conv_standard2d"]
    # the compiler names the op of conv's img2col decomposition it cannot lower
    assert conv["offline_plan"] is False and conv["offline_reason"].startswith("cannot compile: aten.")
    table = CliRunner().invoke(app, ["ops", "list", "--level", "3"], env={"COLUMNS": "100"})
    assert "offline plan" in table.stdout and "with an offline plan" in table.stdout
