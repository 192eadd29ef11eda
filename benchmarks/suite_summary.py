"""The README's summary of the offline suite run, written by benchmarks/offline_suite.py
between markers so that no figure in it is typed by hand:

    <!-- offline-suite:begin -->  ...  <!-- offline-suite:end -->
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

from sage.bench.ablation import COMPARE_FILE, ablation_level_metrics, ablation_metrics, load_mode_rows
from sage.bench.runner import final_rows

BEGIN, END = "<!-- offline-suite:begin -->", "<!-- offline-suite:end -->"


def readme_summary(out: Path, classify) -> str:  # noqa: ANN001 - sage.bench.reasons.classify
    """The README's short results table from the run in `out` (its first mode, last epoch): no
    command, commit or date (docs/results.md, written from the same run, has them)."""
    record = json.loads((out / COMPARE_FILE).read_text())
    rows = load_mode_rows(out)
    levels = ablation_level_metrics(rows)
    mode = next(iter(levels))
    last = max(levels[mode])
    finals = final_rows([r for r in rows if r.extra.get("ablation_mode") == mode], last)
    failures: dict[str, int] = {}
    for r in finals:
        if r.status != "correct":
            ev = r.evaluation
            reason = (ev.reason if ev is not None else None) or r.extra.get("reason") or ""
            error = f"{ev.error.type}: {ev.error.message}" if ev is not None and ev.error is not None else None
            name = classify({"status": r.status, "reason": reason, "error": error})
            failures[name] = failures.get(name, 0) + 1
    lines = [
        _wrap(f"The offline agent (the compiler: no LLM, no memory) on the suite, its answer per task after its "
              f"schedule search, judged on {_cases(record)}. Speedups are end to end against the modelled "
              "torch_npu eager time; faster: correct and faster than it."), "",
        "| level | tasks | correct | faster | geomean speedup of the correct |",
        "|---|---|---|---|---|",
    ]
    for lv, m in [*levels[mode][last].items(), ("all", ablation_metrics(rows)[mode][last])]:
        lines.append(f"| {lv.removeprefix('level')} | {m.tasks} | {pct(m.correctness_rate)} | {pct(m.fast_1)} "
                     f"| {x(m.geomean_speedup)} |")
    lines += ["", _wrap("Not correct, by reason: " + ", ".join(
        f"{name} ({n})" for name, n in sorted(failures.items(), key=lambda kv: (-kv[1], kv[0]))) + ".")]
    return "\n".join(lines)


# Options that only say where a run sends its own summary: a path outside the checkout there
# means nothing to a reader (and the doc may not cite it), so the command is shown without it.
_OUTPUT_OPTIONS = ("--results", "--readme", "--doc")


def rerunnable(command: str, root: Path) -> str:
    """`command` as a reader reruns it in a checkout: paths under `root`, and run folders under
    any checkout's runs/, made relative; the options that only send a summary outside the
    checkout left out."""
    prefix = str(root.resolve()).rstrip("/") + "/"
    words = [re.sub(r"^/\S*?/(runs/\S*)$", r"\1", w) for w in command.replace(prefix, "").split(" ")]
    kept: list[str] = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word in _OUTPUT_OPTIONS and i + 1 < len(words) and words[i + 1].startswith("/"):
            skip = True
            continue
        kept.append(word)
    return " ".join(kept)


def write_block(path: Path, text: str, begin: str = BEGIN, end: str = END) -> bool:
    """Replace what stands between the markers in `path`; False when it has none."""
    doc = path.read_text(encoding="utf-8")
    lo, hi = doc.find(begin), doc.find(end)
    if not 0 <= lo < hi:
        return False
    path.write_text(doc[:lo + len(begin)] + "\n" + text + "\n" + doc[hi:], encoding="utf-8")
    return True


def place_block(path: Path, text: str, begin: str, end: str) -> None:
    """write_block, or the block appended to the end of `path` (created if missing) when it has none."""
    if path.exists() and write_block(path, text, begin, end):
        return
    doc = path.read_text(encoding="utf-8").rstrip("\n") + "\n\n" if path.exists() else ""
    path.write_text(f"{doc}{begin}\n{text}\n{end}\n", encoding="utf-8")


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=90, break_on_hyphens=False, break_long_words=False)


def _cases(record: dict) -> str:
    cases = record.get("cases")
    if cases is None:
        return "every case of each task"
    return "the first case of each task" if cases == 1 else f"the first {cases} cases of each task"


def pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def x(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}x"
