"""`sage npu` commands."""

import typer

app = typer.Typer(help="npu commands", no_args_is_help=True)
