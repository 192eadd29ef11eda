"""Opening a database written at schema version 1 upgrades it in place, keeping its rows."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, inspect, text

from sage.memory import Memory, Outcome, SchemaVersionError
from sage.memory.schema import SCHEMA_VERSION, Base

# The version-1 schema, frozen as it was shipped: no attempt.roofline_fraction, no lookup indexes.
V1_DDL = """
CREATE TABLE schema_version (version INTEGER NOT NULL PRIMARY KEY, applied_at TIMESTAMP NOT NULL);
CREATE TABLE experience (id {pk}, title VARCHAR(300) NOT NULL, advice TEXT NOT NULL, tags JSON NOT NULL,
  origin_operator VARCHAR(200), hints JSON NOT NULL, utility FLOAT NOT NULL, retrieved INTEGER NOT NULL,
  adopted INTEGER NOT NULL, adopted_succeeded INTEGER NOT NULL, status VARCHAR(20) NOT NULL,
  created_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL,
  CONSTRAINT experience_status CHECK (status IN ('active', 'consolidated', 'retired')));
CREATE TABLE rule (id {pk}, text TEXT NOT NULL, sources JSON NOT NULL, utility FLOAT NOT NULL, shown INTEGER NOT NULL,
  adopted INTEGER NOT NULL, adopted_succeeded INTEGER NOT NULL, tokens INTEGER NOT NULL, status VARCHAR(20) NOT NULL,
  created_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL,
  CONSTRAINT rule_status CHECK (status IN ('resident', 'demoted')));
CREATE TABLE episode (id {pk}, task VARCHAR(200) NOT NULL, op_tags JSON NOT NULL, model VARCHAR(200) NOT NULL,
  mode VARCHAR(20) NOT NULL, seed INTEGER NOT NULL, executed BOOLEAN NOT NULL, correct BOOLEAN NOT NULL,
  speedup FLOAT, cycles INTEGER, roofline_fraction FLOAT, reward FLOAT NOT NULL, iterations INTEGER NOT NULL,
  tokens INTEGER NOT NULL, time_s FLOAT NOT NULL, started_at TIMESTAMP NOT NULL, finished_at TIMESTAMP NOT NULL);
CREATE TABLE retrieval (id {pk}, episode_id INTEGER NOT NULL REFERENCES episode (id) ON DELETE CASCADE,
  experience_id INTEGER NOT NULL REFERENCES experience (id) ON DELETE CASCADE, query_index INTEGER NOT NULL,
  rank INTEGER NOT NULL, score FLOAT NOT NULL);
CREATE TABLE adoption (id {pk}, episode_id INTEGER NOT NULL REFERENCES episode (id) ON DELETE CASCADE,
  experience_id INTEGER REFERENCES experience (id) ON DELETE CASCADE, rule_id INTEGER REFERENCES rule (id) ON DELETE CASCADE,
  attempt INTEGER NOT NULL, reason TEXT NOT NULL,
  CONSTRAINT adoption_one_target CHECK ((experience_id IS NULL) <> (rule_id IS NULL)));
CREATE TABLE attempt (id {pk}, episode_id INTEGER NOT NULL REFERENCES episode (id) ON DELETE CASCADE,
  number INTEGER NOT NULL, source TEXT NOT NULL, status VARCHAR(40) NOT NULL, error_type VARCHAR(80),
  error_message TEXT, cycles INTEGER, speedup FLOAT);
INSERT INTO schema_version VALUES (1, '2026-01-01 00:00:00');
INSERT INTO experience VALUES (1, 'Old tip', 'Use two buffers for softmax rows.', '["softmax"]', 'softmax', '{{}}',
  0.25, 4, 2, 2, 'active', '2026-01-01 00:00:00', '2026-01-01 00:00:00');
INSERT INTO episode VALUES (1, 'softmax', '[]', 'm', 'atu', 0, {true}, {true}, 1.5, 100, 0.5, 0.5, 1, 0, 0.0,
  '2026-01-01 00:00:00', '2026-01-01 00:00:00');
INSERT INTO attempt VALUES (1, 1, 1, 'kernel', 'correct', NULL, NULL, 100, 1.5);
INSERT INTO adoption VALUES (1, 1, 1, NULL, 1, 'old reason');
"""


def _write_v1(url: str) -> None:
    engine = create_engine(url)
    postgres = engine.dialect.name == "postgresql"
    ddl = V1_DDL.format(pk="SERIAL PRIMARY KEY" if postgres else "INTEGER NOT NULL PRIMARY KEY",
                        true="TRUE" if postgres else "1")
    with engine.begin() as conn:
        for statement in filter(str.strip, ddl.split(";")):
            conn.execute(text(statement))
        if postgres:  # explicit ids do not advance a serial
            for table in ("experience", "episode", "attempt", "adoption"):
                conn.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), 1)"))
    engine.dispose()


def test_a_version_1_database_is_upgraded_on_open(memory_url) -> None:
    _write_v1(memory_url)
    memory = Memory(memory_url)
    try:
        assert memory.upgraded_from == 1
        old = memory.show("E1")
        assert (old.experience.title, old.experience.utility, old.experience.adopted) == ("Old tip", 0.25, 2)
        assert [h.reason for h in old.history] == ["old reason"]

        shape = inspect(memory.engine)
        for table in Base.metadata.sorted_tables:
            assert {c["name"] for c in shape.get_columns(table.name)} == {c.name for c in table.columns}, table.name
            declared = {tuple(c.name for c in index.columns) for index in table.indexes}
            assert {tuple(i["column_names"]) for i in shape.get_indexes(table.name)} >= declared, table.name
        with memory.engine.connect() as conn:
            versions = conn.execute(text("SELECT version FROM schema_version ORDER BY version")).scalars().all()
        assert versions == list(range(1, SCHEMA_VERSION + 1))

        episode = memory.start_episode(task="layer_norm", op_tags=["softmax"], model="m", mode="atu", seed=0)
        assert [e.id for e in episode.retrieve("softmax rows", ["softmax"])] == ["E1"]
        episode.record_attempt(source="k", status="correct", cycles=90, speedup=1.0, roofline_fraction=0.4)
        episode.declare_adopted(["E1"], attempt=1)
        report = episode.finish(Outcome(executed=True, correct=True, speedup=1.0))
        assert report.episode_id == 2 and report.credited["E1"] == (0.25, pytest.approx(0.7 * 0.25))
        attempts = memory.export_data()["tables"]["attempt"]
        assert [(a["id"], a["roofline_fraction"]) for a in attempts] == [(1, None), (2, 0.4)]
        # version 5's trial table takes a measured effect (1x: credit moves U toward 0)
        episode = memory.start_episode(task="rms_norm", op_tags=["softmax"], model="m", mode="atu", seed=0)
        episode.retrieve("softmax rows", ["softmax"])
        assert episode.record_effect("E1", effect=1.0, attempt=1, note="timed")
        report = episode.finish(Outcome(executed=True, correct=True, speedup=3.0))
        assert report.credited["E1"][1] == pytest.approx(0.7 * 0.7 * 0.25)
        assert [t["note"] for t in memory.export_data()["tables"]["trial"]] == ["timed"]
    finally:
        memory.close()


def test_a_newer_database_is_refused(memory_url) -> None:
    Memory(memory_url).close()
    engine = create_engine(memory_url)
    with engine.begin() as conn:
        conn.execute(text(f"INSERT INTO schema_version VALUES ({SCHEMA_VERSION + 1}, '2030-01-01 00:00:00')"))
    engine.dispose()
    with pytest.raises(SchemaVersionError, match="newer than this sage"):
        Memory(memory_url)
