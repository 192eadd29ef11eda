"""The profile of a forward() run, in msprof's terms (PipeUtilization per pipe, bytes per path).

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


def build_profile(run: Replay, essential_bytes: int) -> Profile:
    spec = run.spec
    launches = run.launches
    cycles = sum(lt.cycles for lt in launches)
    core_cycles = sum(lt.kernel_cycles * lt.cores_used for lt in launches)
    busy = [sum(lt.busy[p] for lt in launches) for p in range(7)]
    pipes = {name: PipeStat(busy_cycles=int(round(busy[p])),
                            utilisation=round(busy[p] / core_cycles, 4) if core_cycles else 0.0)
             for p, name in enumerate(PIPES)}
    nbytes: dict[str, int] = {}
    macs = vector = instructions = 0
    for b in run.all_blocks():
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
    return Profile(
        cycles=int(round(cycles)), time_us=round(round(cycles) / clock, 4), launches=len(launches),
        device_us=round(sum(lt.kernel_cycles for lt in launches) / clock, 4),
        blocks=sum(lt.block_dim for lt in launches), cores_used=max((lt.cores_used for lt in launches), default=0),
        pipes=pipes, bytes=nbytes, bottleneck=bottleneck, roofline_bound_us=round(bound / clock, 4),
        roofline_fraction=round(bound / cycles, 4) if cycles else 0.0, instructions=instructions)
