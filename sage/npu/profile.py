"""The profile of a forward() run, in msprof's terms (PipeUtilization per pipe, bytes per path).

Time (docs/reference-model.md §1, `sage.npu.timeline`): each launch is one kernel step of
the eager timeline. Its device time is the engine's cycles for the launch (slowest core,
`LaunchTiming.kernel_cycles`) plus the preset's `device_fixed_us`; the host pays
`host_dispatch_us` per launch, overlapped with the device. The three times of
`sage.npu.timeline.Times`: `kernel_us` (the launches' work alone), `device_us` (event-timed:
the first launch's start to the last one's end, fixed costs and gaps included) and `time_us`
(end to end, the scored time).

Busy cycles are summed over all cores. Utilisation is per core: a pipe's busy cycles over
the device time of each launch times the cores that run that pipe in it (the V pipe of a
mix launch is measured against its AIVs, M against its AICs, S and MTE2 against both), so
it is the busy fraction of the average core, as msprof's PipeUtilization. `pipes_by_type`
gives the same figures per core type, each against the cores of that type alone: in a MIX
launch the average over AICs and AIVs together can read "MTE2 30 %" while the AICs' copy
pipe is at 87 %.

Roofline bound (documented formula): the time no implementation of this forward() can beat
on this preset, from the essential work only, with the launch excluded:

    bound_us = max(essential GM bytes / HBM bandwidth, essential cube FLOPs / cube peak)

Essential GM bytes here are forward()'s inputs and outputs, each moved once. Every run
starts with a cold L2, so the inputs cost HBM bandwidth, and the machine model drains every
write to HBM through L2 (sage/npu/replay.py), so the outputs do too. (The bound once charged
outputs that fit in L2 at the L2 write rate of all cores, a rate the machine never grants a
write: a plain copy could reach only half of its "bound". The 1.39x that change answered
was swi_glu reading x's second halves as L2 hits after reading the first halves, which the
L2 model now refuses, sage/npu/sim/l2.py.) The bench layer refines the bytes per
operator (gathered rows instead of a whole table) and adds the reference's matmul FLOPs
(`sage.bench.evaluate`). roofline_fraction = bound / the kernels' own device time (the
device fixed cost of each launch excluded too), never above 1 for a physically possible
run. Work the kernel itself chooses to do never raises its own bound.
"""

from __future__ import annotations

from collections.abc import Sequence

from sage.npu.replay import Replay
from sage.npu.results import PIPES, PipeStat, Profile
from sage.npu.timeline import LaunchCosts, Step, kernel_steps, run_timeline


def _pipe_stats(run: Replay, only: str | None = None) -> dict[str, PipeStat]:
    """Every pipe over the run; `only` a core type: over that type's cores alone."""
    busy = [0.0] * len(PIPES)
    core_cycles = [0.0] * len(PIPES)     # device cycles x the cores that run each pipe
    for lt in run.launches:
        for kind, per_pipe in lt.busy_by_type.items():
            if only is not None and kind != only:
                continue
            for p, b in enumerate(per_pipe):
                busy[p] += b
                if b > 0:
                    core_cycles[p] += lt.kernel_cycles * lt.cores_by_type[kind]
    return {name: PipeStat(busy_cycles=int(round(busy[p])),
                           utilisation=round(busy[p] / core_cycles[p], 4) if core_cycles[p] else 0.0)
            for p, name in enumerate(PIPES)}


def build_profile(run: Replay, essential_bytes: int, essential_cube_flops: float = 0.0,
                  syncs: Sequence[int] = ()) -> Profile:
    """`syncs`: per host read-back, the number of launches before it (a sync step there)."""
    spec = run.spec
    launches = run.launches
    clock = spec.cycles_per_us
    costs = LaunchCosts.of(spec)
    pipes = _pipe_stats(run)
    kinds = sorted({kind for lt in launches for kind, per_pipe in lt.busy_by_type.items() if any(per_pipe)})
    by_type = {kind: _pipe_stats(run, kind) for kind in kinds}
    nbytes: dict[str, int] = {}
    instructions = 0
    for b in run.all_blocks():
        for path, n in b.bytes.items():
            nbytes[path] = nbytes.get(path, 0) + n
        instructions += b.instructions
    bottleneck = max(PIPES, key=lambda p: pipes[p].utilisation) if launches else "none"
    # The engine's interface: per launch, the device cycles of the kernel's own work.
    work_us = [lt.kernel_cycles / clock for lt in launches]
    steps = kernel_steps(work_us, [lt.name for lt in launches])
    for position in sorted(syncs, reverse=True):      # from the back, so earlier positions stay valid
        steps.insert(position, Step(kind="sync", label="read_back"))
    timeline = run_timeline(steps, costs, keep_steps=False)
    device_cycles = timeline.device_busy_us * clock
    widest = max(launches, key=lambda lt: lt.cores_used, default=None)
    hbm = sum(lt.hbm_bytes for lt in launches)
    kernel_cycles = sum(lt.kernel_cycles for lt in launches)
    bound_us, bound_kind = roofline_bound_us(spec, essential_bytes, essential_cube_flops)
    return Profile(
        cycles=int(round(device_cycles)), time_us=round(timeline.end_to_end_us, 4), launches=len(launches),
        syncs=timeline.syncs, sync_us=round(timeline.sync_us, 4),
        device_us=round(timeline.device_us, 4), kernel_us=round(timeline.kernel_us, 4),
        launch_device_us=[round(costs.device_fixed_us + w, 4) for w in work_us],
        host_dispatch_us=round(timeline.host_dispatch_us, 4), device_fixed_us=round(timeline.device_fixed_us, 4),
        blocks=sum(lt.block_dim for lt in launches), cores_used=max((lt.cores_used for lt in launches), default=0),
        pipes=pipes, bytes=nbytes, bottleneck=bottleneck, roofline_bound_us=round(bound_us, 4),
        roofline_bound=bound_kind,
        roofline_fraction=round(bound_us / timeline.kernel_us, 4) if timeline.kernel_us else 0.0,
        instructions=instructions, cores_by_type=dict(widest.cores_by_type) if widest else {}, hbm_bytes=hbm,
        pipes_by_type=by_type,
        hbm_utilisation=round(hbm / (kernel_cycles * spec.hbm_bytes_per_cycle), 4) if kernel_cycles else 0.0)


def roofline_bound_us(spec, essential_bytes: float, essential_cube_flops: float = 0.0,
                      fp32_cube: bool = False) -> tuple[float, str]:
    """(bound in µs, which resource sets it: "memory" or "cube"), launch excluded."""
    mem = essential_bytes / (spec.chip.hbm_gbps * 1e3)        # bytes per µs
    peak = 2.0 * spec.cube.peak_macs_per_cycle * spec.chip.aic_cores * spec.chip.clock_mhz
    cube = essential_cube_flops / (peak / (spec.cube.fp32_factor if fp32_cube else 1.0))
    return (cube, "cube") if cube > mem else (mem, "memory")
