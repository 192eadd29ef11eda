"""Refinement turns: what the agent is told about its last attempt.

After a failure: the error class, message and kernel line (with that line quoted). After a
wrong result: which case and how far off. After a malformed answer: what broke the
contract. After a success: the profile (cycles by pipe, bottleneck, roofline fraction,
speedup) and a request to go faster.
"""

from __future__ import annotations

from typing import Any

from sage.agent.backends.base import Message


def error_feedback(evaluation: Any, source: str) -> Message:
    err = evaluation.error
    case = next((c for c in evaluation.cases if c.error is not None), None)
    where = f"case {case.index} ({', '.join(case.inputs)})" if case is not None else "evaluation"
    text = [f"Your kernel failed on {where} with {err.type}: {err.message}"]
    if err.line is not None:
        text.append(f"Kernel line {err.line}:\n    {quote_line(source, err.line)}")
    text.append("Fix the kernel and answer again in the same format (one python block, one JSON object).")
    facts = {"feedback": {"kind": "error", "error_type": err.type, "message": err.message, "line": err.line}}
    return Message(role="user", content="\n\n".join(text), facts=facts)


def incorrect_feedback(evaluation: Any) -> Message:
    bad = next((c for c in evaluation.cases if not c.correct), None)
    lines = [f"Your kernel ran but its result is wrong: {evaluation.reason or 'outputs differ from the reference'}."]
    dtypes: list[str] = []
    if bad is not None:
        lines.append(f"First failing case {bad.index}: forward({', '.join(bad.inputs)}).")
        for s in bad.stats:
            if not s.correct:
                dtypes.append(s.dtype)
                lines.append(
                    f"- output {s.index} {s.dtype}{s.shape}: {s.mismatches} of {s.elements} elements outside "
                    f"tolerance {s.tolerance}, max abs error {s.max_abs_error:.3g}, max rel error "
                    f"{s.max_rel_error:.3g}, relative L2 error {s.rel_l2_error:.3g}"
                )
    lines.append("Fix the kernel and answer again in the same format.")
    facts = {"feedback": {"kind": "incorrect", "reason": evaluation.reason, "dtypes": dtypes,
                          "inputs": bad.inputs if bad is not None else []}}
    return Message(role="user", content="\n".join(lines), facts=facts)


def malformed_feedback(problem: str) -> Message:
    return Message(role="user", content=f"Your answer could not be used. {problem}",
                   facts={"feedback": {"kind": "malformed", "message": problem}})


def success_feedback(evaluation: Any, best_speedup: float | None) -> Message:
    profiles = [c for c in evaluation.cases if c.profile is not None]
    lines = [f"Correct on all {len(evaluation.cases)} cases. Speedup over the vendor kernels "
             f"(geometric mean): {_fmt(evaluation.speedup)}x; roofline fraction {_fmt(evaluation.roofline_fraction)}."]
    if best_speedup is not None and evaluation.speedup is not None and best_speedup > evaluation.speedup:
        lines.append(f"Your best kernel so far reached {best_speedup:.2f}x.")
    summary: dict[str, Any] = {}
    if profiles:
        slowest = max(profiles, key=lambda c: c.profile.time_us)
        p = slowest.profile
        pipes = ", ".join(f"{name} {stat.busy_cycles} ({stat.utilisation:.0%})"
                          for name, stat in p.pipes.items() if stat.busy_cycles)
        lines.append(
            f"Profile of the slowest case {slowest.index} ({', '.join(slowest.inputs)}): {p.cycles} cycles, "
            f"{p.time_us:.1f} us over {p.launches} launch(es), {p.blocks} blocks on {p.cores_used} cores; "
            f"busy cycles by pipe: {pipes}; bottleneck {p.bottleneck}; roofline bound {p.roofline_bound_us:.1f} us "
            f"(fraction {p.roofline_fraction:.2f}); speedup {_fmt(slowest.speedup)}x."
        )
        summary = {"bottleneck": p.bottleneck, "cores_used": p.cores_used, "blocks": p.blocks,
                   "launches": p.launches, "utilisation": {k: v.utilisation for k, v in p.pipes.items()}}
    lines.append("Make it faster: attack the bottleneck (bigger tiles or double buffering for a copy-bound "
                 "kernel, more blocks if cores sit idle, fewer instructions for a vector-bound one). "
                 "Answer in the same format.")
    facts = {"feedback": {"kind": "correct", "speedup": evaluation.speedup,
                          "roofline_fraction": evaluation.roofline_fraction, **summary}}
    return Message(role="user", content="\n".join(lines), facts=facts)


def quote_line(source: str, line: int) -> str:
    lines = source.splitlines()
    return lines[line - 1].strip() if 1 <= line <= len(lines) else "(line not in the kernel file)"


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"
