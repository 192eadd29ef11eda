"""What the offline agent learned in one episode, as experiences with knob hints.

- A search decision the simulator confirmed (the move measured faster than its start):
  scoped to the group's op class, dtype, shape regime and bottleneck - {op_class, dtype,
  regime, bottleneck} -> knobs, what a later search on a similar group can start from.
- A refinement that fixed an error or a wrong result: the fix, unscoped (it is about the
  error class, not the operator).
- A refinement move that bought speed (at least 3 %): scoped like a search decision.

The wording depends only on the change and its scope, so the same lesson learned on
several operators merges into one experience (the memory dedupes near-copies) and can
earn the breadth UGC asks for before it becomes a rule.
"""

from __future__ import annotations

from typing import Any

from sage.agent.offline.agent import CompilerAgent
from sage.agent.offline.hints import decision_hints
from sage.agent.reflection import MAX_TITLE
from sage.text import NOTE_CHARS

MIN_GAIN = 1.03

_WHY = {
    "tile_len": "the tile size trades the per-copy fixed cost and instruction heads against UB room",
    "buffer_num": "double buffering overlaps the copies of one tile with the compute of the next",
    "copy_mode": "DataCopy moves aligned dense tiles in one burst, DataCopyPad takes any row length",
    "fp32_compute": "float32 arithmetic for half inputs keeps reductions and long chains accurate",
    "row_axis": "the tile's rows along this axis let every operand be copied in whole rows",
    "block_dim": "more blocks keep every core busy",
    "row_split": "a reduction over many rows and few columns splits its rows across blocks (partials through GM)"
                 " rather than narrow its column chunks to short bursts",
}


def distil(agent: CompilerAgent, tags: list[str], limit: int = 3) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    state = agent.state
    if state is not None:
        for d in state.decisions.values():
            if d.move and d.measured_us and d.start_measured_us and d.measured_us * MIN_GAIN <= d.start_measured_us:
                gain = d.start_measured_us / d.measured_us
                out.append(_scoped(d.key, state.bottleneck_of(d.key), d.knobs,
                                   f"measured {gain:.2f}x faster than the start", tags))
    previous = None
    for a in agent.attempts:
        fb = a.feedback or {}
        if a.move is not None and previous is not None and fb.get("kind") == "correct":
            before = previous.feedback or {}
            gid, name = a.move
            if before.get("kind") in ("error", "incorrect"):
                knob, _, value = name.partition(" ")
                cause = before.get("error_type") or "incorrect"
                knobs = {k: v for k, v in a.schedules[next(iter(a.schedules))].model_dump().items()
                         if k == knob} if a.schedules else {}
                if knobs:
                    out.append({"title": f"Fix {cause}: {name}", "advice": f"A kernel failing with {cause} "
                                f"passed after {name}; {_WHY.get(knob, '')}.", "tags": sorted(set(tags + [cause])),
                                "hints": knobs})
            elif state is not None and gid in state.decisions and (fb.get("speedup") or 0) >= \
                    (before.get("speedup") or 0) * MIN_GAIN > 0:
                key = state.decisions[gid].key
                sched = a.schedules.get(gid)
                if sched is not None:
                    from sage.agent.compiler.search import knob_diff

                    out.append(_scoped(key, state.bottleneck_of(key), knob_diff(sched), f"an evaluated attempt got "
                                       f"{fb['speedup'] / before['speedup']:.2f}x faster", tags))
        previous = a
    whole = _whole_schedule(agent, tags)
    if whole is not None:
        out.insert(0, whole)
    unique: dict[str, dict[str, Any]] = {}
    for e in out:
        if len(e["title"]) <= MAX_TITLE:    # the reflection contract
            unique.setdefault(e["title"], e)
    return list(unique.values())[:limit]


def _bound(bottleneck: str | None) -> str:
    return f", {bottleneck}-bound" if bottleneck else ""


def _scoped(key, bottleneck: str | None, knobs: dict[str, Any], evidence: str, tags: list[str]) -> dict[str, Any]:
    shown = ", ".join(f"{k}={v}" for k, v in sorted(knobs.items())) or "the default schedule"
    elems, row = key.regime.split("/")
    advice = (f"For {key.op_class} groups on {key.dtype} data of about 2^{elems} elements{_bound(bottleneck)}, "
              f"start the schedule from {shown} ({evidence}).")
    # The note is capped (NOTE_CHARS); the knobs themselves are in the hints. Reasons are
    # added while they fit, so a lesson's note never ends cut.
    whys = [_WHY[k] for k in sorted(knobs) if k in _WHY]
    while whys and len(f"{advice} {'; '.join(whys)}.") > NOTE_CHARS:
        whys.pop()
    return {"title": f"{key.op_class} on {key.dtype}, 2^{elems} elements (rows 2^{row}){_bound(bottleneck)}: {shown}",
            "advice": f"{advice} {'; '.join(whys)}." if whys else advice,
            "tags": sorted(set(tags + [key.op_class, key.dtype, "schedule"])),
            "hints": decision_hints(key, knobs, bottleneck)}


def _whole_schedule(agent: CompilerAgent, tags: list[str]) -> dict[str, Any] | None:
    """The kept kernel's whole schedule once refinement tried moves: every knob of the group
    the moves were on, as the kept kernel runs it (a later search starts there). Whether a
    move beat the first attempt or the first stayed best, the kept schedule is the lesson."""
    state = agent.state
    judged = [a for a in agent.attempts if (a.feedback or {}).get("kind") == "correct"]
    moved = [a.move[0] for a in agent.attempts if a.move is not None and state is not None
             and a.move[0] in state.decisions]
    if state is None or len(judged) < 2 or not moved:
        return None
    best = max(judged, key=lambda a: a.feedback.get("speedup") or 0.0)
    gid = best.move[0] if best.move is not None and best.move[0] in state.decisions else moved[0]
    key = state.decisions[gid].key
    sched = best.schedules.get(gid, state.chosen.get(gid))
    if sched is None:
        return None
    knobs = {f: getattr(sched, f) for f in ("tile_len", "buffer_num", "block_dim", "copy_mode", "fp32_compute")}
    shown = (f"TILE_LEN {sched.tile_len}, BUFFER_NUM {sched.buffer_num}, BLOCK_DIM {sched.block_dim or 'all'}, "
             f"copy mode {sched.copy_mode}, fp32 compute {sched.fp32_compute}")
    first = judged[0].feedback.get("speedup") or 0.0
    gain = (best.feedback.get("speedup") or 0.0) / max(first, 1e-9)
    how = (f"{gain:.2f}x the first attempt after {best.move[1]}" if best is not judged[0] and best.move
           else f"the first schedule stayed fastest against {len(judged) - 1} single-knob move(s)")
    compact = (f"tile {sched.tile_len}, buffers {sched.buffer_num}, blocks {sched.block_dim or 'all'}, "
               f"copy {sched.copy_mode}, fp32 {sched.fp32_compute}")
    bottleneck = state.bottleneck_of(key)
    bound = f"{bottleneck}-bound " if bottleneck else ""
    return {"title": f"Whole schedule for {bound}{key.op_class}, {key.dtype}, 2^{key.regime.split('/')[0]}: {compact}",
            "advice": f"The kept kernel ran {shown} ({how}); start {key.op_class} groups of this size{_bound(bottleneck)} "
                      "from all of these knobs together.",
            "tags": sorted(set(tags + [key.op_class, key.dtype, "schedule"])),
            "hints": decision_hints(key, knobs, bottleneck)}
