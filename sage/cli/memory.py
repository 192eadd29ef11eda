"""`sage memory`: inspect, show, export, import, reset and stats of the experience memory.

Exit codes: 0 done, 2 bad input (bad URL, unknown id, malformed import file, missing --yes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.text import Text

from sage.cli.common import APP_SETTINGS, WholeHelpGroup, did_you_mean, fail, require_memory
from sage.cli.render import IDENT, Col, fitted_table
from sage.text import terminal

if TYPE_CHECKING:
    from sage.memory import Memory

app = typer.Typer(help="The experience memory: what the agent has learned.", no_args_is_help=True, cls=WholeHelpGroup,
                  **APP_SETTINGS)


def _console(stderr: bool = False) -> Console:
    # Made per call, so the width follows the terminal (and COLUMNS) of this invocation.
    return Console(stderr=stderr)

EMPTY_HINT = "The memory is empty: run `sage synth --op softmax` to teach it something."
URL_OPTION = typer.Option(None, "--memory-url", help="SQLAlchemy URL (default: SAGE_MEMORY_URL or sqlite:///~/.sage/memory.db)")


def _open(url: str | None) -> Memory:
    from sage.config import load_settings
    from sage.memory import Memory, MemoryStoreError

    resolved = load_settings(memory_url=url).memory_url
    require_memory(resolved)
    try:
        return Memory(resolved)
    except MemoryStoreError as exc:
        fail(str(exc))


def _print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, default=str))


@app.command("inspect", help="The experiences by utility, or with --rules the resident rule set.")
def inspect(
    top: int = typer.Option(20, "--top", min=1, help="show the N most useful experiences"),
    rules: bool = typer.Option(False, "--rules", help="show the rules (resident and demoted) instead"),
    op: str = typer.Option(None, "--op", help="only experiences from or adopted on this operator"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    memory_url: str = URL_OPTION,
) -> None:
    with _open(memory_url) as memory:
        exps = memory.experiences(top=top, operator=op)
        all_rules = memory.rules()
        operators = memory.experience_operators()
        known = memory.operators() if op is not None and not exps else []
        budget = memory.config.token_budget
        empty = memory.is_empty()
    resident = [r for r in all_rules if r.status == "resident"]
    used = sum(r.tokens for r in resident)
    if as_json:
        _print_json({
            "experiences": [e.model_dump() | {"operators": _operator_count(operators.get(e.id)),
                                              "adopted_on": len(operators.get(e.id, (None, []))[1])}
                            for e in exps],
            "rules": [r.model_dump() for r in all_rules], "resident_tokens": used, "token_budget": budget,
        })
        return
    console = _console()
    if empty:
        console.print(EMPTY_HINT)
        return
    if rules:
        cols = [Col("id", wrap=False), Col("rule"), Col("utility", "right", wrap=False),
                Col("adopted/ shown", "right"), Col("tokens", "right", wrap=False), Col("sources"),
                Col("status", wrap=False)]
        rows = [[r.id, r.text, f"{r.utility:+.3f}", f"{r.adopted}/{r.shown}", str(r.tokens), " ".join(r.sources),
                 r.status] for r in all_rules]
        title = f"Rules — resident {len(resident)}, {used}/{budget} tokens"
        console.print(fitted_table(cols, rows, console.width, title=title) if all_rules
                      else "No rules yet: experiences become rules once they help on several operators.")
        return
    if not exps:
        console.print(terminal(f"No experiences for operator {op!r}{did_you_mean(op, known)}." if op else EMPTY_HINT),
                      highlight=False)
    else:
        # "operators": learned on plus adopted on (consolidation's breadth gate counts the adopters: `show`).
        cols = [Col("id", wrap=False), Col("title"), Col("utility", "right", wrap=False),
                Col("adopted/ retrieved", "right"), Col("operators", "right"), Col("status", wrap=False)]
        rows = [[e.id, e.title, f"{e.utility:+.3f}", f"{e.adopted}/{e.retrieved}",
                 str(_operator_count(operators.get(e.id))), e.status] for e in exps]
        console.print(fitted_table(cols, rows, console.width, title="Experiences" + (f" for {op}" if op else "")))
    console.print(f"Resident rules: {len(resident)} ({used}/{budget} tokens); see --rules.")


def _operator_count(entry: tuple[str | None, list[str]] | None) -> int:
    if entry is None:
        return 0
    origin, adopters = entry
    return len(set(adopters) | ({origin} if origin else set()))


@app.command("show", help="One experience (E<n>) or rule (R<n>) with its adoption history.")
def show(
    item: str = typer.Argument(..., help="an id such as E12 or R3"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    memory_url: str = URL_OPTION,
) -> None:
    from sage.memory import UnknownItemError

    with _open(memory_url) as memory:
        try:
            detail = memory.show(item)
        except UnknownItemError as exc:
            fail(str(exc))
    if as_json:
        _print_json(detail.model_dump(mode="json"))
        return
    console = _console()
    if detail.experience is not None:
        e = detail.experience
        # Memory text may come from an LLM or an imported file: Text, cleaned, never markup.
        console.print(Text.assemble((e.id, "bold"), " ", terminal(e.title), "  ",
                                    terminal(f"({e.status}, learned on {e.origin_operator or '?'})", "dim")))
        console.print(terminal(e.advice), highlight=False)
        hints = json.dumps(e.hints) if e.hints else "-"
        console.print(terminal(f"tags: {', '.join(e.tags) or '-'}   hints: {hints}"), highlight=False)
        adopters = ", ".join(detail.operators) or "none yet"
        console.print(terminal(f"utility {e.utility:+.3f}   retrieved {e.retrieved}   adopted {e.adopted} "
                               f"(succeeded {e.adopted_succeeded})   adopted on {len(detail.operators)} operator(s): "
                               f"{adopters}"), highlight=False)
    else:
        r = detail.rule
        assert r is not None
        console.print(Text.assemble((r.id, "bold"), " ",
                                    (f"({r.status}, {r.tokens} tokens, from {' '.join(r.sources)})", "dim")))
        console.print(terminal(r.text), highlight=False)
        console.print(f"utility {r.utility:+.3f}   shown {r.shown}   adopted {r.adopted} "
                      f"(succeeded {r.adopted_succeeded})", highlight=False)
    if not detail.history:
        console.print("Never adopted.")
    else:
        cols = [Col("episode", "right", wrap=False), Col("operator", folds=IDENT), Col("mode", wrap=False),
                Col("attempt", "right", wrap=False), Col("reward", "right", wrap=False), Col("reason")]
        rows = [[str(h.episode_id), h.task, h.mode, str(h.attempt), "-" if h.reward is None else f"{h.reward:+.3f}",
                 h.reason] for h in detail.history]
        console.print(fitted_table(cols, rows, console.width, title="Adoption history"))
    if detail.trials:
        cols = [Col("episode", "right", wrap=False), Col("operator", folds=IDENT), Col("mode", wrap=False),
                Col("effect", "right", wrap=False), Col("measured")]
        rows = [[str(t.episode_id), t.task, t.mode, f"{t.effect:.3f}x", t.note] for t in detail.trials]
        console.print(fitted_table(cols, rows, console.width,
                                   title="Measured trials (time without it / with it; ATU credits by these)"))


@app.command("export", help="Write the whole memory to a JSON file (import round-trips it exactly).")
def export(file: Path = typer.Argument(..., help="output JSON file"), memory_url: str = URL_OPTION) -> None:
    with _open(memory_url) as memory:
        data = memory.export_data()
    try:
        file.write_text(json.dumps(data, indent=1), encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {file}: {exc.strerror}")
    counts = ", ".join(f"{len(rows)} {name}" for name, rows in data["tables"].items())
    _console().print(terminal(f"exported {counts} to {file}"), highlight=False)


@app.command("import", help="Load a JSON export into an empty memory (or --replace the current content).")
def import_(
    file: Path = typer.Argument(..., help="a file written by `sage memory export`"),
    replace: bool = typer.Option(False, "--replace", help="delete the current memory first (one transaction)"),
    memory_url: str = URL_OPTION,
) -> None:
    from sage.memory import MemoryStoreError
    from sage.memory.transfer import read_export

    try:
        data = read_export(file)
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror}")
    except MemoryStoreError as exc:
        fail(f"{file}: {exc}")
    with _open(memory_url) as memory:
        try:
            counts = memory.import_data(data, replace=replace)
        except MemoryStoreError as exc:
            fail(f"{file}: {exc}")
    _console().print(f"imported {', '.join(f'{n} {name}' for name, n in counts.items())}", highlight=False)


@app.command("reset", help="Delete everything the memory holds (needs --yes).")
def reset(
    yes: bool = typer.Option(False, "--yes", help="really delete every experience, rule and episode"),
    memory_url: str = URL_OPTION,
) -> None:
    if not yes:
        fail("reset deletes every experience, rule and episode; run again with --yes (export first to keep a copy)")
    with _open(memory_url) as memory:
        memory.reset()
    _console().print("memory reset")


@app.command("stats", help="Counts: experiences and rules by status, episodes by mode, reward.")
def stats(as_json: bool = typer.Option(False, "--json", help="print JSON"), memory_url: str = URL_OPTION) -> None:
    from sage import __version__

    with _open(memory_url) as memory:
        s = memory.stats()
        url = memory.engine.url.render_as_string(hide_password=True)
    if as_json:
        _print_json(s.model_dump() | {"url": url})
        return
    fmt = lambda counts: ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "0"  # noqa: E731
    rows = [["database", url], ["experiences", fmt(s.experiences)], ["rules", fmt(s.rules)],
            ["resident tokens", f"{s.resident_tokens}/{s.token_budget} (cap {s.rule_cap} rules)"],
            ["episodes", f"{s.episodes} ({fmt(s.episodes_by_mode)})" if s.episodes else "0"]]
    if s.episodes:
        rows += [["presets", fmt(s.episodes_by_preset)], ["correct", f"{s.correct_rate:.0%}"],
                 ["mean reward", f"{s.mean_reward:+.3f}"]]
    rows += [["adoptions / retrievals", f"{s.adoptions} / {s.retrievals}"],
             ["written by", f"sage {s.sage_version or '?'} (this is sage {__version__})"]]
    console = _console()
    console.print(fitted_table([Col("what", wrap=False), Col("value")], rows, console.width,
                               title="Memory", show_header=False))
    if not s.episodes and not sum(s.experiences.values()):
        console.print(EMPTY_HINT)
