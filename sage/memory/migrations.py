"""Versioned schema migrations.

`schema_version` holds one row per applied version. A fresh database is created straight
from the ORM at SCHEMA_VERSION; an older one runs every migration above its version, in
order, in one transaction, so an upgrade is all-or-nothing.

History:
  1  initial schema
  2  attempt.roofline_fraction (the agent's profile feedback per attempt) and lookup indexes
  3  episode.episode_key, unique: an episode finished twice under one key is stored once
     (a resumed bench run never learns a task twice)
  4  the `meta` table (meta.sage_version: the newest sage that wrote the database) and
     episode.sage_version / episode.preset
  5  the `trial` table: an item's measured effect in an episode (what ATU credits)

Beyond the schema, a database records the newest sage version that opened it: an older
sage refuses it (a newer one may have written what the older one misreads), and says so.
"""

from __future__ import annotations

from collections.abc import Callable

import re

from sqlalchemy import Connection, Engine, Index, inspect, select, text

from sage import __version__
from sage.memory.engine import run_write
from sage.memory.errors import SchemaVersionError
from sage.memory.schema import SCHEMA_VERSION, Base, Meta, SchemaVersion, Trial, utcnow

WRITER_KEY = "sage_version"


def _create_indexes(conn: Connection) -> None:
    """The declared indexes the database lacks, of the columns it already has (a later
    version's index waits for the migration that adds its column)."""
    shape = inspect(conn)
    existing = set(shape.get_table_names())
    for table in Base.metadata.sorted_tables:
        if table.name not in existing:   # a later version's table waits for its migration too
            continue
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


def _v4(conn: Connection) -> None:
    Meta.__table__.create(conn, checkfirst=True)
    conn.execute(text("ALTER TABLE episode ADD COLUMN sage_version VARCHAR(40)"))
    conn.execute(text("ALTER TABLE episode ADD COLUMN preset VARCHAR(200)"))


def _v5(conn: Connection) -> None:
    Trial.__table__.create(conn, checkfirst=True)


MIGRATIONS: dict[int, Callable[[Connection], None]] = {2: _v2, 3: _v3, 4: _v4, 5: _v5}
assert sorted(MIGRATIONS) == list(range(2, SCHEMA_VERSION + 1)), "one migration per version above 1"


def current_version(conn: Connection) -> int | None:
    """The database's schema version, or None for an empty database."""
    tables = set(inspect(conn).get_table_names())
    if SchemaVersion.__tablename__ not in tables:
        if tables & {t.name for t in Base.metadata.sorted_tables}:
            raise SchemaVersionError("the database has memory tables but no schema_version table: not a sage memory")
        return None
    return conn.execute(select(SchemaVersion.version).order_by(SchemaVersion.version.desc())).scalars().first() or 0


def version_key(version: str) -> tuple[int, ...]:
    """The release numbers of a version string: "0.10.2rc1" -> (0, 10, 2)."""
    match = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(p) for p in match.group(0).split(".")) if match else ()


def writer_version(conn: Connection) -> str | None:
    """The newest sage version that wrote to the database (None before schema version 4)."""
    if Meta.__tablename__ not in inspect(conn).get_table_names():
        return None
    return conn.execute(select(Meta.value).where(Meta.key == WRITER_KEY)).scalar()


def upgrade(engine: Engine, sage_version: str = __version__) -> int:
    """Create or upgrade the schema and stamp the database with `sage_version`; returns the
    schema version the database was at before opening (0 for a new one). Refuses
    (SchemaVersionError) a database a newer sage wrote."""
    with engine.connect() as conn:
        if current_version(conn) == SCHEMA_VERSION:
            written_by = writer_version(conn)
            _check_writer(written_by, sage_version)
            if written_by == sage_version:
                return SCHEMA_VERSION  # the common case: no need to take the write lock
    # Under the write lock, so two processes opening one new database do not both create it.
    return run_write(engine, lambda session: _upgrade(session.connection(), sage_version))


def _check_writer(written_by: str | None, sage_version: str) -> None:
    if written_by is not None and version_key(written_by) > version_key(sage_version):
        raise SchemaVersionError(
            f"the memory database was written by sage {written_by}, newer than this sage {sage_version}; "
            "upgrade sage (pip install -U sage-npu) or use another --memory-url")


def _upgrade(conn: Connection, sage_version: str) -> int:
    version = current_version(conn)
    if version is None:
        Base.metadata.create_all(conn)
        conn.execute(SchemaVersion.__table__.insert().values(version=SCHEMA_VERSION, applied_at=utcnow()))
        _stamp(conn, None, sage_version)
        return 0
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the memory database is at schema version {version}, newer than this sage ({SCHEMA_VERSION}); upgrade sage"
        )
    for target in range(version + 1, SCHEMA_VERSION + 1):
        MIGRATIONS[target](conn)
        conn.execute(SchemaVersion.__table__.insert().values(version=target, applied_at=utcnow()))
    written_by = writer_version(conn)
    _check_writer(written_by, sage_version)
    _stamp(conn, written_by, sage_version)
    return version


def _stamp(conn: Connection, written_by: str | None, sage_version: str) -> None:
    if written_by is None:
        conn.execute(Meta.__table__.insert().values(key=WRITER_KEY, value=sage_version))
    elif version_key(sage_version) >= version_key(written_by) and written_by != sage_version:
        conn.execute(Meta.__table__.update().where(Meta.key == WRITER_KEY).values(value=sage_version))
