"""What the offline synthesizer learned in one episode: the knob changes that fixed an
error or bought speed, as experiences with knob hints.

The wording depends only on the change, not on the operator, so the same lesson learned
on several operators merges into one experience (the memory dedupes near-copies) and can
earn the breadth UGC asks for before it becomes a rule.
"""

from __future__ import annotations

from typing import Any

from sage.agent.offline import schedule
from sage.agent.offline.synthesizer import Step

MIN_GAIN = 1.03  # a change must buy at least 3 % to be worth remembering

_LESSONS: dict[str, tuple[str, str, list[str]]] = {
    "fp32_compute": ("Compute half-precision inputs in float32",
                     "float16/bfloat16 arithmetic (exp, reductions, long chains) misses the 1e-3 tolerance; "
                     "Cast the tile to float32 in UB, compute there and Cast back before CopyOut.",
                     ["precision", "float16", "bfloat16", "Cast"]),
    "buffer_num": ("Double-buffer the copy queues",
                   "With BUFFER_NUM = 2 the MTE2 copy of tile i+1 overlaps the vector work on tile i and the "
                   "MTE3 copy-out of tile i-1; with one buffer the pipes take turns.",
                   ["double-buffering", "MTE2", "pipeline"]),
    "block_dim": ("Launch a block on every core",
                  "A few blocks leave most AI cores idle; size block_dim to the core count (48 vector, 24 cube) "
                  "and deal tiles to blocks in contiguous runs.",
                  ["multicore", "block_dim", "tiling"]),
    "tile_len": ("Use large tiles",
                 "Small copies run far below peak GM bandwidth (it grows with transfer size) and pay the "
                 "instruction head every tile; fill UB with the largest tile that fits its buffers.",
                 ["tiling", "MTE2", "bandwidth"]),
    "copy_mode": ("DataCopy for 32-byte aligned rows, DataCopyPad for the rest",
                  "DataCopyPad handles any row length but costs more per burst; when a tile's rows are "
                  "32 B multiples and contiguous, one plain DataCopy moves it.",
                  ["DataCopy", "DataCopyPad", "alignment"]),
    "fold_reduce": ("Fold rows with vector adds before the cross-lane reduce",
                    "ReduceSum/ReduceMax pay about 7 cycles per 256 B repeat; halving the row with Add/Max "
                    "(about 2 cycles a repeat) down to one repeat and reducing that cuts a row kernel's vector time.",
                    ["reduction", "softmax", "norm", "vector"]),
    "base_tile": ("Use large cube base tiles",
                  "Small base tiles of C reload A and B from GM for every tile; 128x256 tiles (L0C holds "
                  "them in fp32) cut the GM->L1 traffic of a copy-bound matmul.",
                  ["cube", "matmul", "tiling"]),
    "k_steps": ("Stage a deep K slab in L1",
                "Copying K in short slabs GM->L1 pays the copy latency many times and runs below peak "
                "bandwidth; a K step of 64 into L0 and 320 of K per L1 copy fill L1 double-buffered.",
                ["cube", "matmul", "L1"]),
}


def distil(steps: list[Step], cube: bool, op_tags: list[str], limit: int = 3, *,
           op_class: str | None = None, dtype_class: str | None = None) -> list[dict[str, Any]]:
    """Up to `limit` experiences (title, advice, tags, hints): the winning schedule as a
    whole (when `op_class` is given and refinement beat the first kernel), then the error
    fixes, then the biggest single-knob speed gains."""
    whole = _winning_schedule(steps, cube, op_tags, op_class, dtype_class) if op_class else None
    fixes, gains = ([whole] if whole else []), []
    best_speed = None
    previous: Step | None = None
    for step in steps:
        fb = step.feedback or {}
        if step.move is not None and previous is not None and fb.get("kind") == "correct":
            before = previous.feedback or {}
            knob, value = step.move
            if before.get("kind") in ("error", "incorrect"):
                cause = before.get("error_type") or "incorrect"
                fixes.append(_experience(knob, value, cube, op_tags + [cause]))
            elif best_speed and (fb.get("speedup") or 0) >= best_speed * MIN_GAIN:
                gains.append(((fb["speedup"] / best_speed), _experience(knob, value, cube, op_tags)))
        if fb.get("kind") == "correct":
            best_speed = max(best_speed or 0.0, fb.get("speedup") or 0.0)
        previous = step
    gains.sort(key=lambda g: -g[0])
    out = fixes + [g[1] for g in gains]
    unique: dict[str, dict[str, Any]] = {}
    for e in out:
        unique.setdefault(e["title"], e)
    return list(unique.values())[:limit]


def _experience(knob: str, value: Any, cube: bool, tags: list[str]) -> dict[str, Any]:
    title, advice, extra = _LESSONS[knob]
    hints = schedule.move_hints(knob, value, cube)
    if knob == "tile_len":
        title, advice = f"{title} ({value} elements)", f"{advice} {value} elements per tile worked here."
    return {"title": title, "advice": advice, "tags": sorted(set(tags + extra)), "hints": hints}


def _winning_schedule(steps: list[Step], cube: bool, op_tags: list[str], op_class: str,
                      dtype_class: str | None) -> dict[str, Any] | None:
    """The best correct kernel's full knob set, when it beat the episode's first correct
    kernel: one knob alone can mislead (a large tile pays only with double buffering and
    every core busy), the whole set is the schedule that was measured."""
    correct = [s for s in steps if (s.feedback or {}).get("kind") == "correct"]
    if not correct:
        return None
    first = correct[0].feedback.get("speedup") or 0.0
    best = max(correct, key=lambda s: s.feedback.get("speedup") or 0.0)
    gain = (best.feedback.get("speedup") or 0.0) / first if first else 0.0
    if best is correct[0] or gain < MIN_GAIN:
        return None
    hints = schedule.full_hints(best.knobs, cube, row=op_class == "row")
    hints["op_class"] = op_class
    dtypes = dtype_class or "any"
    shown = schedule.describe(best.knobs)
    return {"title": f"Whole schedule for {op_class} kernels on {dtypes} inputs",
            "advice": (f"This whole schedule ({shown}) was the fastest correct {op_class} kernel on {dtypes} "
                       f"inputs, {gain:.2f}x the first one; start from all of it rather than one knob at a time."),
            "tags": sorted(set(op_tags + [op_class, dtypes, "schedule"])), "hints": hints}
