"""Refinement turns: what the agent is told about its last attempt.

After a failure: the error class, message and kernel line (with that line quoted). After a
wrong result: which case and output, how many elements break the rule, NaN/Inf positions
counted apart from the finite error, and the first failing positions with the kernel's,
the eager reference's and the float64 truth's values. After a repeat: which attempt it
repeats and what that attempt got. After a success: end-to-end and device time against
the reference's (and how the reference runs: launches, fused or not), bytes moved per
path against the essential bytes, every case's speedup (the lowest first, capped at
`CASES_SHOWN` lines for a task of many cases), and the slowest case's pipe profile.

The correctness rule itself is in the system message (sage.bench.correctness.RULE); the
failure text here drops its copy of it so the prompt does not carry it twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sage.agent.backends.base import Message
from sage.agent.reference_facts import ReferenceFacts, format_bytes
from sage.bench.correctness import RULE

if TYPE_CHECKING:
    from sage.agent.records import Turn
    from sage.bench.evaluate import CaseResult, TaskEvaluation

AGAIN = "Answer again in the same format (one python block, one JSON object)."
# Per-case lines in a success feedback: every case up to CASES_ALL; beyond, the CASES_SHOWN
# lowest speedups (the cases that pull the geometric mean down) and one line for the rest.
CASES_ALL = 10
CASES_SHOWN = 8


def error_feedback(evaluation: TaskEvaluation, source: str) -> Message:
    err = evaluation.error
    case = next((c for c in evaluation.cases if c.error is not None), None)
    where = f"case {case.index} ({', '.join(case.inputs)})" if case is not None else "evaluation"
    text = [f"Your kernel failed on {where} with {err.type}: {err.message}"]
    if err.line is not None:
        text.append(f"Kernel line {err.line}:\n    {quote_line(source, err.line)}")
    text.append("Fix the kernel. " + AGAIN)
    facts = {"feedback": {"kind": "error", "error_type": err.type, "message": err.message, "line": err.line}}
    return Message(role="user", content="\n\n".join(text), facts=facts)


def incorrect_feedback(evaluation: TaskEvaluation) -> Message:
    bad = next((c for c in evaluation.cases if not c.correct), None)
    lines = [f"Your kernel ran but its result is wrong: {strip_rule(evaluation.reason) or 'outputs differ'}."]
    dtypes: list[str] = []
    if bad is not None:
        lines.append(f"First failing case {bad.index}: forward({', '.join(bad.inputs)}).")
        for s in bad.stats:
            if s.correct:
                continue
            dtypes.append(s.dtype)
            lines.append(f"- output {s.index} {s.dtype}{s.shape}: " + _mismatch_text(s))
            if s.first_failures:
                lines.append("  first failing positions (kernel = yours, eager = the reference in the task's "
                             "dtypes, truth = the float64 reference):")
                lines += [f"    {f}" for f in s.first_failures]
    lines.append("The correctness rule is in the system message. Fix the kernel. " + AGAIN)
    facts = {"feedback": {"kind": "incorrect", "reason": evaluation.reason, "dtypes": dtypes,
                          "inputs": bad.inputs if bad is not None else []}}
    return Message(role="user", content="\n".join(lines), facts=facts)


def _mismatch_text(s: Any) -> str:
    """NaN and Inf are counted on their own: the finite error statistics leave them out, so
    a kernel that writes NaN everywhere must not read as "max abs error 0"."""
    if s.tolerance is None:
        return f"{s.mismatches} of {s.elements} elements differ (compared exactly)"
    parts = []
    finite_bad = s.mismatches - s.nonfinite_mismatches
    if s.nonfinite_mismatches:
        parts.append(f"{s.nonfinite_mismatches} of {s.elements} positions have NaN/Inf where the truth does not "
                     "(or miss one it has)")
    if finite_bad or not s.nonfinite_mismatches:
        parts.append(f"{finite_bad} of {s.elements} finite elements outside the rule (tol {s.tolerance:g}); "
                     f"over the finite elements: max abs error {s.max_abs_error:.3g}, max rel error "
                     f"{s.max_rel_error:.3g}")
    l2 = f"relative L2 error {s.rel_l2_error:.3g}"
    if s.rel_l2_limit is not None:
        l2 += f" (limit {s.rel_l2_limit:.3g})"
    return "; ".join(parts + [l2])


def malformed_feedback(problem: str) -> Message:
    return Message(role="user", content=f"Your answer could not be used. {problem}",
                   facts={"feedback": {"kind": "malformed", "message": problem}})


def repeat_feedback(turn: Turn, original: Turn) -> Message:
    """A repeated kernel is not judged again (same inputs, same result): the model is told so."""
    text = (f"Attempt {turn.index} is the same kernel as attempt {original.index}, character for character, so it "
            f"was not evaluated again; attempt {original.index} got: {attempt_outcome(original)}. Change the "
            "kernel. " + AGAIN)
    return Message(role="user", content=text,
                   facts={"feedback": {"kind": "repeat", "of": original.index, "status": original.status}})


def success_feedback(evaluation: TaskEvaluation, best_speedup: float | None,
                     refs: dict[int, ReferenceFacts]) -> Message:
    lines = [f"Correct on all {len(evaluation.cases)} cases. Speedup over torch_npu (geometric mean over the "
             f"cases): {_fmt(evaluation.speedup)}x end to end (the score), {_fmt(evaluation.device_speedup)}x on "
             f"the device alone; roofline fraction {_fmt(evaluation.roofline_fraction)}."]
    if best_speedup is not None and evaluation.speedup is not None and best_speedup > evaluation.speedup:
        lines.append(f"Your best kernel so far reached {best_speedup:.2f}x.")
    lines += case_speedup_lines(evaluation)
    summary: dict[str, Any] = {}
    timed = [c for c in evaluation.cases if c.profile is not None]
    if timed:
        slowest = max(timed, key=lambda c: c.profile.time_us)
        lines += slowest_case_lines(slowest, refs.get(slowest.index))
        p = slowest.profile
        summary = {"bottleneck": p.bottleneck, "cores_used": p.cores_used, "blocks": p.blocks,
                   "launches": p.launches, "utilisation": {k: v.utilisation for k, v in p.pipes.items()},
                   "utilisation_by_type": {kind: {k: v.utilisation for k, v in pipes.items()}
                                           for kind, pipes in p.pipes_by_type.items()}}
    lines.append("Make it faster: attack the bottleneck (fuse launches the reference pays for, move fewer bytes, "
                 "bigger tiles or double buffering for a copy-bound kernel, more blocks if cores sit idle, fewer "
                 "instructions for a vector-bound one). " + AGAIN)
    facts = {"feedback": {"kind": "correct", "speedup": evaluation.speedup,
                          "roofline_fraction": evaluation.roofline_fraction, **summary}}
    return Message(role="user", content="\n".join(lines), facts=facts)


def case_speedup_lines(evaluation: TaskEvaluation) -> list[str]:
    """One short line per timed case: its inputs, your time against the reference's and the
    speedup, the lowest speedups first. A task of more than CASES_ALL cases shows the
    CASES_SHOWN lowest and sums up the rest in one line."""
    timed = [c for c in evaluation.cases if c.speedup is not None and c.times is not None]
    if len(timed) < 2:      # one case: the headline above is its speedup
        return []
    timed.sort(key=lambda c: (c.speedup, c.index))
    shown = timed if len(timed) <= CASES_ALL else timed[:CASES_SHOWN]
    head = (f"Speedup per case (end to end, lowest first; the score is their geometric mean, "
            f"{_fmt(evaluation.speedup)}x):")
    out = [head] + [f"- case {c.index} ({short(', '.join(c.inputs), 80)}): {_case_times(c)}, {c.speedup:.2f}x"
                    for c in shown]
    rest = timed[len(shown):]
    if rest:
        out.append(f"- {len(rest)} more cases, {rest[0].speedup:.2f}x to {rest[-1].speedup:.2f}x")
    return out


def _case_times(case: CaseResult) -> str:
    ref = case.reference_times.end_to_end_us if case.reference_times is not None else None
    yours = f"yours {case.times.end_to_end_us:.1f} us"
    return yours + (f" vs torch_npu {ref:.1f} us" if ref is not None else "")


def slowest_case_lines(case: CaseResult, ref: ReferenceFacts | None) -> list[str]:
    p = case.profile
    yours = (f"Slowest case {case.index} ({', '.join(case.inputs)}): your kernel {p.time_us:.1f} us end to end, "
             f"{p.device_us:.1f} us on the device ({p.launches} launch(es), {p.device_fixed_us:.1f} us of it the "
             f"launches' fixed cost), {p.kernel_us:.1f} us of kernel time, speedup {_fmt(case.speedup)}x end to end, "
             f"{_fmt(case.device_speedup)}x device.")
    out = [yours]
    if ref is not None:
        out.append("The reference: " + ref.line())
    moved = ", ".join(f"{path} {format_bytes(n)}" for path, n in sorted(p.bytes.items()) if n)
    essential = f" against {format_bytes(ref.essential_bytes)} essential" if ref is not None else ""
    ratio = (f" ({p.hbm_bytes / ref.essential_bytes:.1f}x the essential bytes)"
             if ref is not None and ref.essential_bytes > 0 else "")
    out.append(f"Bytes moved by path: {moved or 'none'}; HBM traffic {format_bytes(p.hbm_bytes)}{essential}{ratio}.")
    pipes = ", ".join(f"{name} {stat.busy_cycles} ({stat.utilisation:.0%})"
                      for name, stat in p.pipes.items() if stat.busy_cycles)
    out.append(f"Pipe profile: {p.cycles} device cycles, {p.blocks} blocks on {p.cores_used} cores; busy cycles by "
               f"pipe: {pipes}; bottleneck {p.bottleneck}; roofline bound {p.roofline_bound_us:.1f} us "
               f"({p.roofline_bound}), fraction {p.roofline_fraction:.2f}.")
    if len(p.pipes_by_type) > 1:
        out.append(core_type_line(p))
    return out


def core_type_line(p: Any) -> str:
    """A MIX launch's pipes per core type: the figures above average the AICs and AIVs together."""
    parts = []
    for kind, pipes in p.pipes_by_type.items():
        busy = ", ".join(f"{name} {stat.utilisation:.0%}" for name, stat in pipes.items() if stat.busy_cycles)
        cores = p.cores_by_type.get(kind)
        parts.append(f"{kind}{f' ({cores} cores)' if cores else ''}: {busy or 'idle'}")
    return ("Per core type (each against its own cores; the pipe profile above averages them): "
            + "; ".join(parts) + ".")


def attempt_outcome(turn: Turn) -> str:
    """What an attempt got, in a few words (repeats and the summary of earlier attempts use it)."""
    if turn.status == "correct":
        device = f", {_fmt(turn.device_speedup)}x device" if turn.device_speedup is not None else ""
        return f"correct, {_fmt(turn.speedup)}x end to end{device}, bottleneck {turn.bottleneck}"
    if turn.status == "incorrect":
        return f"wrong result: {short(strip_rule(turn.message), 200)}"
    if turn.status == "error":
        where = f" at line {turn.error_line}" if turn.error_line else ""
        return f"{turn.error_type}{where}: {short(turn.message, 200)}"
    if turn.status == "malformed":
        return f"answer broke the contract: {short(turn.message, 120)}"
    if turn.status == "repeat":
        return f"repeat of attempt {turn.repeat_of}, not evaluated"
    return f"no answer: {short(turn.message, 120)}"


def strip_rule(text: str | None) -> str:
    return (text or "").replace(RULE, "").strip().rstrip(".")


def short(text: str | None, n: int) -> str:
    one = " ".join((text or "").split())
    return one if len(one) <= n else one[: n - 1] + "…"


def quote_line(source: str, line: int) -> str:
    lines = source.splitlines()
    return lines[line - 1].strip() if 1 <= line <= len(lines) else "(line not in the kernel file)"


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"
