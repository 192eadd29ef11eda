"""Simulator runs of one group's kernel, for the schedule search: timing only.

A run launches the group alone on its case's buffers (the forward's inputs with the
case's data, temporaries zero-filled: values do not change the timing of these kernels)
in the sandboxed simulator and reads the profile. It checks nothing and computes nothing
on the host: the verdict on a kernel is always the evaluation's. Every run is counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sage.agent.compiler.emit import Launch, suffixed
from sage.agent.compiler.ir import Program
from sage.kernels import HEADER, dsl_dtype


@dataclass
class RunStats:
    runs: int = 0
    failed: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Measured:
    time_us: float | None          # None: the kernel failed to run
    bottleneck: str | None
    error: str | None = None


def group_file(launch: Launch, prog: Program) -> tuple[str, list[str]]:
    """A kernel file running one launch; returns (source, the buffers forward takes)."""
    names = {b.name: b for b in prog.buffers.values()}
    taken = [a for a in launch.args if a in names and names[a].is_input]
    lines = [HEADER, suffixed(launch.source, "_h"), f"def forward({', '.join(taken) if taken else 'unused'}):"]
    for a in launch.args:
        if a not in taken:
            buf = names[a] if a in names else None
            numel, dt = (max(buf.numel, 1), buf.dtype) if buf else (1, "float32")
            lines.append(f"    {a} = empty(({numel},), {dsl_dtype(dt)})")
    head, _, rest = launch.call.partition("(")
    lines += [f"    {head}_h({rest}", "    return empty((1,), float32)"]
    return "\n".join(lines) + "\n", taken


def run_group(launch: Launch, prog: Program, case_args: list, params: dict[str, np.ndarray], preset: str,
              stats: RunStats) -> Measured:
    from sage.npu.sandbox import Limits, run_sandboxed

    source, taken = group_file(launch, prog)
    arrays: dict[str, np.ndarray] = {}
    for pos, bid in enumerate(prog.inputs):
        if bid is not None:
            arrays[prog.buffers[bid].name] = case_args[pos]
    arrays.update(params)
    args = [arrays[a] for a in taken] if taken else [np.zeros(1, np.float32)]
    stats.runs += 1
    run = run_sandboxed(source, args, preset=preset, limits=Limits(wall_seconds=120))
    if run.error is not None or run.profile is None:
        stats.failed += 1
        msg = f"{run.error.type}: {run.error.message}" if run.error else "no profile"
        stats.log.append({"launch": launch.label[:80], "error": msg[:200]})
        return Measured(None, None, msg)
    stats.log.append({"launch": launch.label[:80], "time_us": round(run.profile.time_us, 3),
                      "bottleneck": run.profile.bottleneck})
    return Measured(run.profile.time_us, run.profile.bottleneck)
