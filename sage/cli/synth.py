"""`sage synth`: synthesise one operator's kernel with the agent.

Exit codes: 0 a correct kernel was written, 1 the agent found none (or the LLM endpoint
failed), 2 bad input (unknown operator, bad task file, bad option value, bad memory URL).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.live import Live
from rich.table import Table

err = Console(stderr=True)
MODES = ("none", "uniform", "atu", "sage")


def register(app: typer.Typer) -> None:
    """Adds the `synth` command to the root app (owned by the agent work)."""
    app.command("synth", help="Synthesise a kernel for one operator: generate, evaluate, refine, learn.")(synth)


def fail(message: str, code: int = 2) -> None:
    err.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def synth(
    op: str = typer.Option(None, "--op", help="operator name, e.g. softmax or level1/10_layer_norm"),
    task_file: Path = typer.Option(None, "--task", help="a task file (KernelBench format)"),
    model: str = typer.Option(None, "--model", help="LLM model name; without it the offline synthesizer runs"),
    base_url: str = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint (else OPENAI_BASE_URL)"),
    iterations: int = typer.Option(None, "--iterations", min=0, help="refinement turns after the first answer"),
    memory_mode: str = typer.Option(None, "--memory", help="none | uniform | atu | sage"),
    memory_url: str = typer.Option(None, "--memory-url", help="SQLAlchemy URL of the experience memory"),
    preset: str = typer.Option(None, "--preset", help="hardware preset (see `sage npu presets`)"),
    seed: int = typer.Option(None, "--seed", help="seed of the agent's choices"),
    cases: int = typer.Option(None, "--cases", min=1, help="evaluate only the first K cases (default all)"),
    case: list[int] = typer.Option(None, "--case", min=0, help="evaluate only case I (0-based; repeatable)"),
    out: Path = typer.Option(None, "--out", help="where to write the best kernel (default ./<op>_kernel.py)"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object instead of the summary"),
) -> None:
    from sage.agent.backends.base import BackendError
    from sage.agent.factory import make_backend
    from sage.agent.loop import AgentConfig, ReferenceProblem, synthesize
    from sage.agent.prompt import CardNotFound
    from sage.config import load_settings

    task = _load_task(op, task_file)
    if cases is not None and case:
        fail("give --cases K or --case I, not both")
    selected = _check_cases(task, case) if case else cases
    if memory_mode is not None and memory_mode not in MODES:
        fail(f"--memory must be one of {', '.join(MODES)}, not {memory_mode!r}")
    settings = load_settings(model=model, base_url=base_url, iterations=iterations, memory_mode=memory_mode,
                             memory_url=memory_url, preset=preset, seed=seed)
    _check_preset(settings.preset)
    memory = _open_memory(settings.memory_url)
    backend = make_backend(settings, task)
    config = AgentConfig(preset=settings.preset, iterations=settings.iterations, memory_mode=settings.memory_mode,
                         seed=settings.seed, cases=selected)
    view = TurnView(task.key, backend.name)
    try:
        with Live(view.table(), console=err, refresh_per_second=4, transient=as_json) as live:
            view.live = live
            result = synthesize(task, backend, memory, config, on_turn=view.update)
    except BackendError as exc:
        fail(f"the LLM backend failed: {exc}", 1)
    except ReferenceProblem as exc:
        fail(f"the task's reference cannot be judged: {exc}")
    except CardNotFound as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted: this episode was not written to the memory", 130)
    finally:
        memory.close()

    kernel_path = None
    if result.best_source is not None:
        kernel_path = out or Path(f"{task.name}_kernel.py")
        try:
            kernel_path.write_text(result.best_source, encoding="utf-8")
        except OSError as exc:
            fail(f"cannot write the kernel to {kernel_path}: {exc.strerror}", 1)
    if as_json:
        payload = result.model_dump(mode="json", exclude={"turns": {"__all__": {"source"}}})
        payload["kernel_path"] = str(kernel_path) if kernel_path else None
        import json

        typer.echo(json.dumps(payload, indent=2))
    else:
        _summary(result, kernel_path)
    raise typer.Exit(0 if result.status == "correct" else 1)


class TurnView:
    """The live table: one row per attempt."""

    def __init__(self, task: str, backend: str) -> None:
        self.task, self.backend = task, backend
        self.rows: dict[int, tuple[str, ...]] = {}
        self.live: Live | None = None

    def update(self, turn: Any, phase: str) -> None:
        if phase == "evaluating":
            self.rows[turn.index] = (str(turn.index), "[yellow]evaluating…[/yellow]", "", "", "", _short(turn.plan))
        else:
            status = {"correct": "[green]correct[/green]", "incorrect": "[red]wrong[/red]",
                      "error": f"[red]{turn.error_type or 'error'}[/red]", "malformed": "[red]malformed[/red]",
                      "repeat": "[dim]repeat (done)[/dim]", "llm_error": "[red]LLM error[/red]"}[turn.status]
            self.rows[turn.index] = (
                str(turn.index), status, f"{turn.cycles:,}" if turn.cycles else "",
                f"{turn.speedup:.2f}x" if turn.speedup else "", turn.bottleneck or "",
                _short(turn.message if turn.status != "correct" and turn.message else turn.plan))
        if self.live is not None:
            self.live.update(self.table())

    def table(self) -> Table:
        t = Table(title=f"sage synth {self.task} ({self.backend})", box=box.SIMPLE_HEAD)
        for col in ("attempt", "status", "cycles", "speedup", "bottleneck", "note"):
            t.add_column(col, overflow="fold")
        for index in sorted(self.rows):
            t.add_row(*self.rows[index])
        if not self.rows:
            t.add_row("1", "[yellow]generating…[/yellow]", "", "", "", "")
        return t


def _summary(result: Any, kernel_path: Path | None) -> None:
    out = Console()
    t = Table(box=box.SIMPLE, show_header=False)
    t.add_column(style="bold")
    t.add_column(overflow="fold")
    t.add_row("backend", result.backend)
    t.add_row("status", result.status + (f" ({result.reason})" if result.reason and result.status != "correct" else ""))
    t.add_row("speedup", f"{result.speedup:.2f}x" if result.speedup else "n/a")
    t.add_row("roofline fraction", f"{result.roofline_fraction:.2f}" if result.roofline_fraction is not None else "n/a")
    t.add_row("bottleneck", result.bottleneck or "n/a")
    t.add_row("attempts", str(len(result.turns)))
    if result.prompt_tokens or result.completion_tokens:
        t.add_row("tokens", f"{result.prompt_tokens} prompt + {result.completion_tokens} completion")
    adopted = [f"{i} U {result.utilities[i][0]:+.2f}→{result.utilities[i][1]:+.2f}" if i in result.utilities else i
               for i in result.adopted]
    t.add_row("adopted", ", ".join(adopted) or "none")
    if result.rejected:
        t.add_row("rejected ids", ", ".join(result.rejected) + " (never shown: not credited)")
    if result.memory_mode == "uniform":
        others = [f"{i} {b:+.2f}→{a:+.2f}" for i, (b, a) in result.utilities.items() if i not in result.adopted]
        if others:
            t.add_row("credited (uniform)", ", ".join(others))
    t.add_row("new experiences", ", ".join(f"{i}" for i in result.new_experiences) or "none")
    if result.merged_experiences:
        t.add_row("merged into", ", ".join(result.merged_experiences))
    if result.extracted:
        t.add_row("lessons", "; ".join(e.title for e in result.extracted))
    if result.extraction_problem:
        t.add_row("extraction", result.extraction_problem)
    t.add_row("rules promoted", ", ".join(f"{e}→{r}" for e, r in result.promoted.items()) or "none")
    if result.demoted:
        t.add_row("rules demoted", ", ".join(result.demoted))
    t.add_row("kernel", str(kernel_path) if kernel_path else "none written")
    t.add_row("memory", f"{result.memory_mode} (episode {result.episode_id}, reward {result.reward:+.2f})"
              if result.episode_id is not None else result.memory_mode)
    out.print(t)


def _short(text: str | None, n: int = 60) -> str:
    text = (text or "").replace("\n", " ")
    return text if len(text) <= n else text[: n - 1] + "…"


def _load_task(op: str | None, task_file: Path | None) -> Any:
    from sage.bench.tasks import ReferenceUnavailable, TaskLoadError, UnknownOpError, load_task, resolve_op

    if (task_file is None) == (op is None):
        fail("give exactly one of --op NAME or --task FILE")
    try:
        return load_task(task_file if task_file is not None else resolve_op(op))
    except UnknownOpError as exc:
        fail(str(exc))
    except TaskLoadError as exc:
        fail(f"bad task file {exc}")
    except ReferenceUnavailable as exc:
        fail(str(exc))


def _check_cases(task: Any, indices: list[int]) -> list[int]:
    count = len(task.cases())
    bad = [i for i in indices if i >= count]
    if bad:
        fail(f"case {bad[0]} does not exist: {task.key} has {count} cases (0..{count - 1})")
    return sorted(set(indices))


def _check_preset(name: str) -> None:
    from sage.npu.hardware import load_preset

    try:
        load_preset(name)
    except ValueError as exc:
        fail(str(exc))


def _open_memory(url: str) -> Any:
    from sage.config import SAGE_HOME, DEFAULT_MEMORY_URL
    from sage.memory import Memory, MemoryStoreError

    if url == DEFAULT_MEMORY_URL:
        SAGE_HOME.mkdir(parents=True, exist_ok=True)
    try:
        return Memory(url)
    except MemoryStoreError as exc:
        fail(f"cannot open the memory {url}: {exc}")
