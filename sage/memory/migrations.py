"""Versioned schema migrations.

`schema_version` holds one row per applied version. A fresh database is created straight
from the ORM at SCHEMA_VERSION; an older one runs every migration above its version, in
order, in one transaction, so an upgrade is all-or-nothing.

History:
  1  initial schema
  2  attempt.roofline_fraction (the agent's profile feedback per attempt) and lookup indexes
  3  episode.episode_key, unique: an episode finished twice under one key is stored once
     (a resumed bench run never learns a task twice)
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, Engine, Index, inspect, select, text

from sage.memory.engine import run_write

from sage.memory.errors import SchemaVersionError
from sage.memory.schema import SCHEMA_VERSION, Base, SchemaVersion, utcnow


def _create_indexes(conn: Connection) -> None:
    """The declared indexes the database lacks, of the columns it already has (a later
    version's index waits for the migration that adds its column)."""
    shape = inspect(conn)
    for table in Base.metadata.sorted_tables:
        present = {c["name"] for c in shape.get_columns(table.name)}
        index: Index
        for index in table.indexes:
            if {c.name for c in index.columns} <= present:
                index.create(conn, checkfirst=True)


def _v2(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE attempt ADD COLUMN roofline_fraction FLOAT"))
    _create_indexes(conn)


def _v3(conn: Connection) -> None:
    # The column alone: SQLite cannot add a UNIQUE column, so uniqueness comes from the index.
    conn.execute(text("ALTER TABLE episode ADD COLUMN episode_key VARCHAR(300)"))
    _create_indexes(conn)


MIGRATIONS: dict[int, Callable[[Connection], None]] = {2: _v2, 3: _v3}
assert sorted(MIGRATIONS) == list(range(2, SCHEMA_VERSION + 1)), "one migration per version above 1"


def current_version(conn: Connection) -> int | None:
    """The database's schema version, or None for an empty database."""
    tables = set(inspect(conn).get_table_names())
    if SchemaVersion.__tablename__ not in tables:
        if tables & {t.name for t in Base.metadata.sorted_tables}:
            raise SchemaVersionError("the database has memory tables but no schema_version table: not a sage memory")
        return None
    return conn.execute(select(SchemaVersion.version).order_by(SchemaVersion.version.desc())).scalars().first() or 0


def upgrade(engine: Engine) -> int:
    """Create or upgrade the schema; returns the version the database was at before opening (0 for a new one)."""
    with engine.connect() as conn:
        if current_version(conn) == SCHEMA_VERSION:
            return SCHEMA_VERSION  # the common case: no need to take the write lock
    # Under the write lock, so two processes opening one new database do not both create it.
    return run_write(engine, lambda session: _upgrade(session.connection()))


def _upgrade(conn: Connection) -> int:
    version = current_version(conn)
    if version is None:
        Base.metadata.create_all(conn)
        conn.execute(SchemaVersion.__table__.insert().values(version=SCHEMA_VERSION, applied_at=utcnow()))
        return 0
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the memory database is at schema version {version}, newer than this sage ({SCHEMA_VERSION}); upgrade sage"
        )
    for target in range(version + 1, SCHEMA_VERSION + 1):
        MIGRATIONS[target](conn)
        conn.execute(SchemaVersion.__table__.insert().values(version=target, applied_at=utcnow()))
    return version
