"""Result rows stay small: no line of results.jsonl above `ROW_BYTES`.

A run's results.jsonl is read whole by `sage bench report` and by every script that
summarises a run, and it is meant to be committed or mailed as the record of a run. One row
per task; what makes a row large is detail nobody reads line by line: the reference's
per-call rows (tens of thousands for nms, 14 MB a case before they were summed per op), what
a kernel printed on each of many cases, its per-case profiles. So, before a row is written:

- the reference's per-call rows (`--detail`) move to OUT/detail/<task>.json, the row
  keeping the file's name in `extra["detail_file"]`;
- a row still above the limit sheds, in this order, each case's printed text beyond
  `PRINTED_KEPT` characters, the per-case profiles, and the reference's per-op sums beyond
  the `OPS_KEPT` largest; what was shed is listed in `extra["trimmed"]`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic_core import PydanticSerializationError

from sage.text import json_safe

ROW_BYTES = 1 << 20
PRINTED_KEPT = 2000
OPS_KEPT = 20
DETAIL_DIR = "detail"


def fit_row(row: Any, out: Path) -> None:
    """Moves the per-call detail of a result row (sage.bench.runner.ResultRow) to its own file
    under `out` and trims the row below ROW_BYTES, in place."""
    _move_detail(row, Path(out))
    size = row_bytes(row)
    if size <= ROW_BYTES:
        return
    trimmed = []
    for name, step in (("printed", _trim_printed), ("profiles", _drop_profiles), ("reference ops", _trim_ops)):
        if step(row):
            trimmed.append(name)
            if row_bytes(row) <= ROW_BYTES:
                break
    row.extra["trimmed"] = {"bytes_before": size, "shed": trimmed}


def row_bytes(row: Any) -> int:
    try:
        return len(row.model_dump_json())
    except PydanticSerializationError:
        return len(json.dumps(json_safe(row.model_dump(mode="json"))))


def _move_detail(row: Any, out: Path) -> None:
    ref = row.reference
    if ref is None or not any(c.calls for c in ref.cases):
        return
    name = re.sub(r"[^\w.-]+", "_", row.task) + f".epoch{row.epoch}.json"
    path = out / DETAIL_DIR / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({str(c.index): c.calls for c in ref.cases if c.calls}), encoding="utf-8")
    for case in ref.cases:
        case.calls = None
    row.extra["detail_file"] = f"{DETAIL_DIR}/{name}"


def _trim_printed(row: Any) -> bool:
    cases = row.evaluation.cases if row.evaluation is not None else []
    long = [c for c in cases if c.printed and len(c.printed) > PRINTED_KEPT]
    for case in long:
        case.printed = case.printed[:PRINTED_KEPT] + f"\n[… {len(case.printed) - PRINTED_KEPT} more characters shed]"
    return bool(long)


def _drop_profiles(row: Any) -> bool:
    cases = [c for c in (row.evaluation.cases if row.evaluation is not None else []) if c.profile is not None]
    for case in cases:
        case.profile = None
    return bool(cases)


def _trim_ops(row: Any) -> bool:
    ref = row.reference
    shed = False
    for case in ref.cases if ref is not None else []:
        ops = (case.breakdown or {}).get("ops") if isinstance(case.breakdown, dict) else None
        if ops and len(ops) > OPS_KEPT:
            case.breakdown["ops"] = ops[:OPS_KEPT]
            case.breakdown["ops_shed"] = len(ops) - OPS_KEPT
            shed = True
    return shed
