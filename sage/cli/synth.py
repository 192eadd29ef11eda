"""`sage synth`: synthesise one operator's kernel with the agent.

Exit codes: 0 a correct kernel was written, 1 the agent found none (or the LLM endpoint
failed), 2 bad input (unknown operator, bad task file, bad option value, bad memory URL).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.live import Live
from rich.table import Table

from sage.bench.roofline import roofline_text as roofline
from sage.cli.common import fail, require_cache, require_memory, require_writable, run_budget
from sage.cli.printed import printed_by_case, show_printed
from sage.cli.progress import live
from sage.cli.render import Cell, Col, Screen, fitted_table, markup
from sage.text import terminal

err = Screen(stderr=True)
results = Screen()                 # stdout: the attempts, the summary, the JSON
MODES = ("none", "uniform", "atu", "sage")
NOTE_CHARS = 160        # a note while the table is redrawn; the printed table and --json have it whole


def register(app: typer.Typer) -> None:
    """Adds the `synth` command to the root app (owned by the agent work)."""
    app.command("synth", help="Synthesise a kernel for one operator: generate, evaluate, refine, learn.")(synth)


def synth(
    op: str = typer.Option(None, "--op", help="operator name, e.g. softmax or level1/10_layer_norm"),
    task_file: Path = typer.Option(None, "--task", help="a task file (KernelBench format)"),
    model: str = typer.Option(None, "--model", help="LLM model name; without it (or with 'offline') the offline "
                                                   "synthesizer runs"),
    base_url: str = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint (else OPENAI_BASE_URL)"),
    iterations: int = typer.Option(None, "--iterations", min=0, help="refinement turns after the first answer"),
    memory_mode: str = typer.Option(None, "--memory", help="none | uniform | atu | sage"),
    memory_url: str = typer.Option(None, "--memory-url", help="SQLAlchemy URL of the experience memory"),
    preset: str = typer.Option(None, "--preset", help="hardware preset (see `sage npu presets`)"),
    seed: int = typer.Option(None, "--seed", help="seed of the agent's choices and of the case inputs (with "
                                                 "--case, replays a bench row's case)"),
    cases: int = typer.Option(None, "--cases", min=1, help="evaluate only the first K cases (default all)"),
    case: list[int] = typer.Option(None, "--case", min=0, help="evaluate only case I (0-based; repeatable)"),
    out: Path = typer.Option(None, "--out", help="where to write the best kernel (default ./<op>_kernel.py, or "
                                                "<op>_kernel-2.py ... if that file exists: never overwritten)"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="show what the kept kernel printed (printf, "
                                                                "DumpTensor, print), truncated"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object instead of the summary"),
    max_prompt_tokens: int = typer.Option(None, "--max-prompt-tokens", min=1,
                                          help="bound on every prompt (estimated); the oldest attempt summaries go "
                                               "first"),
    max_tokens: int = typer.Option(None, "--max-tokens", min=1, help="token budget of the whole run (prompt + "
                                                                     "completion, every call); stops cleanly"),
    answer_tokens: int = typer.Option(None, "--answer-tokens", min=1, help="completion limit of one LLM answer "
                                                                           "(every request's max_tokens; default "
                                                                           "16000)"),
    max_cost: float = typer.Option(None, "--max-cost", min=0, help="cost budget of the whole run in US$ (needs "
                                                                   "--prices); stops cleanly"),
    prices: str = typer.Option(None, "--prices", help="the model's prices: PROMPT,COMPLETION in US$ per million "
                                                      "tokens, e.g. 3,15"),
) -> None:
    from sage.agent.backends.base import BackendError
    from sage.agent.budget import BudgetExhausted
    from sage.agent.conversation import PromptTooLarge
    from sage.agent.factory import backend_problem, make_backend
    from sage.agent.loop import AgentConfig, ReferenceProblem, synthesize
    from sage.agent.prompt import CardNotFound
    from sage.config import load_settings

    endpoint = load_settings(model=model, base_url=base_url)
    problem = backend_problem(endpoint.model, endpoint.base_url)
    if problem is not None:      # before any work: nothing can be asked without a key
        fail(problem)
    task = _load_task(op, task_file)
    if cases is not None and case:
        fail("give --cases K or --case I, not both")
    selected = _check_cases(task, case) if case else cases
    if memory_mode is not None and memory_mode not in MODES:
        fail(f"--memory must be one of {', '.join(MODES)}, not {memory_mode!r}")
    settings = load_settings(model=model, base_url=base_url, iterations=iterations, memory_mode=memory_mode,
                             memory_url=memory_url, preset=preset, seed=seed,
                             answer_max_tokens=answer_tokens)
    _check_preset(settings.preset)
    budget = run_budget(max_tokens, max_cost, prices)
    task.seed = settings.seed
    kernel_path = out or free_path(Path(f"{task.name}_kernel.py"))
    require_writable(kernel_path.parent.resolve(), "the kernel")
    require_cache()
    memory = _open_memory(settings.memory_url)
    backend = make_backend(settings, task)
    config = AgentConfig(preset=settings.preset, iterations=settings.refinements, memory_mode=settings.memory_mode,
                         seed=settings.seed, cases=selected, max_prompt_tokens=max_prompt_tokens,
                         max_completion_tokens=settings.answer_max_tokens)
    view = TurnView(task.key, backend.name)
    try:
        # The attempts redrawn as they come (stderr, on a terminal); the result is printed below.
        with live(view.table(err.width, whole=False), as_json) as display:
            view.live = display
            result = synthesize(task, backend, memory, config, on_turn=view.update, budget=budget)
    except BudgetExhausted as exc:
        fail(f"the run budget cannot pay for the first call ({exc}); nothing was written", 1)
    except PromptTooLarge as exc:
        fail(f"the first prompt does not fit: {exc}")
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

    written: Path | None = None
    kernel_note = ""
    if result.best_source is not None:
        if out is None:   # the default name: another run may have written it meanwhile
            default = Path(f"{task.name}_kernel.py")
            kernel_path = free_path(default)
            kernel_note = f" ({default} exists: kept)" if kernel_path != default else ""
        elif kernel_path.exists():
            kernel_note = " (replaced the file there, as --out asked)"
        try:
            kernel_path.write_text(result.best_source, encoding="utf-8")
        except OSError as exc:
            fail(f"cannot write the kernel to {kernel_path}: {exc.strerror}", 1)
        written = kernel_path
    kept = _kept_turn(result)
    kept_cases = kept.evaluation.cases if kept is not None and kept.evaluation is not None else []
    if as_json:
        from sage import __version__

        payload = result.model_dump(mode="json", exclude={"turns": {"__all__": {"source"}}})
        payload["kernel_path"] = str(written) if written else None
        payload |= {"preset": settings.preset, "sage_version": __version__, "printed": printed_by_case(kept_cases)}
        # The kept kernel's three times and torch_npu's (docs/evaluation.md), geometric means over the cases.
        kept_eval = kept.evaluation if kept is not None else None
        payload |= {side: getattr(kept_eval, side).model_dump() if kept_eval is not None
                    and getattr(kept_eval, side) is not None else None for side in ("times", "reference_times")}
        import json

        typer.echo(json.dumps(payload, indent=2))
    else:
        # The attempts and the summary together on stdout: `| tee` keeps both.
        results.print(view.table(results.width))
        _summary(result, written, kernel_note)
        show_printed(results.console(), kept_cases, verbose)
    raise typer.Exit(0 if result.status == "correct" else 1)


class TurnView:
    """The attempts table: one row per attempt. While the agent works it is redrawn with each
    note cut to a line (`note`); the table printed as the result has the notes whole."""

    def __init__(self, task: str, backend: str) -> None:
        self.task, self.backend = task, backend
        self.rows: dict[int, list[Cell]] = {}
        self.live: Live | None = None

    def update(self, turn: Any, phase: str) -> None:
        from sage.agent.feedback import strip_rule

        if phase == "evaluating":
            self.rows[turn.index] = [str(turn.index), markup("[yellow]evaluating…[/yellow]"), "", "", "",
                                     turn.plan or ""]
        else:
            # The error class is the kernel run's: a Text, never markup.
            status = {"correct": ("correct", "green"), "incorrect": ("wrong", "red"),
                      "error": (turn.error_type or "error", "red"), "malformed": ("malformed", "red"),
                      "repeat": ("repeat", "dim"), "llm_error": ("LLM error", "red")}[turn.status]
            self.rows[turn.index] = [
                str(turn.index), terminal(*status, one_line=True), f"{turn.cycles:,}" if turn.cycles else "",
                f"{turn.speedup:.2f}x" if turn.speedup else "", turn.bottleneck or "",
                # the correctness rule each wrong result quotes is in docs/evaluation.md, not in every row
                " ".join((strip_rule(turn.message) if turn.status != "correct" and turn.message
                          else turn.plan or "").split())]
        if self.live is not None:
            self.live.update(self.table(err.width, whole=False))

    def table(self, width: int, whole: bool = True) -> Table:
        cols = [Col("attempt", "right", wrap=False), Col("status", wrap=False), Col("cycles", "right", wrap=False),
                Col("speedup", "right", wrap=False), Col("bottleneck", wrap=False), Col("note")]
        rows = [r if whole else [*r[:-1], note(str(r[-1]))] for r in (self.rows[i] for i in sorted(self.rows))]
        rows = rows or [["1", markup("[yellow]generating…[/yellow]"), "", "", "", ""]]
        return fitted_table(cols, rows, width, title=f"sage synth {self.task} ({self.backend})",
                            box=box.SIMPLE_HEAD)


def _times_text(evaluation: Any) -> str:
    """The kept kernel's three times and torch_npu's (docs/evaluation.md), geometric means over the cases."""
    if evaluation is None or evaluation.times is None:
        return "n/a"

    def three(t: Any) -> str:
        return f"{t.kernel_us:.3g} / {t.device_us:.3g} / {t.end_to_end_us:.3g} µs"

    ref = f"; torch_npu {three(evaluation.reference_times)}" if evaluation.reference_times is not None else ""
    return f"kernel / device / end to end: yours {three(evaluation.times)}{ref}"


def _summary(result: Any, kernel_path: Path | None, kernel_note: str) -> None:
    kept = _kept_turn(result)
    bound = kept.evaluation.roofline_bound if kept is not None and kept.evaluation is not None else None
    rows: list[list[Cell]] = [["backend", result.backend],
                              ["status", result.status + (f" ({result.reason})" if result.reason
                                                          and result.status != "correct" else "")],
                              ["speedup", f"{result.speedup:.2f}x" if result.speedup else "n/a"],
                              ["times", _times_text(kept.evaluation if kept is not None else None)],
                              ["roofline fraction", roofline(result.roofline_fraction, bound)
                               if result.roofline_fraction is not None else "n/a"],
                              ["bottleneck", result.bottleneck or "n/a"], ["attempts", str(len(result.turns))]]
    if result.prompt_tokens or result.completion_tokens:
        rows.append(["tokens", f"{result.prompt_tokens} prompt + {result.completion_tokens} completion in "
                               f"{result.calls} calls (turns and reflection)"])
    if result.stopped:
        rows.append(["stopped", result.stopped])
    adopted = [f"{i} U {result.utilities[i][0]:+.2f}→{result.utilities[i][1]:+.2f}" if i in result.utilities else i
               for i in result.adopted]
    rows.append(["adopted", ", ".join(adopted) or "none"])
    if result.rejected:
        rows.append(["rejected ids", ", ".join(result.rejected) + " (never shown: not credited)"])
    if result.memory_mode == "uniform":
        others = [f"{i} {b:+.2f}→{a:+.2f}" for i, (b, a) in result.utilities.items() if i not in result.adopted]
        if others:
            rows.append(["credited (uniform)", ", ".join(others)])
    rows.append(["new experiences", ", ".join(f"{i}" for i in result.new_experiences) or "none"])
    if result.merged_experiences:
        rows.append(["merged into", ", ".join(result.merged_experiences)])
    if result.extracted:
        rows.append(["lessons", "; ".join(e.title for e in result.extracted)])
    if result.extraction_fallback:
        rows.append(["extraction", "the reflection answered in prose: lessons read from it, without knob hints"])
    if result.extraction_problem:
        rows.append(["extraction", result.extraction_problem])
    rows.append(["rules promoted", ", ".join(f"{e}→{r}" for e, r in result.promoted.items()) or "none"])
    if result.demoted:
        rows.append(["rules demoted", ", ".join(result.demoted)])
    rows.append(["kernel", f"{kernel_path}{kernel_note}" if kernel_path else "none written"])
    rows.append(["memory", f"{result.memory_mode} (episode {result.episode_id}, reward {result.reward:+.2f})"
                 if result.episode_id is not None else result.memory_mode])
    results.print(fitted_table([Col("", wrap=False), Col("")], rows, results.width, box=box.SIMPLE,
                               show_header=False))


def note(text: str | None, n: int = NOTE_CHARS) -> str:
    """One line of the live table: whole words only; a longer text ends in " …"."""
    words = " ".join((text or "").split()).split(" ")
    kept: list[str] = []
    for word in words:
        if len(" ".join([*kept, word])) > n - 2:
            return " ".join(kept + ["…"]) if kept else word
        kept.append(word)
    return " ".join(kept)


def free_path(path: Path) -> Path:
    """`path`, or the first of name-2.py, name-3.py ... that does not exist: the default
    --out never overwrites an earlier kernel."""
    n = 1
    candidate = path
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
    return candidate


def _kept_turn(result: Any) -> Any:
    """The attempt whose result is reported: the kept kernel, else the last one judged."""
    if result.best_turn is not None:
        return result.best_turn
    return next((t for t in reversed(result.turns) if t.evaluation is not None), None)


def _load_task(op: str | None, task_file: Path | None) -> Any:
    from sage.bench.input_size import InputsTooLarge
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
    except InputsTooLarge as exc:
        fail(f"no case of {op or task_file} can be made: {exc.reason}")


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
    from sage.memory import Memory, MemoryStoreError

    require_memory(url)
    try:
        return Memory(url)
    except MemoryStoreError as exc:
        fail(f"cannot open the memory {url}: {exc}")
