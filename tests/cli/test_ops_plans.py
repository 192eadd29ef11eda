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
# nonzero: an output whose shape depends on the values, which the offline compiler refuses.
NONZERO = ELEMENTWISE.replace("torch.sigmoid(x) * 2.0", "torch.nonzero(x)")


def test_plans_are_decided_and_cached(tmp_path):
    files = {}
    for name, text in (("elementwise", ELEMENTWISE), ("nonzero", NONZERO)):
        files[name] = tmp_path / f"{name}.py"
        files[name].write_text(text)
    cache = tmp_path / "cache" / PLANS_FILE
    calls = []
    plans = offline_plans(list(files.values()), cache, workers=1, on_progress=lambda d, t: calls.append((d, t)))
    assert plans[files["elementwise"]] is None
    assert "nonzero" in plans[files["nonzero"]]
    assert calls[-1] == (2, 2) and cache.exists()
    calls.clear()
    assert offline_plans(list(files.values()), cache, workers=1, on_progress=lambda d, t: calls.append(1)) == plans
    assert calls == []                                  # answered from the cache
    files["nonzero"].write_text(ELEMENTWISE)               # a changed task file is asked again
    assert offline_plans([files["nonzero"]], cache, workers=1)[files["nonzero"]] is None


def test_ops_list_shows_the_offline_plans(monkeypatch, tmp_path):
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path / "cache"))
    # Without --plans nothing is compiled: the cold list answers at once, every plan undecided.
    cold = CliRunner().invoke(app, ["ops", "list", "--level", "4", "--json"])
    assert cold.exit_code == 0, cold.output
    assert {e["offline_plan"] for e in json.loads(cold.stdout)} == {None}
    assert not (tmp_path / "cache" / PLANS_FILE).exists()
    table = CliRunner().invoke(app, ["ops", "list", "--level", "4"], env={"COLUMNS": "100"})
    assert "offline plan" not in table.stdout and "not decided yet: `sage ops list --plans`" in table.stdout
    result = CliRunner().invoke(app, ["ops", "list", "--level", "4", "--plans", "--json"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""                  # --json: no progress
    entries = {e["name"]: e for e in json.loads(result.stdout)}
    assert entries["level4/02_ffn"]["offline_plan"] is True
    msda = entries["level4/11_msda"]
    # the compiler names the op it cannot lower (grid_sample has no lowering)
    assert msda["offline_plan"] is False and msda["offline_reason"].startswith("cannot compile: aten.grid_sampler")
    # Decided once, shown from the cache by a plain `sage ops list` afterwards.
    table = CliRunner().invoke(app, ["ops", "list", "--level", "4"], env={"COLUMNS": "100"})
    assert "offline plan" in table.stdout and "with an offline plan" in table.stdout
    assert "not decided" not in table.stdout
    hidden = CliRunner().invoke(app, ["ops", "list", "--level", "4", "--no-plans"], env={"COLUMNS": "100"})
    assert "offline plan" not in hidden.stdout
