"""`sage memory export/import`: the whole memory as one JSON document that round-trips exactly.

Rows keep their ids (so "E12" stays E12, and episodes, adoptions and rules keep pointing at
the right items). An import file is untrusted: it is parsed with its nesting bounded, every
row is validated against the models of export_rows.py (type, range and size of each field)
before anything is written, and the load is one transaction, so a bad file changes nothing.
Hostile text within those limits is not a bad file: it is cleaned (sage/memory/texts.py).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func, insert, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from sage import __version__
from sage.memory.errors import ImportFormatError, MemoryStoreError
from sage.memory.export_rows import ROW_MODELS
from sage.memory.schema import SCHEMA_VERSION, TABLES_IN_ORDER
from sage.text import json_safe

FORMAT = "sage-memory"
_TABLES = {model.__tablename__: model.__table__ for model in TABLES_IN_ORDER}
_MESSAGE_CHARS = 200


def _encode(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def dump(session: Session) -> dict[str, Any]:
    tables: dict[str, list[dict[str, Any]]] = {}
    for name, table in _TABLES.items():
        rows = session.execute(select(table).order_by(table.c.id)).mappings()
        tables[name] = [{key: _encode(value) for key, value in row.items()} for row in rows]
    return {"format": FORMAT, "schema_version": SCHEMA_VERSION, "sage_version": __version__, "tables": tables}


def read_export(path: Path) -> Any:
    """The JSON document of an export file; ImportFormatError if it is not JSON (OSError if unreadable)."""
    raw = Path(path).read_bytes()
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"not UTF-8 text (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from exc
    except RecursionError as exc:
        raise ImportFormatError("not a sage memory export: its JSON is nested too deeply to read") from exc


def validate(data: Any) -> dict[str, list[dict[str, Any]]]:
    """The rows of an export, type-checked; raises ImportFormatError naming the first problem."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ImportFormatError(f'not a sage memory export (expected a JSON object with "format": "{FORMAT}")')
    version = data.get("schema_version")
    if type(version) is not int or not 1 <= version <= SCHEMA_VERSION:   # `true` is an int to isinstance
        raise ImportFormatError(f"unsupported export schema_version {_short(version)} "
                                f"(this sage reads the integers 1..{SCHEMA_VERSION})")
    tables = data.get("tables")
    if not isinstance(tables, dict):
        raise ImportFormatError('the export has no "tables" object')
    unknown = set(tables) - set(_TABLES)
    if unknown:
        raise ImportFormatError(f"unknown table(s) in the export: {_short(', '.join(sorted(unknown)))}")
    clean: dict[str, list[dict[str, Any]]] = {}
    for name, model in ROW_MODELS.items():
        rows = tables.get(name, [])
        if not isinstance(rows, list):
            raise ImportFormatError(f'"tables.{name}" must be a list of rows')
        clean[name] = []
        for index, row in enumerate(rows):
            try:
                # Lone surrogates (JSON escapes such as \\ud800) are repaired first: text is
                # cleaned, not refused; the models clean the rest (export_rows.py).
                clean[name].append(model.model_validate(json_safe(row)).model_dump())
            except ValidationError as exc:
                first = exc.errors(include_url=False, include_input=False)[0]
                where = ".".join(str(p) for p in first["loc"])
                raise ImportFormatError(f"tables.{name}[{index}]{'.' + where if where else ''}: "
                                        f"{_short(first['msg'])}") from exc
    experience_ids = {row["id"] for row in clean["experience"]}
    for row in clean["rule"]:
        missing = [s for s in row["sources"] if s not in experience_ids]
        if missing:
            raise ImportFormatError(f"rule R{row['id']} names source experience(s) not in the file: "
                                    f"{_short(str(missing))}")
    return clean


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS - 1] + "…"


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
        raise ImportFormatError("the export is inconsistent (duplicate id or key, or a dangling reference): "
                                f"{_short(str(exc.orig))}") from exc
    restart_ids(session)


def restart_ids(session: Session) -> None:
    """Make the next id of every table max(id) + 1 (SQLite's INTEGER PRIMARY KEY already does)."""
    if session.get_bind().dialect.name != "postgresql":
        return
    for name in _TABLES:
        session.execute(text(
            f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), COALESCE(MAX(id), 0) + 1, false) FROM \"{name}\""
        ))
