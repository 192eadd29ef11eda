"""Opening a memory database: URL handling, SQLite pragmas, and write transactions that never lose an update.

Writers take the database's write lock when their transaction *begins*, not on their
first write: on SQLite with `BEGIN IMMEDIATE`, on PostgreSQL with a transaction-scoped
advisory lock (plus `SELECT ... FOR UPDATE` on the rows they change, see episode.py). A
read-modify-write of a utility is then never interleaved with another writer's, so two
processes finishing episodes at once both land. Readers never wait (WAL on SQLite, MVCC on
PostgreSQL).
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError
from sqlalchemy.orm import Session
from sqlalchemy.pool import StaticPool

from sage.memory.errors import MemoryURLError

T = TypeVar("T")

BUSY_TIMEOUT_MS = 30_000
WRITE_RETRIES = 8
_WRITE_OPTION = "sage_write"
# Any constant works; it only has to be the same for every sage process on one database.
_PG_WRITE_LOCK_KEY = 0x5A6E_3E30


def parse_url(url: str) -> URL:
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise MemoryURLError(f"not a database URL: {url!r} (e.g. sqlite:///~/.sage/memory.db)") from exc
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        path = Path(parsed.database).expanduser()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MemoryURLError(f"cannot create the folder for the memory database {path}: {exc}") from exc
        parsed = parsed.set(database=str(path))
    return parsed


def sqlite_path(url: str) -> Path | None:
    """The database file of a SQLite URL (None for another backend, an in-memory database or
    a URL that does not parse: opening it reports that)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database).expanduser()


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


def open_engine(url: str) -> Engine:
    parsed = parse_url(url)
    kwargs: dict = {}
    in_memory = parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:")
    if in_memory:
        # One shared connection, or every session would see its own empty database.
        kwargs = {"poolclass": StaticPool, "connect_args": {"check_same_thread": False}}
    try:
        engine = create_engine(parsed, **kwargs)
    except (ArgumentError, NoSuchModuleError) as exc:
        raise MemoryURLError(f"unsupported memory URL {parsed.render_as_string()!r}: {exc}") from exc
    except ModuleNotFoundError as exc:
        raise MemoryURLError(
            f"the driver for {parsed.drivername!r} is not installed ({exc.name}); "
            "for PostgreSQL: pip install 'psycopg[binary]' and use postgresql+psycopg://"
        ) from exc
    if engine.dialect.name == "sqlite":
        _configure_sqlite(engine, wal=not in_memory)
    return engine


def _configure_sqlite(engine: Engine, *, wal: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        # Let SQLAlchemy's "begin" event below emit BEGIN itself, instead of pysqlite's implicit one.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys = ON")
        if wal:
            _set_wal(cursor)
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:  # type: ignore[no-untyped-def]
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(_WRITE_OPTION) else "BEGIN")


def _set_wal(cursor) -> None:  # type: ignore[no-untyped-def]
    """Switch to WAL, retrying while another process holds the lock: SQLite can answer the
    journal-mode change with "database is locked" at once, without its busy handler (two bench
    workers opening one new database lost an episode to it)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    attempt = 0
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(min(0.5, 0.01 * 2**attempt) * (0.5 + random.random()))
            attempt += 1


def check_connection(engine: Engine) -> None:
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except OperationalError as exc:
        url = engine.url.render_as_string(hide_password=True)
        raise MemoryURLError(f"cannot open the memory database {url}: {exc.orig}") from exc


def _retryable(exc: OperationalError) -> bool:
    message = str(exc.orig).lower()
    if "database is locked" in message or "database is busy" in message:
        return True
    # PostgreSQL: serialization failure, deadlock detected.
    return getattr(exc.orig, "sqlstate", None) in ("40001", "40P01")


@contextmanager
def read_session(engine: Engine) -> Iterator[Session]:
    with Session(engine, expire_on_commit=False) as session, session.begin():
        yield session


def run_write(engine: Engine, work: Callable[[Session], T], *, retries: int = WRITE_RETRIES) -> T:
    """Run `work` in one write transaction holding the database's write lock; retry it whole on contention.

    `work` must only touch the session (no side effects outside it), since a retry runs it again.
    """
    writer = engine.execution_options(**{_WRITE_OPTION: True})
    for attempt in range(retries):
        try:
            with Session(writer, expire_on_commit=False) as session, session.begin():
                if engine.dialect.name == "postgresql":
                    session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_WRITE_LOCK_KEY})
                return work(session)
        except OperationalError as exc:
            if attempt == retries - 1 or not _retryable(exc):
                raise
            time.sleep(min(2.0, 0.05 * 2**attempt) * (0.5 + random.random()))
    raise AssertionError("unreachable")
