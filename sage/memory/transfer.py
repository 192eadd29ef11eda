"""`sage memory export/import`: the whole memory as one JSON document that round-trips exactly.

Rows keep their ids (so "E12" stays E12, and episodes, adoptions and rules keep pointing at
the right items). Every row is validated against the table's columns before anything is
written; the load is one transaction, so a bad file changes nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from sqlalchemy import JSON, Boolean, DateTime, Float, Integer, String, func, insert, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from sage.memory.errors import ImportFormatError, MemoryStoreError
from sage.memory.schema import SCHEMA_VERSION, TABLES_IN_ORDER

FORMAT = "sage-memory"
_TABLES = {model.__tablename__: model.__table__ for model in TABLES_IN_ORDER}


def _python_type(column: Any) -> Any:
    for sql_type, py in ((Boolean, bool), (Integer, int), (Float, float), (DateTime, datetime), (String, str)):
        if isinstance(column.type, sql_type):
            return py
    if isinstance(column.type, JSON):
        return dict[str, Any] | list[Any]
    raise TypeError(f"no import type for column {column} ({column.type})")  # a new column type needs a line above


def _row_model(table: Any) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for column in table.columns:
        py = _python_type(column)
        # Nullable columns may be absent: an export from an older schema lacks the columns added since.
        fields[column.name] = (py | None, None) if column.nullable else (py, ...)
    return create_model(f"{table.name}_row", __config__=ConfigDict(extra="forbid"), **fields)


_ROW_MODELS = {name: _row_model(table) for name, table in _TABLES.items()}


def _encode(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def dump(session: Session) -> dict[str, Any]:
    tables: dict[str, list[dict[str, Any]]] = {}
    for name, table in _TABLES.items():
        rows = session.execute(select(table).order_by(table.c.id)).mappings()
        tables[name] = [{key: _encode(value) for key, value in row.items()} for row in rows]
    return {"format": FORMAT, "schema_version": SCHEMA_VERSION, "tables": tables}


def validate(data: Any) -> dict[str, list[dict[str, Any]]]:
    """The rows of an export, type-checked; raises ImportFormatError naming the first problem."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ImportFormatError(f'not a sage memory export (expected a JSON object with "format": "{FORMAT}")')
    version = data.get("schema_version")
    if not isinstance(version, int) or not 1 <= version <= SCHEMA_VERSION:
        raise ImportFormatError(f"unsupported export schema_version {version!r} (this sage reads 1..{SCHEMA_VERSION})")
    tables = data.get("tables")
    if not isinstance(tables, dict):
        raise ImportFormatError('the export has no "tables" object')
    unknown = set(tables) - set(_TABLES)
    if unknown:
        raise ImportFormatError(f"unknown table(s) in the export: {', '.join(sorted(unknown))}")
    clean: dict[str, list[dict[str, Any]]] = {}
    for name, model in _ROW_MODELS.items():
        rows = tables.get(name, [])
        if not isinstance(rows, list):
            raise ImportFormatError(f'"tables.{name}" must be a list of rows')
        clean[name] = []
        for index, row in enumerate(rows):
            try:
                clean[name].append(model.model_validate(row).model_dump())
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise ImportFormatError(f"tables.{name}[{index}].{where}: {first['msg']}") from exc
    experience_ids = {row["id"] for row in clean["experience"]}
    for row in clean["rule"]:
        missing = [s for s in row["sources"] if s not in experience_ids]
        if missing:
            raise ImportFormatError(f"rule R{row['id']} names source experience(s) not in the file: {missing}")
    return clean


def load(session: Session, tables: dict[str, list[dict[str, Any]]]) -> None:
    for name, table in _TABLES.items():
        if session.scalar(select(func.count()).select_from(table)):
            raise MemoryStoreError("the memory is not empty: reset it first, or import with --replace")
    try:
        for name, table in _TABLES.items():
            if tables[name]:
                session.execute(insert(table), tables[name])
        session.flush()
    except IntegrityError as exc:
        raise ImportFormatError(f"the export is inconsistent (duplicate id or dangling reference): {exc.orig}") from exc
    restart_ids(session)


def restart_ids(session: Session) -> None:
    """Make the next id of every table max(id) + 1 (SQLite's INTEGER PRIMARY KEY already does)."""
    if session.get_bind().dialect.name != "postgresql":
        return
    for name in _TABLES:
        session.execute(text(
            f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), COALESCE(MAX(id), 0) + 1, false) FROM \"{name}\""
        ))
