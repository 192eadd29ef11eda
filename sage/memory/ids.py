"""The ids the agent sees: "E<n>" for experiences, "R<n>" for rules."""

from __future__ import annotations

import re
from typing import Literal

from sage.memory.errors import UnknownItemError

Kind = Literal["experience", "rule"]
_PREFIX: dict[Kind, str] = {"experience": "E", "rule": "R"}
_ID = re.compile(r"^\s*([ERer])(\d+)\s*$")


def format_id(kind: Kind, number: int) -> str:
    return f"{_PREFIX[kind]}{number}"


def exp_id(number: int) -> str:
    return format_id("experience", number)


def rule_id(number: int) -> str:
    return format_id("rule", number)


def parse_id(text: str) -> tuple[Kind, int]:
    """"E12" → ("experience", 12); raises UnknownItemError for anything else."""
    match = _ID.match(text) if isinstance(text, str) else None
    if match is None:
        raise UnknownItemError(f"not a memory id: {text!r} (expected E<n> or R<n>, e.g. E12 or R3)")
    kind: Kind = "experience" if match.group(1).upper() == "E" else "rule"
    return kind, int(match.group(2))


def normalise_id(text: str) -> str:
    kind, number = parse_id(text)
    return format_id(kind, number)
