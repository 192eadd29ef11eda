"""`sage synth`: synthesise one operator's kernel with the agent."""

import typer


def register(app: typer.Typer) -> None:
    """Adds the `synth` command to the root app (owned by the agent work)."""
