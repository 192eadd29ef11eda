"""Why a task is not correct: one line per row, and the rows grouped by the kind of reason.

Every final row that is not correct carries its reason somewhere (the kernel's error, the
comparison that failed, the compiler's refusal in `extra`, the reference's own failure, the
worker that crashed); `row_reason` finds it and makes it one line, so report.md, the
terminal summary and `--json` all say the same thing. `reason_class` files it under a
short name (the compiler's refusals by what they refuse, a kernel error by its class), so
a run of a hundred tasks can be read as a handful of counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from sage.text import ERROR_CHARS, clean

# Classes of the compiler's refusals (and of other reasons), the first pattern found in the
# reason naming the class. Also used by benchmarks/compiler_coverage.py and offline_suite.py.
REASON_CLASSES = [
    ("no kernel file", ("no kernel file",)),
    ("data-dependent output shape", ("output shape depends on the input values",)),
    ("host reads tensor data", ("reads tensor data on the host", "tensor values it reads on the host")),
    ("dtype without a 910B kernel type", ("no 910B kernel type holds",)),
    ("host computes a tensor outside torch", ("computes a tensor on the host outside torch",)),
    ("reference draws random tensors per call", ("draws new random tensors on every call",)),
    ("captured tensor constant", ("tensor constant captured",)),
    ("does not fit UB", ("does not fit in UB", "do not fit in UB")),
    ("kernel file over the sandbox's size limit", ("exceed the sandbox's", "exceeds the sandbox's")),
    ("lowering not written", ("lowering is not written", "no lowering", "not written yet", "is written")),
    ("layout the lowering cannot take", ("do not merge", "do not broadcast", "reinterprets", "view of a larger",
                                         "strided view")),
    ("dtype the lowering cannot take", ("int64 scan", "int64 or int32 only")),
    ("wrong result", ("outside tolerance", "mismatch", "incorrect")),
    ("kernel error", ("Error",)),
]
# Statuses whose class is the status itself, whatever the reason says.
_STATUS_CLASSES = {
    "incorrect": "wrong result",
    "compiler_error": "compiler error (a bug)",
    "timeout": "timeout",
    "crashed": "worker crashed",
    "reference_unavailable": "reference needs an accelerator",
    "reference_error": "reference error",
    "not_judged": "not judged (resume runs it)",
}
ONE_LINE_CHARS = 300


def classify(row: dict[str, Any]) -> str:
    """The class of a reason given as {"status", "reason", "error"} (the benchmarks' rows)."""
    status = row.get("status")
    if status in _STATUS_CLASSES:
        return _STATUS_CLASSES[str(status)]
    text = f"{status} {row.get('reason') or ''} {row.get('error') or ''}"
    if status == "unsupported":
        return "over the input budget" if "input budget" in text else "unsupported case"
    for name, patterns in REASON_CLASSES:
        if any(p in text for p in patterns):
            return name
    return "other"


class NotCorrect(BaseModel):
    """A final row that is not correct, as report.md, the summary and --json show it."""

    task: str
    status: str
    reason: str                 # one line
    kind: str                   # reason_class: what report.md and the terminal group by


class ReasonGroup(BaseModel):
    kind: str
    count: int
    tasks: list[str]


def row_reason(row: Any) -> str | None:
    """One line saying why a final result row (sage.bench.runner.ResultRow) is not correct;
    None for a correct kernel or a reference measured without trouble."""
    if row.status in ("correct", "reference_ok"):
        return None
    ev, ref = row.evaluation, row.reference
    if ev is not None and ev.error is not None:
        # A syntax error's message quotes the line under its first line: the first line says it.
        # Other messages are folded onto one line whole (clean below), so a reason is never cut
        # at a newline the kernel chose.
        message = ev.error.message
        if ev.error.type == "KernelSyntaxError":
            message = message.split("\n", 1)[0]
        text = f"{ev.error.type}{f' (line {ev.error.line})' if ev.error.line else ''}: {message}"
    else:
        text = ((ev.reason if ev is not None else None) or (ref.reason if ref is not None else None)
                or row.extra.get("reason") or row.extra.get("error") or _unsaid(row.status))
    return clean(text, ONE_LINE_CHARS, one_line=True)


def reason_class(row: Any) -> str:
    ev = row.evaluation
    error = f"{ev.error.type}: {ev.error.message}" if ev is not None and ev.error is not None else None
    if error is not None and row.status == "error":
        return f"kernel error: {ev.error.type}"
    return classify({"status": row.status, "reason": row_reason(row), "error": error})


def not_correct(rows: Iterable[Any]) -> list[NotCorrect]:
    """The final rows that are not correct, each with its reason, in task order."""
    return [NotCorrect(task=r.task, status=r.status, reason=row_reason(r) or "", kind=reason_class(r))
            for r in sorted(rows, key=lambda r: r.task) if row_reason(r) is not None]


def by_reason(items: Iterable[NotCorrect]) -> list[ReasonGroup]:
    """Grouped by kind, the largest group first (ties by name)."""
    groups: dict[str, list[str]] = {}
    for item in items:
        groups.setdefault(item.kind, []).append(item.task)
    return [ReasonGroup(kind=k, count=len(v), tasks=v) for k, v in sorted(groups.items(), key=lambda kv: (-len(kv[1]),
                                                                                                        kv[0]))]


def _unsaid(status: str) -> str:
    """What a status means when nothing else was recorded (rows written before reasons were)."""
    return {"no_kernel": "no kernel was produced (no reason recorded)",
            "error": "the kernel failed (no message recorded)"}.get(status, clean(status, ERROR_CHARS))
