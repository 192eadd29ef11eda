"""`sage memory` commands."""

import typer

app = typer.Typer(help="memory commands", no_args_is_help=True)
