"""The `sage` command: wires the command groups; each group lives in its own module."""

from __future__ import annotations

import typer

from sage import __version__
from sage.cli import bench, export, memory, npu, ops, synth
from sage.cli.common import APP_SETTINGS, WholeHelpGroup

app = typer.Typer(
    name="sage",
    help="A command-line agent that writes Ascend-C-style NPU kernels, runs them on a "
    "cycle-approximate AI Core simulator and learns from its experience memory.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    cls=WholeHelpGroup,
    **APP_SETTINGS,
)
app.add_typer(npu.app, name="npu")
app.add_typer(bench.app, name="bench")
app.add_typer(memory.app, name="memory")
app.add_typer(ops.app, name="ops")
synth.register(app)
export.register(app)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sage {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """sage: synthesise, simulate and benchmark NPU kernels."""


def main() -> None:
    app()
