"""One compiled case as `CaseCode`: its launches traced on symbolic specs, its host code's sizes
as parameters.

Every group is lowered as before, under a trace (`sage.kernels.symbolic.tracing`) and a
lifting (`lift.py`): the lowering's spec reaches its generator with its sizes as
parameters, so the module the generator writes is the kernel of every case that takes the
same code path. A result the program leaves in a view or an input is copied into a fresh
buffer by a tile program of one identity, traced the same way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from sage.agent.compiler.emit import Launch
from sage.agent.compiler.generic.lift import lifting
from sage.agent.compiler.generic.merge import merged_launches
from sage.agent.compiler.generic.module import FIELD, take_tiling
from sage.agent.compiler.generic.prune import prune
from sage.agent.compiler.generic.casemodel import CaseCode, HostCode, TracedLaunch
from sage.agent.compiler.ir import Program
from sage.agent.compiler.lowerings import TileDoesNotFit, copy_launch, lower_group
from sage.agent.compiler.schedule import Schedule
from sage.kernels import Target, flat_args
from sage.kernels.symbolic import formula_of, tracing

if TYPE_CHECKING:
    from sage.agent.compiler.compiler import CaseProgram, ScheduleFor

# The name every traced launch is generated under; the kernel file suffixes each distinct
# kernel module (`_k<i>`), so a kernel's text does not depend on its group's position.
LAUNCH_NAME = "g"


def traced(lower: Callable[[], Launch | None], prog: Program) -> TracedLaunch | None:
    """`lower()`'s launch traced: its kernel module taking the tiling struct, the parameters'
    values, the guards and the fields' formulas (None when it launches nothing)."""
    from sage.agent.compiler.build import Unsupported

    try:
        with tracing() as trace, lifting(trace, lambda name: name in prog.names()):
            launch = lower()
    except Unsupported:
        # raises again, its message written with this case's sizes (not field names); when
        # only the symbolic run failed, the case's own kernel, its sizes written in
        return _concrete(lower())
    if launch is None:
        return None
    # the fields the module's text uses (a generator may render a size into text it then
    # drops), numbered in order of first use
    formulas = {k: f for f, k in trace.fields.items()}
    source = prune(launch.source, {launch.call.partition("(")[0].strip()})
    used: dict[int, int] = {}
    for m in FIELD.finditer(source):
        used.setdefault(int(m.group()[2:]), len(used))
    source = FIELD.sub(lambda m: f"td{used[int(m.group()[2:])]}", source)
    fields = [formulas[k] for k in used]
    return TracedLaunch(kernel=take_tiling(source, len(fields)), args=list(launch.args),
                        values=list(trace.values), guards=dict(trace.guards), fields=fields, label=launch.label,
                        raw=source, launch=launch, weight=None if launch.weight is None else formula_of(launch.weight),
                        entry=launch.call.partition("(")[0].strip())


class Room:
    """Bytes of kernel file still worth generating: a traced loop of thousands of steps is
    thousands of launches, and the sandbox refuses the file unread, so lowering stops first.
    Distinct kernel text may reach `slack` times the limit (templates and merging share it
    later); one case's host code (each launch's tiling call and launch, its parameters
    written out) is written whole in its class's host function, so it alone may not pass
    the limit (`case()` starts a case: cases of one class share their host function)."""

    def __init__(self, limit: int, slack: int) -> None:
        self.limit = limit
        self.kernels = slack * limit
        self.host = limit
        self.seen: set[str] = set()

    def case(self) -> None:
        self.host = self.limit

    def spend(self, launch: TracedLaunch, launches: int) -> None:
        from sage.agent.compiler.build import SourceTooLarge
        from sage.agent.compiler.generic.hostexpr import literal

        if launch.kernel not in self.seen:
            self.seen.add(launch.kernel)
            self.kernels -= len(launch.kernel)
        # at least: `tl<i> = tiling_k<k>(<values>)`, its None test, the launch on its buffers
        self.host -= 60 + len(launch.entry) + sum(len(literal(v)) + 2 for v in launch.values) + \
            sum(len(a) + 2 for a in launch.args)
        if self.kernels < 0 or self.host < 0:
            raise SourceTooLarge(f"the kernel file would exceed the sandbox's {self.limit // 1024} KB "
                              f"({launches} kernel launches for one case)")


def _concrete(launch: Launch | None) -> TracedLaunch | None:
    """A launch generated for this case alone (no parameters, an empty tiling): its text is
    its class's, so cases of other sizes never share it, and it is never merged with others
    (merging deals blocks by the traced parts' tiling fields)."""
    if launch is None:
        return None
    entry = launch.call.partition("(")[0].strip()
    source = prune(launch.source, {entry})
    return TracedLaunch(kernel=take_tiling(source, 0), args=list(launch.args), values=[], guards={}, fields=[],
                        label=launch.label, raw=source, launch=dataclasses.replace(launch, program=None),
                        weight=None, entry=entry)


def case_code(index: int, case: CaseProgram, schedule_for: ScheduleFor, schedules: dict, target: Target,
              room: Room) -> CaseCode:
    """The case's launches and host code; Unsupported (from a lowering) as before, or when
    the file would outgrow `room` (spent as the launches are traced)."""
    prog = case.built.program
    launches: list[TracedLaunch] = []
    room.case()
    for group, key in zip(case.plan.groups, case.keys):
        sched = schedules.setdefault(key, schedule_for(key))
        try:
            launch = traced(lambda: lower_group(group, prog, LAUNCH_NAME, sched, target), prog)
        except TileDoesNotFit:
            if sched == Schedule():
                raise
            # the class's schedule was chosen on another case of it: its tile may not fit this
            # one's rows (layer_norm's 8192 columns under a tile measured on 4096); the
            # default schedule, on which the compiler planned the case, does
            launch = traced(lambda: lower_group(group, prog, LAUNCH_NAME, Schedule(), target), prog)
        if launch is not None:
            launches.append(launch)
            room.spend(launch, len(case.plan.groups))
    launches = merged_launches(launches, target.vector_cores)
    host = HostCode()
    used = {a for launch in launches for a in launch.args}
    returned: set[int] = set()
    temps: list[tuple[str, int, str]] = []
    for j, ref in enumerate(prog.outputs):
        buf = prog.buffers[ref.buf]
        if ref.layout.numel == 0:
            host.returns.append(("empty", tuple(ref.shape), ref.dtype))
            continue
        whole = ref.layout.offset == 0 and ref.layout.is_dense() and ref.layout.numel == buf.numel
        if whole and not buf.is_input and ref.buf not in returned:
            returned.add(ref.buf)
            host.returns.append(("view", buf.name, tuple(ref.shape)))
            continue
        name = f"r{j}"
        copy = traced(lambda: copy_launch(prog, ref, name, f"copy_{name}", target), prog)
        if copy is not None:
            launches.append(copy)
        host.returns.append(("view", name, tuple(ref.shape)))
        temps.append((name, max(ref.layout.numel, 1), ref.dtype))
    named = {b.name: b for b in prog.buffers.values()}
    for name in sorted(used | {prog.buffers[b].name for b in returned}):
        buf = named.get(name)
        if buf is not None and not buf.is_input:
            temps.append((name, max(buf.numel, 1), buf.dtype))
    host.temps = [(n, host.param(numel), d) for n, numel, d in sorted(temps)]
    return CaseCode(index=index, flat=flat_args(case.case), packing=case.packing, names=case.args,
                    launches=launches, host=host, long_row_limit=case.long_row_limit)


__all__ = ["LAUNCH_NAME", "Room", "case_code", "traced"]
