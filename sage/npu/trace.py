"""Chrome / Perfetto trace events: one process per core (pid = core), one thread per pipe (tid = pipe)."""

from __future__ import annotations

from sage.npu.replay import Replay
from sage.npu.results import PIPES
from sage.npu.sim.opcodes import NORMAL


def build_trace(run: Replay) -> list[dict]:
    """Needs a replay made with ``keep=True`` (per-record start and end times)."""
    clock = run.spec.cycles_per_us
    events: list[dict] = []
    cores: set[int] = set()
    offset = 0.0
    for lt, blocks in zip(run.launches, run.blocks):
        for block, core, start in lt.placements:
            cores.add(core)
            timing = lt.timings[block]
            base = offset + start
            for rec, st, en in zip(blocks[block].records, timing.starts, timing.ends):
                if en <= st or rec[6] != NORMAL:  # flags and barriers show as the gaps they cause
                    continue
                pipe = PIPES[rec[0]]
                events.append({"name": rec[5], "cat": pipe, "ph": "X", "ts": round((base + st) / clock, 4),
                               "dur": round((en - st) / clock, 4), "pid": core, "tid": pipe,
                               "args": {"kernel": lt.name, "block": block}})
        offset += lt.cycles
    for core in sorted(cores):
        events.append({"name": "process_name", "ph": "M", "pid": core, "args": {"name": f"core {core}"}})
        for i, pipe in enumerate(PIPES):
            events.append({"name": "thread_name", "ph": "M", "pid": core, "tid": pipe, "args": {"name": pipe}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": core, "tid": pipe, "args": {"sort_index": i}})
    return events
