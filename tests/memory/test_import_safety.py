"""`sage memory import` on hostile files: one line, exit code 2, and the database unchanged."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable

import pytest
from typer.testing import CliRunner

from sage.cli.memory import app
from sage.memory import ImportFormatError, Memory
from sage.memory.export_rows import check_against_schema

from .helpers import WIN, run_episode, seed_experiences

runner = CliRunner(env={"COLUMNS": "80"})


def _edit(change: Callable[[dict], None]) -> Callable[[dict], str]:
    def make(good: dict) -> str:
        bad = copy.deepcopy(good)
        change(bad)
        return json.dumps(bad)
    return make


def _set(table: str, field: str, value: object) -> Callable[[dict], str]:
    return _edit(lambda d: d["tables"][table][0].__setitem__(field, value))


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


# name -> (file text from the good export, words the one-line error must hold)
HOSTILE: dict[str, tuple[Callable[[dict], str], str]] = {
    "50 MB title": (_set("experience", "title", "x" * 50_000_000), "title: String should have at most 300"),
    "23 MB hints": (_set("experience", "hints", {"blob": "x" * 23_000_000}), "hints: Value error, 23000011 bytes"),
    "schema_version true": (_edit(lambda d: d.__setitem__("schema_version", True)), "schema_version True"),
    "schema_version 2.0": (_edit(lambda d: d.__setitem__("schema_version", 2.0)), "schema_version 2.0"),
    "id 2**70": (_set("experience", "id", 2**70), "experience[0].id: Input should be less than or equal to 2147483647"),
    "100k nested levels": (lambda good: _nested(100_000), "nested too deeply"),
    "nested hints": (_set("experience", "hints", json.loads('{"a":' * 20 + "1" + "}" * 20)), "deeper than 8"),
    "not JSON": (lambda good: "PK\x03\x04 this is a zip file", "not JSON (Expecting value at line 1, column 1)"),
    "truncated": (lambda good: json.dumps(good)[: len(json.dumps(good)) // 2], "not JSON"),
    "NaN utility": (_set("experience", "utility", float("nan")), "utility: Input should be a finite number"),
    "utility 5": (_set("experience", "utility", 5.0), "utility: Input should be less than or equal to 1"),
    "negative count": (_set("experience", "retrieved", -1), "retrieved: Input should be greater than or equal to 0"),
    "bool for a count": (_set("experience", "adopted", True), "adopted: Input should be a valid integer"),
    "int for a bool": (_set("episode", "correct", 1), "correct: Input should be a valid boolean"),
    "unknown column": (_set("rule", "owner", "me"), "rule[0].owner: Extra inputs are not permitted"),
    "zoned timestamp": (_set("episode", "started_at", "2026-01-01T00:00:00+02:00"), "should not have timezone"),
    "both adoption targets": (_set("adoption", "rule_id", 1), "exactly one of experience_id and rule_id"),
    "duplicate episode key": (_edit(lambda d: [e.__setitem__("episode_key", "same") for e in d["tables"]["episode"]]),
                              "inconsistent (duplicate id or key"),
}


@pytest.fixture
def taught(memory_url, tmp_path) -> tuple[str, dict]:
    """A memory with experiences, a rule, keyed episodes, adoptions; and its export."""
    memory = Memory(memory_url)
    ids = seed_experiences(memory)
    for task in ("softmax", "layer_norm", "rms_norm"):
        run_episode(memory, task=task, mode="sage", adopt=[ids[0]])
    episode = memory.start_episode(task="gelu", op_tags=[], model="m", mode="atu", seed=0, key="run:0:gelu")
    episode.record_attempt(source="k", status="correct", speedup=1.5, roofline_fraction=0.5)
    episode.finish(WIN)
    exported = memory.export_data()
    memory.close()
    assert exported["tables"]["rule"] and exported["tables"]["adoption"]
    return memory_url, exported


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_file_is_refused_in_one_line_and_changes_nothing(case, taught, tmp_path) -> None:
    url, good = taught
    make, words = HOSTILE[case]
    path = tmp_path / "hostile.json"
    path.write_text(make(good), encoding="utf-8")
    # --replace: the worst case, a reset and a load in one transaction that must roll back whole.
    result = runner.invoke(app, ["import", str(path), "--replace", "--memory-url", url])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2, result.output[:500]
    assert len(lines) == 1 and lines[0].startswith("error: ") and len(lines[0]) < 400, lines[:3]
    assert words in lines[0]
    with Memory(url) as memory:
        assert memory.export_data() == good


def test_the_api_refuses_the_same_documents(taught) -> None:
    url, good = taught
    with Memory(url) as memory:
        bad = json.loads(_set("episode", "seed", 2**40)(good))
        with pytest.raises(ImportFormatError, match=r"tables\.episode\[0\]\.seed"):
            memory.import_data(bad, replace=True)
        assert memory.export_data() == good


def test_export_reset_import_round_trips_with_keys(taught, tmp_path) -> None:
    url, good = taught
    assert any(e["episode_key"] == "run:0:gelu" for e in good["tables"]["episode"])
    path = tmp_path / "export.json"
    path.write_text(json.dumps(good))
    assert runner.invoke(app, ["reset", "--yes", "--memory-url", url]).exit_code == 0
    result = runner.invoke(app, ["import", str(path), "--memory-url", url])
    assert result.exit_code == 0, result.output
    with Memory(url) as memory:
        assert memory.export_data() == good
        assert memory.finished_episode("run:0:gelu").attempts[0].speedup == 1.5


def test_an_export_of_schema_version_2_still_imports(taught) -> None:
    url, good = taught
    old = copy.deepcopy(good)
    old["schema_version"] = 2
    for row in old["tables"]["episode"]:
        del row["episode_key"]
    with Memory(url) as memory:
        memory.import_data(old, replace=True)
        assert all(e["episode_key"] is None for e in memory.export_data()["tables"]["episode"])


def test_the_export_models_match_the_tables() -> None:
    check_against_schema()
