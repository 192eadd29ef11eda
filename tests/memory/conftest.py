"""Store fixtures: every store test runs on SQLite and, when SAGE_TEST_POSTGRES_URL is set, on PostgreSQL.

Each PostgreSQL test gets its own schema (via the connection's search_path), dropped afterwards,
so tests never see each other's rows.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from urllib.parse import quote

import pytest

from sage.memory import Memory, MemoryConfig

POSTGRES_ENV = "SAGE_TEST_POSTGRES_URL"


def _postgres_schema_url(base: str, schema: str) -> str:
    joiner = "&" if "?" in base else "?"
    return f"{base}{joiner}options={quote(f'-csearch_path={schema}')}"


def _psycopg_dsn(base: str) -> str:
    return base.replace("postgresql+psycopg://", "postgresql://", 1)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def memory_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'memory.db'}"
        return
    base = os.environ.get(POSTGRES_ENV)
    if not base:
        pytest.skip(f"PostgreSQL store tests need {POSTGRES_ENV} (e.g. postgresql+psycopg://sage:sage@127.0.0.1:55432/sage_test)")
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(_psycopg_dsn(base), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield _postgres_schema_url(base, schema)
    finally:
        with psycopg.connect(_psycopg_dsn(base), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def open_memory(memory_url: str) -> Iterator[Callable[..., Memory]]:
    """Opens Memory objects on the test's database and closes them at teardown."""
    opened: list[Memory] = []

    def factory(**config: object) -> Memory:
        memory = Memory(memory_url, config=MemoryConfig(**config))
        opened.append(memory)
        return memory

    yield factory
    for memory in opened:
        memory.close()
