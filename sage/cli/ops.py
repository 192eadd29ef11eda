"""`sage ops` commands."""

import typer

app = typer.Typer(help="ops commands", no_args_is_help=True)
