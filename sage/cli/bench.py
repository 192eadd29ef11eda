"""`sage bench`: run a suite (`sage bench npukernelbench|PATH ...`), `report DIR`, `reference --op X`.

`--compare [MODES]` runs the same tasks in the same seeded order once per memory mode into
OUT/<mode>/ (sage.bench.ablation) and writes the ablation report to OUT/report.md; an agent
run without --memory-url learns into its own OUT/memory.db.

`sage bench` mixes a positional target with subcommands. Click cannot do that on its
own, so `_BenchGroup` sends any first word that is not a subcommand (and any option
given before the target) to the `run` command, the word kept as its TARGET.

Exit codes: 0 the run finished (whatever the kernels and task files did: a job that raised,
crashed its worker or timed out is its task's row), 2 bad input, 130 interrupted
(finished tasks are kept; `--resume --out DIR` continues).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich import box

from sage import __version__
from sage.bench.roofline import roofline_text as roofline
from sage.cli.common import APP_SETTINGS, WholeHelpGroup, did_you_mean, fail, require_cache, require_memory, require_writable, run_budget
from sage.cli.bench_summary import pct as _pct
from sage.cli.bench_summary import print_summary
from sage.cli.bench_summary import x as _x
from sage.cli.progress import bar
from sage.cli.render import Col, Screen, fitted_table
from sage.text import clean

RUN_COMMAND = "run"
REFERENCE_COMMAND = "reference"
MEMORY_MODES = ("none", "uniform", "atu", "sage")   # sage.bench.ablation's, kept here to stay import-light
ALL_MODES = "all"


class _BenchGroup(WholeHelpGroup):
    def resolve_command(self, ctx, args):  # noqa: ANN001 - click's signature
        # Anything that is not a subcommand (a target) goes to `run`, keeping the word.
        if args and args[0] not in self.list_commands(ctx) and not args[0].startswith("-"):
            return RUN_COMMAND, self.commands[RUN_COMMAND], args
        return super().resolve_command(ctx, args)

    def parse_args(self, ctx, args):  # noqa: ANN001
        args = _expand_bare_compare(list(args))
        # Run options given before the target (`sage bench --level 1 npukernelbench`) are
        # not the group's: hand the whole line to `run`.
        if args and args[0].startswith("-") and args[0] not in ("--help", "-h"):
            args = [RUN_COMMAND, *args]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx):  # noqa: ANN001
        names = super().list_commands(ctx)
        return names + [REFERENCE_COMMAND] if _reference_available() else names

    def get_command(self, ctx, cmd_name):  # noqa: ANN001
        if cmd_name == REFERENCE_COMMAND and _reference_available():
            return _reference_click_command()
        return super().get_command(ctx, cmd_name)

    def format_usage(self, ctx, formatter):  # noqa: ANN001
        formatter.write_usage(ctx.command_path, "npukernelbench|PATH [OPTIONS]  |  COMMAND [ARGS]...")


def _expand_bare_compare(args: list[str]) -> list[str]:
    """`--compare` takes an optional value (click options cannot): a bare `--compare`, one
    followed by an option or by a word that is not a mode list (the target), means all modes."""
    for i, arg in enumerate(args):
        if arg != "--compare":
            continue
        value = args[i + 1] if i + 1 < len(args) else None
        if value is None or value.startswith("-") or ("," not in value and value not in (*MEMORY_MODES, ALL_MODES)):
            return [*args[:i + 1], ALL_MODES, *args[i + 1:]]
    return args


def _reference_available() -> bool:
    """`sage bench reference` belongs to the reference-model work (sage.cli.reference)."""
    import importlib.util

    return importlib.util.find_spec("sage.cli.reference") is not None


def _reference_click_command():  # noqa: ANN202
    # Imported only when the subcommand is asked for, so `sage bench ...` stays quick.
    from sage.cli.reference import reference_command

    sub = typer.Typer(**APP_SETTINGS)
    sub.command(REFERENCE_COMMAND, help="Per-op breakdown of the reference time of a task.")(reference_command)
    return typer.main.get_command(sub)


app = typer.Typer(
    cls=_BenchGroup, no_args_is_help=True, **APP_SETTINGS,
    help="Benchmark kernels on a task suite. `sage bench npukernelbench` or `sage bench PATH` runs one "
         "(see `sage bench run --help` for its options); `report` and `reference` are subcommands.",
)
err = Screen(stderr=True)
out = Screen()


@app.command(RUN_COMMAND, help="Run a suite: TARGET is 'npukernelbench', a task file or a folder.")
def run(
    target: str = typer.Argument(..., help="'npukernelbench', a task file, or a folder of task files"),
    level: list[int] = typer.Option(None, "--level", "-l", help="only this level (repeatable)"),
    ops: str = typer.Option(None, "--ops", help="comma-separated task names (e.g. softmax,10_layer_norm)"),
    cases: int = typer.Option(None, "--cases", min=1, help="evaluate only the first K cases of each task"),
    case: list[int] = typer.Option(None, "--case", min=0,
                                   help="evaluate only case I of each task (0-based; repeatable): with --seed, "
                                        "replays a row's case"),
    workers: int = typer.Option(2, "--workers", "-w", min=1,
                                help="parallel worker processes (local executor; Ray schedules by CPUs)"),
    kernels: Path = typer.Option(None, "--kernels", help="folder of ready kernels: DIR/level1/10_layer_norm.py"),
    out_dir: Path = typer.Option(None, "--out", help="output folder (default runs/<timestamp>)"),
    resume: bool = typer.Option(False, "--resume", help="skip tasks already finished in --out"),
    executor: str = typer.Option("local", "--executor", help="local (process pool) or ray"),
    ray_address: str = typer.Option(None, "--ray-address", help="Ray cluster address (default: start locally)"),
    preset: str = typer.Option(None, "--preset", help="hardware preset (default from settings)"),
    reference_only: bool = typer.Option(False, "--reference-only",
                                        help="measure only the reference model (no kernels): each case timed on "
                                             "sized inputs (shapes, no data) where its forward allows"),
    detail: bool = typer.Option(False, "--detail", help="with --reference-only: keep the reference's per-call rows "
                                                        "(in OUT/detail/; results.jsonl sums them per aten op)"),
    max_input_gb: float = typer.Option(None, "--max-input-gb", min=0, metavar="GB",
                                       help="a case whose inputs take more is not made and is reported "
                                            "unsupported with its size (default: half the memory available)"),
    epochs: int = typer.Option(1, "--epochs", min=1, help="passes over the suite (the agent learns across them)"),
    task_timeout: float = typer.Option(None, "--task-timeout", min=1, metavar="SECONDS",
                                       help="stop a task's job after this long and record it as `timeout` "
                                            "(default: 300 s + 60 s per case and attempt)"),
    seed: int = typer.Option(None, "--seed", help="seed of the task order, the solver and the case inputs "
                                                 "(epoch e uses seed + e; each row records its seed)"),
    model: str = typer.Option(None, "--model", help="agent: LLM model (default: settings; none = offline)"),
    base_url: str = typer.Option(None, "--base-url", help="agent: OpenAI-compatible endpoint"),
    memory: str = typer.Option(None, "--memory", help="agent: memory mode none|uniform|atu|sage"),
    memory_url: str = typer.Option(None, "--memory-url", help="agent: SQLAlchemy URL of the memory"),
    iterations: int = typer.Option(None, "--iterations", min=0, help="agent: refinement turns per task"),
    compare: str = typer.Option(None, "--compare", metavar="[MODES]",
                                help="memory ablation: run the same tasks once per memory mode (comma list, "
                                     "default all: none,uniform,atu,sage) into OUT/<mode>/, each with its own "
                                     "memory, and write an ablation report to OUT/report.md"),
    max_tokens: int = typer.Option(None, "--max-tokens", min=1, help="agent: token budget of the whole run (prompt "
                                                                     "+ completion, all workers); stops cleanly"),
    answer_tokens: int = typer.Option(None, "--answer-tokens", min=1,
                                      help="agent: completion limit of one LLM answer (every request's max_tokens; "
                                           "default 16000)"),
    max_cost: float = typer.Option(None, "--max-cost", min=0, help="agent: cost budget of the whole run in US$ "
                                                                   "(needs --prices); stops cleanly"),
    prices: str = typer.Option(None, "--prices", help="agent: the model's prices: PROMPT,COMPLETION in US$ per "
                                                      "million tokens"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON"),
) -> None:
    from sage.bench.report import write_report
    from sage.bench.executors import isolation_notes
    from sage.bench.runner import BenchConfig, KernelDirSolver, default_out_dir, run_bench, select_task_files
    from sage.bench.tasks import TaskLoadError
    from sage.config import load_settings

    if cases is not None and case:
        fail("give --cases K or --case I, not both")
    if executor not in ("local", "ray"):
        fail(f"--executor must be 'local' or 'ray', not '{executor}'")
    if kernels is not None and not kernels.is_dir():
        fail(f"--kernels {kernels}: no such folder")
    if kernels is not None and reference_only:
        fail("--kernels and --reference-only exclude each other")
    if detail and not reference_only:
        fail("--detail keeps the reference's per-call rows: it goes with --reference-only")
    if resume and out_dir is None:
        fail("--resume needs --out DIR (the run to resume)")
    if resume and compare is None and not (out_dir / "results.jsonl").exists():
        fail(f"--resume: {out_dir} has no results.jsonl to resume")
    if resume and compare is not None and not any(out_dir.glob("*/results.jsonl")):
        fail(f"--resume --compare: {out_dir} has no mode folders with results to resume")
    if memory is not None and memory not in MEMORY_MODES:
        fail(f"--memory must be one of {', '.join(MEMORY_MODES)}, not '{memory}'")
    agent_flags = [f for f, v in (("--model", model), ("--base-url", base_url), ("--memory", memory),
                                  ("--memory-url", memory_url), ("--iterations", iterations),
                                  ("--compare", compare), ("--max-tokens", max_tokens),
                                  ("--answer-tokens", answer_tokens), ("--max-cost", max_cost),
                                  ("--prices", prices)) if v is not None]
    if agent_flags and (kernels is not None or reference_only):
        fail(f"agent options ({', '.join(agent_flags)}) do not apply with --kernels or --reference-only")
    modes = _compare_modes(compare) if compare is not None else None
    if modes is not None and (memory is not None or memory_url is not None):
        fail("--compare runs every mode with its own memory in OUT/<mode>/memory.db: "
             "--memory and --memory-url do not apply")
    settings = load_settings(preset=preset, seed=seed, model=model, base_url=base_url)
    _check_preset(settings.preset)
    if kernels is None and not reference_only:
        from sage.agent.factory import backend_problem

        problem = backend_problem(settings.model, settings.base_url)
        if problem is not None:
            fail(problem)
    require_cache()
    config = BenchConfig(
        target=target, levels=level or None, ops=[o.strip() for o in ops.split(",") if o.strip()] if ops else None,
        cases=sorted(set(case)) if case else cases, workers=workers, executor=executor, ray_address=ray_address, preset=settings.preset,
        out=out_dir or default_out_dir(settings.runs_dir), resume=resume, epochs=epochs, seed=settings.seed,
        task_timeout_s=task_timeout, detail=detail,
        input_budget=None if max_input_gb is None else int(max_input_gb * (1 << 30)))
    try:
        selected = select_task_files(config.target, config.levels, config.ops)
    except TaskLoadError as exc:
        fail(str(exc))
    if config.ops:
        _check_ops(config.target, config.levels, config.ops)
    if not selected:
        fail(f"no tasks selected in {target}" + (f" (ops: {ops})" if ops else "")
             + (f" (levels: {level})" if level else ""))
    require_writable(config.out, "the run's results")
    if memory_url is not None:
        require_memory(memory_url)

    for note in isolation_notes(config.executor):
        err.print(f"note: {note}", highlight=False, soft_wrap=True)
    # One budget for the whole invocation (every worker, every mode), kept in OUT; a resume
    # starts from nothing spent with the budget it is given.
    config.out.mkdir(parents=True, exist_ok=True)
    budget = run_budget(max_tokens, max_cost, prices, ledger=config.out / "budget.json")
    agent = dict(model=model, base_url=base_url, iterations=iterations, answer_max_tokens=answer_tokens,
                 budget=budget)
    if modes is not None:
        _run_compare(config, modes, agent, as_json)
        return
    if kernels is not None:
        solver: Any = KernelDirSolver(kernels=kernels, preset=config.preset, cases=config.cases)
    elif reference_only:
        solver = None
    else:
        solver = _agent_solver(config, memory, memory_url, agent)

    progress = bar(as_json, detail=True)
    # The bar ends before a failure is printed, so the message has its own line.
    with _run_failures(config.out), progress:
        task_bar = progress.add_task("bench", total=None, last="")

        def on_start(total: int) -> None:
            progress.update(task_bar, total=total)

        def on_row(row: Any) -> None:
            progress.update(task_bar, advance=1, last=clean(f"{row.task}: {row.status}", one_line=True))

        result = run_bench(config, solver, on_row=on_row, on_start=on_start)
    report = write_report(result.out)
    summary = json.loads((result.out / "summary.json").read_text())
    if as_json:
        print(json.dumps({"out": str(result.out), "report": str(report), "ran": result.ran,
                          "resumed": result.resumed, "wall_s": result.wall_s, "preset": config.preset,
                          "seed": config.seed, "sage_version": __version__, **summary}))
        return
    print_summary(summary, result, report, solver is None)


@app.command("report", help="Rebuild report.md and the plots of a run folder from its results.jsonl "
                            "(of a --compare folder: each mode's report and the ablation report).")
def report_cmd(run_dir: Path = typer.Argument(..., help="a run folder (with results.jsonl or mode folders)")) -> None:
    from sage.bench.ablation import mode_dirs, write_ablation_report
    from sage.bench.report import NoResults, write_report
    from sage.bench.runner import RESULTS_FILE, ResultsCorrupt

    if not run_dir.is_dir():
        fail(f"{run_dir}: no such folder")
    require_writable(run_dir, "the report")
    try:
        with bar() as progress:           # the plots take a few seconds (matplotlib)
            progress.add_task("writing the report", total=None)
            if (run_dir / RESULTS_FILE).exists() or not mode_dirs(run_dir):
                path = write_report(run_dir)
            else:
                for mode_dir in mode_dirs(run_dir).values():
                    write_report(mode_dir)
                path = write_ablation_report(run_dir)
    except (NoResults, ResultsCorrupt) as exc:
        fail(str(exc))
    out.text(f"report written to {path}")


def _agent_solver(config: Any, memory_mode: str | None, memory_url: str | None, flags: dict[str, Any]) -> Any:
    """The agent as the bench `Solver`, from the run's config, the user's settings and the
    agent flags. Its memory is the run's own (OUT/memory.db) unless --memory-url names one:
    a benchmark must not learn from, nor teach, the user's everyday memory."""
    from sage.agent.bench_solver import AgentSolver
    from sage.bench.ablation import run_memory_url

    url = memory_url or run_memory_url(config)
    return AgentSolver.from_bench_config(config, memory_mode=memory_mode, memory_url=url, **flags)


def _compare_modes(value: str) -> list[str]:
    if value == ALL_MODES:
        return list(MEMORY_MODES)
    modes = list(dict.fromkeys(m.strip() for m in value.split(",") if m.strip()))
    unknown = [m for m in modes if m not in MEMORY_MODES]
    if unknown or not modes:
        fail(f"--compare takes memory modes from {', '.join(MEMORY_MODES)} (comma-separated), not '{value}'")
    return modes


def _run_compare(config: Any, modes: list[str], flags: dict[str, Any], as_json: bool) -> None:
    from sage.bench.ablation import ablation_metrics, load_mode_rows, run_compare

    progress = bar(as_json, detail=True)
    bars: dict[str, Any] = {}

    def on_start(mode: str, total: int) -> None:
        bars[mode] = progress.add_task(f"memory {mode}", total=total, last="")

    def on_row(mode: str, row: Any) -> None:
        progress.update(bars[mode], advance=1, last=clean(f"{row.task}: {row.status}", one_line=True))

    with _run_failures(config.out), progress:
        result = run_compare(config, modes, lambda mode, cfg: _agent_solver(cfg, mode, None, flags),
                             on_start=on_start, on_row=on_row)
    metrics = ablation_metrics(load_mode_rows(result.out))
    if as_json:
        print(json.dumps({"out": str(result.out), "report": str(result.report), "wall_s": result.wall_s,
                          "modes": {m: {"ran": r.ran, "resumed": r.resumed, "wall_s": r.wall_s,
                                        "epochs": {str(e + 1): v.model_dump()
                                                   for e, v in metrics.get(m, {}).items()}}
                                    for m, r in result.runs.items()}}))
        return
    cols = [Col("mode", wrap=False), *(Col(c, "right", wrap=False) for c in ("epoch", "tasks", "exec", "correct")),
            *(Col(c, "right") for c in ("fast_1 e2e", "speedup e2e (solved)", "speedup device",
                                        "roofline fraction"))]
    rows = [[mode, str(e + 1), str(m.tasks), _pct(m.execution_rate), _pct(m.correctness_rate), _pct(m.fast_1),
             _x(m.geomean_speedup), _x(m.device_geomean_speedup), roofline(m.mean_roofline_fraction)]
            for mode, epochs in metrics.items() for e, m in epochs.items()]
    out.print(fitted_table(cols, rows, out.width, title=f"memory ablation: {config.target}", box=box.SIMPLE_HEAD))
    out.text(f"{len(modes)} modes in {result.wall_s:.1f} s; results in {result.out}/<mode>/; report {result.report}")


@contextmanager
def _run_failures(run_out: Path) -> Iterator[None]:
    """A run's expected failures as clear messages and exit codes (finished tasks are kept)."""
    from sage.bench.executors import ExecutorUnavailable
    from sage.bench.runner import ResultsCorrupt, ResumeMismatch
    from sage.bench.tasks import TaskLoadError

    try:
        yield
    except (TaskLoadError, ExecutorUnavailable, ResumeMismatch, ResultsCorrupt) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail(f"interrupted; finished tasks are kept in {run_out} (continue with --resume --out {run_out})",
             code=130)


def _check_preset(preset: str) -> None:
    from sage.npu.hardware import list_presets

    if preset not in list_presets() and not Path(preset).is_file():
        fail(f"unknown preset '{preset}' (available: {', '.join(list_presets())})")


def _check_ops(target: str, levels: list[int] | None, ops: list[str]) -> None:
    """Every --ops name must select a task of the target; a typo gets the nearest names."""
    import re

    from sage.bench.runner import select_task_files
    from sage.bench.selection import task_key

    names: dict[str, set[str]] = {}
    for f in select_task_files(target, levels, None):
        for name in (f.stem, task_key(f), re.sub(r"^\d+_", "", f.stem)):
            names.setdefault(name, set()).add(str(f))
    unknown = [o for o in ops if o not in names]
    if unknown:
        where = target + (f" (levels {', '.join(map(str, levels))})" if levels else "")
        fail(f"--ops: no task named '{unknown[0]}' in {where}{did_you_mean(unknown[0], names)}")
