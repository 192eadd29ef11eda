"""What a compiled kernel file does for one case, for tests: its launches and the tiling the
host computes for them (the kernels themselves take their sizes at launch)."""

from __future__ import annotations

from typing import Any


def launches(compiled: Any, case: int = 0) -> int:
    """How many kernels forward() launches for the case."""
    return len(compiled.codes[case].launches)


def constants(compiled: Any, case: int = 0, launch: int = 0) -> dict[str, Any]:
    """The launch's size constants for the case (NC, NR, BLOCK_DIM, ...)."""
    return compiled.codes[case].launches[launch].constants()


def labels(compiled: Any, case: int = 0) -> list[str]:
    """What each launch of the case computes."""
    return [launch.label for launch in compiled.codes[case].launches]


def sandbox_outputs(source: str, args: list) -> list:
    """The outputs of a kernel file run in the sandbox on `args` (numpy arrays); any error fails."""
    from sage.npu.sandbox import run_sandboxed

    result = run_sandboxed(source, args)
    assert result.error is None, f"{result.error.type}: {result.error.message}"
    assert result.outputs is not None
    return result.outputs
