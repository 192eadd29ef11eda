"""`sage export KERNEL.py (--task FILE | --op NAME) --to npuir`: the kernel as AscendNPU IR, and
with `--check` the vendor compiler's verdict on it (docs/export.md).

Exit codes: 0 written (and, with --check, passed), 1 refused or the vendor compiler refused
it, 2 bad input. A missing vendor compiler is not a failure of the kernel: the IR is written,
one line says why the check did not run, and the exit code is 0.
"""

from __future__ import annotations

from pathlib import Path

import typer

from rich.text import Text

from sage.cli.common import fail
from sage.cli.render import Screen
from sage.text import terminal

err = Screen(stderr=True)
FORMATS = ("npuir",)


def _say(head: str, message: str) -> None:
    """One line on stderr; `message` quotes the kernel or the vendor compiler: cleaned, never markup."""
    err.print(Text.assemble(head, terminal(message, one_line=True)), highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("export", help="Write a kernel as AscendNPU IR (MLIR: HIVM/HACC) for one case; --check runs "
                               "the vendor compiler's pipeline on it.")(export)


def export(
    kernel: Path = typer.Argument(..., help="the kernel file (DSL)"),
    task_file: Path = typer.Option(None, "--task", help="a task file (KernelBench format)"),
    op: str = typer.Option(None, "--op", help="an operator name, e.g. softmax or level1/10_layer_norm"),
    to: str = typer.Option(..., "--to", help="the format: npuir (AscendNPU IR)"),
    output: Path = typer.Option(None, "-o", "--output", help="write the IR here (default: stdout)"),
    case: int = typer.Option(0, "--case", min=0, help="the case whose shapes the IR is for (0-based)"),
    preset: str = typer.Option(None, "--preset", help="hardware preset; its chip is the vendor target"),
    check: bool = typer.Option(False, "--check", help="run bishengir-compile's pipeline on the IR"),
) -> None:
    from sage.bench.evaluate import select_cases
    from sage.bench.input_size import InputsTooLarge
    from sage.bench.tasks import (ReferenceUnavailable, TaskLoadError, UnknownOpError, kernel_args, load_task,
                                  parameter_kwargs, resolve_op)
    from sage.config import load_settings
    from sage.export import check_ir, unavailable_reason
    from sage.export.isolated import export_isolated
    from sage.export.vendor import target_of
    from sage.npu.hardware import load_preset

    if to not in FORMATS:
        fail(f"--to {to}: unknown format (known: {', '.join(FORMATS)})")
    if not kernel.is_file():
        fail(f"{kernel}: no such kernel file")
    if (task_file is None) == (op is None):
        fail("give exactly one of --task FILE or --op NAME")
    settings = load_settings(preset=preset)
    try:
        spec = load_preset(settings.preset)
        path = task_file if task_file is not None else resolve_op(op)
        task = load_task(path)
        task.seed = settings.seed
        model, [(_, inputs)] = select_cases(task, [case])
    except (UnknownOpError, ReferenceUnavailable, ValueError) as exc:
        fail(str(exc))
    except TaskLoadError as exc:
        fail(f"bad task file {exc}")
    except InputsTooLarge as exc:
        fail(f"{path}: no case can be made: {exc.reason}")
    # the kernel runs to be recorded: in a locked-down child, as `sage npu run` runs it (isolated.py)
    exported = export_isolated(kernel.read_text(encoding="utf-8", errors="replace"), kernel_args(inputs),
                               parameter_kwargs(model), spec=spec, filename=kernel.name)
    if exported.refusal is not None:
        _say("not exported: ", exported.refusal)
        raise typer.Exit(1)
    if output is None:
        print(exported.text, end="")
    else:
        try:
            output.write_text(exported.text, encoding="utf-8")
        except OSError as exc:
            fail(f"{output}: cannot write the IR ({exc.strerror or exc})")
        launches = f"{exported.launches} launches: " if exported.launches > 1 else ""
        _say(f"{output}: ", f"{launches}{exported.kernel}, {exported.blocks} block(s) in {exported.groups} group(s), "
                            f"{exported.ops} op(s)")
    if not check:
        raise typer.Exit(0)
    target = target_of(settings.preset)
    why = unavailable_reason()
    if target is None:
        _say("check: ", f"no vendor target is known for preset {settings.preset}")
        raise typer.Exit(0)
    if why is not None:
        _say("check: ", why)
        raise typer.Exit(0)
    result = check_ir(exported.text, target=target, kernel_file=kernel.name, lines=exported.lines)
    _say(f"check ({target}): ", result.line)
    raise typer.Exit(0 if result.passed else 1)
