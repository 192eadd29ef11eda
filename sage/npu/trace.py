"""Chrome / Perfetto trace events of a timed run.

Process 0 is the launch track, in device time: per launch a "fixed" span (the preset's
device_fixed_us, what every kernel costs the device beyond its own work) and then a "kernel"
span (first block start to last block end). Host dispatch overlaps the device and is not
drawn; `Profile.time_us` adds it on the eager timeline.
Then one process per physical core that ran a block ("AIV 3", "AIC 1"), one thread per pipe.
"""

from __future__ import annotations

from sage.npu.replay import Replay
from sage.npu.results import PIPES
from sage.npu.sim.opcodes import AIC, NORMAL

LAUNCH_PID = 0


def build_trace(run: Replay) -> list[dict]:
    """Needs a replay made with ``keep=True`` (per-record start and end times)."""
    clock = run.spec.cycles_per_us
    aiv_cores = run.spec.chip.aiv_cores
    events: list[dict] = []
    cores: dict[int, str] = {}

    def span(name: str, cat: str, start: float, dur: float, pid: int, tid: str, args: dict) -> dict:
        return {"name": name, "cat": cat, "ph": "X", "ts": round(start / clock, 4), "dur": round(dur / clock, 4),
                "pid": pid, "tid": tid, "args": args}

    offset = 0.0
    for lt, launch in zip(run.launches, run.traces):
        info = {"kernel": lt.name, "kernel_type": lt.kernel_type, "block_dim": lt.block_dim}
        events.append(span(lt.name, "launch", offset, lt.overhead_cycles, LAUNCH_PID, "fixed", info))
        base = offset + lt.overhead_cycles
        events.append(span(lt.name, "launch", base, lt.kernel_cycles, LAUNCH_PID, "kernel", info))
        for pl in lt.placements:
            pid = 1 + pl.core + (aiv_cores if pl.core_type == AIC else 0)
            cores[pid] = f"{pl.core_type} {pl.core}"
            starts, ends = lt.timings[pl.stream]
            args = {"kernel": lt.name, "block": pl.block}
            for rec, st, en in zip(launch.blocks[pl.stream].records, starts, ends):
                if en > st and rec[1] == NORMAL:  # flags and barriers show as the gaps they cause
                    pipe = PIPES[rec[0]]
                    events.append(span(rec[11], pipe, base + st, en - st, pid, pipe, args))
        offset += lt.cycles
    events.append({"name": "process_name", "ph": "M", "pid": LAUNCH_PID, "args": {"name": "launch"}})
    for i, tid in enumerate(("fixed", "kernel")):
        events.append({"name": "thread_name", "ph": "M", "pid": LAUNCH_PID, "tid": tid, "args": {"name": tid}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": LAUNCH_PID, "tid": tid,
                       "args": {"sort_index": i}})
    for pid in sorted(cores):
        events.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": cores[pid]}})
        for i, pipe in enumerate(PIPES):
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": pipe, "args": {"name": pipe}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": pipe, "args": {"sort_index": i}})
    return events
