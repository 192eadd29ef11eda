"""A memory database records which sage wrote it and on which preset each episode ran; an
older sage refuses a database a newer one wrote, and says why."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from sage import __version__
from sage.cli.memory import app
from sage.memory import Memory, Outcome, SchemaVersionError
from sage.memory.engine import open_engine
from sage.memory.migrations import upgrade, version_key


def _writer(url: str) -> str:
    with Memory(url) as memory, memory.engine.connect() as conn:
        return conn.execute(text("SELECT value FROM meta WHERE key = 'sage_version'")).scalar()


def test_a_new_database_is_stamped_and_episodes_carry_version_and_preset(memory_url) -> None:
    with Memory(memory_url) as memory:
        episode = memory.start_episode(task="softmax", op_tags=[], model="m", mode="atu", seed=3, key="k1",
                                       preset="ascend910b4")
        episode.finish(Outcome(executed=True, correct=True, speedup=1.5))
        stored = memory.finished_episode("k1")
        stats = memory.stats()
    assert (stored.sage_version, stored.preset) == (__version__, "ascend910b4")
    assert stats.sage_version == __version__ and stats.episodes_by_preset == {"ascend910b4": 1}
    assert _writer(memory_url) == __version__


def test_a_database_a_newer_sage_wrote_is_refused(memory_url) -> None:
    Memory(memory_url).close()
    engine = open_engine(memory_url)
    try:
        upgrade(engine, sage_version="99.1.0")       # what opening it with sage 99.1.0 does
    finally:
        engine.dispose()
    with pytest.raises(SchemaVersionError) as refused:
        Memory(memory_url)
    message = str(refused.value)
    assert f"written by sage 99.1.0, newer than this sage {__version__}" in message and "upgrade sage" in message


def test_an_older_writer_is_replaced_by_this_version(memory_url) -> None:
    Memory(memory_url).close()
    engine = open_engine(memory_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE meta SET value = '0.0.1' WHERE key = 'sage_version'"))
    engine.dispose()
    assert _writer(memory_url) == __version__


def test_the_cli_refuses_with_one_line(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    Memory(url).close()
    engine = open_engine(url)
    upgrade(engine, sage_version="7.0")
    engine.dispose()
    for command in (["stats"], ["inspect"], ["show", "E1"], ["export", str(tmp_path / "x.json")]):
        result = CliRunner().invoke(app, [*command, "--memory-url", url])
        assert result.exit_code == 2, result.output
        assert result.output.count("\n") == 1 and "written by sage 7.0" in result.output
        assert "Traceback" not in result.output


def test_stats_and_export_name_the_writer(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    Memory(url).close()
    shown = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["stats", "--memory-url", url])
    assert f"sage {__version__}" in shown.output
    with Memory(url) as memory:
        assert memory.export_data()["sage_version"] == __version__


@pytest.mark.parametrize("text_, key", [("0.10.2rc1", (0, 10, 2)), ("1.2", (1, 2)), ("dev", ())])
def test_version_key(text_, key) -> None:
    assert version_key(text_) == key
    assert version_key("0.10.0") > version_key("0.9.9")
