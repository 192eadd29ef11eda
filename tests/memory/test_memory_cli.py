"""`sage memory ...` through typer's runner, on a SQLite file."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sage.cli.memory import app
from sage.memory import Memory

from .helpers import run_episode, seed_experiences

runner = CliRunner(env={"COLUMNS": "200"})


def _taught(url: str) -> None:
    memory = Memory(url)
    e1, e2, _ = seed_experiences(memory)
    for task in ("softmax", "layer_norm", "rms_norm"):
        run_episode(memory, task=task, mode="sage", adopt=[e1])
    memory.close()


def test_empty_memory_gives_a_hint(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    result = runner.invoke(app, ["inspect", "--memory-url", url])
    assert result.exit_code == 0 and "sage synth --op softmax" in result.output


def test_inspect_show_stats(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    _taught(url)
    result = runner.invoke(app, ["inspect", "--memory-url", url])
    assert result.exit_code == 0, result.output
    assert "Accumulate softmax sums in fp32" in result.output and "consolidated" in result.output
    assert "Resident rules: 1 (" in result.output and "/600 tokens" in result.output

    data = json.loads(runner.invoke(app, ["inspect", "--json", "--memory-url", url]).output)
    e1 = next(e for e in data["experiences"] if e["id"] == "E1")
    # Learned on "seed" (helpers.seed_experiences), adopted on softmax, layer_norm and rms_norm.
    assert (e1["adopted"], e1["operators"], e1["adopted_on"], e1["status"]) == (3, 4, 3, "consolidated")
    e3 = next(e for e in data["experiences"] if e["id"] == "E3")
    assert (e3["operators"], e3["adopted_on"]) == (1, 0)       # learned on one operator, never adopted
    assert [r["id"] for r in data["rules"]] == ["R1"] and data["resident_tokens"] == data["rules"][0]["tokens"]

    rules = runner.invoke(app, ["inspect", "--rules", "--memory-url", url])
    assert f"{data['resident_tokens']}/600 tokens" in rules.output and "R1" in rules.output

    only = json.loads(runner.invoke(app, ["inspect", "--json", "--op", "layer_norm", "--memory-url", url]).output)
    assert [e["id"] for e in only["experiences"]] == ["E1"]

    shown = runner.invoke(app, ["show", "e1", "--memory-url", url])
    assert shown.exit_code == 0 and "Adoption history" in shown.output and "rms_norm" in shown.output
    detail = json.loads(runner.invoke(app, ["show", "R1", "--json", "--memory-url", url]).output)
    assert detail["rule"]["sources"] == ["E1"]

    stats = json.loads(runner.invoke(app, ["stats", "--json", "--memory-url", url]).output)
    assert stats["episodes"] == 4 and stats["rules"] == {"resident": 1}


def test_export_reset_import_and_errors(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    _taught(url)
    out1, out2 = tmp_path / "a.json", tmp_path / "b.json"
    assert runner.invoke(app, ["export", str(out1), "--memory-url", url]).exit_code == 0

    refused = runner.invoke(app, ["reset", "--memory-url", url])
    assert refused.exit_code == 2 and "--yes" in refused.output
    assert runner.invoke(app, ["reset", "--yes", "--memory-url", url]).exit_code == 0
    assert "sage synth" in runner.invoke(app, ["inspect", "--memory-url", url]).output

    assert runner.invoke(app, ["import", str(out1), "--memory-url", url]).exit_code == 0
    runner.invoke(app, ["export", str(out2), "--memory-url", url])
    assert json.loads(out1.read_text()) == json.loads(out2.read_text())

    again = runner.invoke(app, ["import", str(out1), "--memory-url", url])
    assert again.exit_code == 2 and "not empty" in again.output
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    assert "bad.json: not JSON (Expecting property name" in runner.invoke(app, ["import", str(bad), "--memory-url", url]).output
    bad.write_text(json.dumps({"format": "sage-memory", "schema_version": 2, "tables": {"experience": [{"id": "x"}]}}))
    result = runner.invoke(app, ["import", str(bad), "--replace", "--memory-url", url])
    assert result.exit_code == 2 and "tables.experience[0]" in result.output

    unknown = runner.invoke(app, ["show", "E99", "--memory-url", url])
    assert unknown.exit_code == 2 and "no experience E99" in unknown.output
    assert "not a memory id" in runner.invoke(app, ["show", "X1", "--memory-url", url]).output
    bad_url = runner.invoke(app, ["stats", "--memory-url", "nosuch://x"])
    assert bad_url.exit_code == 2 and "unsupported memory URL" in bad_url.output
    assert bad_url.exception is None or isinstance(bad_url.exception, SystemExit)


def test_an_unknown_operator_gets_the_nearest_names(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    _taught(url)
    result = runner.invoke(app, ["inspect", "--op", "sofmax", "--memory-url", url])
    assert result.exit_code == 0 and "No experiences for operator 'sofmax' (did you mean softmax?)" in result.output
    far = runner.invoke(app, ["inspect", "--op", "conv3d", "--memory-url", url])
    assert "did you mean" not in far.output


def test_show_names_where_an_experience_was_learned_and_adopted(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    _taught(url)
    shown = runner.invoke(app, ["show", "E1", "--memory-url", url])
    assert "learned on seed" in shown.output
    assert "adopted on 3 operator(s): layer_norm, rms_norm, softmax" in shown.output
