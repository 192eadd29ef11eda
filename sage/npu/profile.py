"""The profile of a forward() run, in msprof's terms (PipeUtilization per pipe, bytes per path).

Busy cycles are summed over all cores. Utilisation is per core: a pipe's busy cycles over
the device time of each launch times the cores that run that pipe in it (the V pipe of a
mix launch is measured against its AIVs, M against its AICs, S and MTE2 against both), so
it is the busy fraction of the average core, as msprof's PipeUtilization.

Roofline bound (documented formula): the time no implementation of this forward() can beat
on this preset, given the work its kernels do:

    bound_cycles = max(essential GM bytes / HBM bytes per cycle,
                       cube MACs / (4096 MAC/cycle x AIC cores),
                       vector busy cycles without heads / AIV cores)
                   + one launch overhead

Essential GM bytes are the bytes of forward()'s inputs and outputs, each moved once. The
cube and vector terms use the kernels' own work (MACs of Mmad, slope x repeats of vector
instructions), spread perfectly over all cores. roofline_fraction = bound / time.
"""

from __future__ import annotations

from sage.npu.replay import Replay
from sage.npu.results import PIPES, PipeStat, Profile


def _pipe_stats(run: Replay) -> dict[str, PipeStat]:
    busy = [0.0] * len(PIPES)
    core_cycles = [0.0] * len(PIPES)     # device cycles x the cores that run each pipe
    for lt in run.launches:
        for kind, per_pipe in lt.busy_by_type.items():
            for p, b in enumerate(per_pipe):
                busy[p] += b
                if b > 0:
                    core_cycles[p] += lt.kernel_cycles * lt.cores_by_type[kind]
    return {name: PipeStat(busy_cycles=int(round(busy[p])),
                           utilisation=round(busy[p] / core_cycles[p], 4) if core_cycles[p] else 0.0)
            for p, name in enumerate(PIPES)}


def build_profile(run: Replay, essential_bytes: int) -> Profile:
    spec = run.spec
    launches = run.launches
    cycles = sum(lt.cycles for lt in launches)
    device = sum(lt.kernel_cycles for lt in launches)
    pipes = _pipe_stats(run)
    nbytes: dict[str, int] = {}
    macs = vector = instructions = 0
    for lt, streams in zip(launches, run.blocks):
        for p in lt.placements:
            b = streams[p.stream]
            for path, n in b.bytes.items():
                nbytes[path] = nbytes.get(path, 0) + n
            macs += b.macs
            vector += b.vector_cycles
            instructions += b.instructions
    bottleneck = max(PIPES, key=lambda p: pipes[p].utilisation) if launches else "none"
    chip = spec.chip
    bound = max(essential_bytes / spec.hbm_bytes_per_cycle,
                macs / (spec.cube.peak_macs_per_cycle * chip.aic_cores),
                vector / chip.aiv_cores) + spec.launch_overhead_cycles
    clock = spec.cycles_per_us
    widest = max(launches, key=lambda lt: lt.cores_used, default=None)
    hbm = sum(lt.hbm_bytes for lt in launches)
    return Profile(
        cycles=int(round(cycles)), time_us=round(round(cycles) / clock, 4), launches=len(launches),
        device_us=round(device / clock, 4), blocks=sum(lt.block_dim for lt in launches),
        cores_used=widest.cores_used if widest else 0, pipes=pipes, bytes=nbytes, bottleneck=bottleneck,
        roofline_bound_us=round(bound / clock, 4), roofline_fraction=round(bound / cycles, 4) if cycles else 0.0,
        instructions=instructions, cores_by_type=dict(widest.cores_by_type) if widest else {}, hbm_bytes=hbm,
        hbm_utilisation=round(hbm / (device * spec.hbm_bytes_per_cycle), 4) if device else 0.0)
