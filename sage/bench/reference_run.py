"""The reference alone (`sage bench --reference-only`): each case's reference time and its
breakdown per aten operator, without any kernel.

The time model (sage.bench.reference) reads shapes and dtypes, not values, so a case is
timed on its *sized* inputs first (sage.bench.input_size: every large tensor on the meta
device, made in no time): the public level 1 makes about 5 G random elements otherwise, and
sorts, permutes and scans them on the CPU. A forward whose operations depend on the values
(`nonzero`, `.item()`, Python control flow on data) cannot run on meta tensors; that case is
timed on real inputs, made once for the task (within the input budget), and a forward that
raises on them is that case's `reference_error`. What the meta device does not check is
whether the CPU has a kernel for every op and dtype on that case (a kernel run of the task
still does).

A row stays small whatever the forward does (nms dispatches tens of thousands of calls per
case): the breakdown is summed per aten operator with its call count (`OpTotal`); the
per-call rows come only with `detail` (`sage bench --detail`), and the runner moves them out
of results.jsonl into a file of their own.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from sage.bench.case_support import describe_case
from sage.bench.evaluate import (ReferenceFailure, case_indices, describe_inputs, reference_outputs,
                                 reference_time_for)
from sage.bench.input_size import InputsTooLarge, has_meta, on_meta, sized_support
from sage.bench.reference.cycles import without_cycle_collection
from sage.bench.tasks import ReferenceUnavailable, Task, TaskLoadError, runtime_accelerator_reason


class OpTotal(BaseModel):
    """One aten operator of a case's eager chain, its calls summed."""

    op: str                               # aten name with overload, e.g. "add.Tensor"
    op_class: str
    calls: int
    device_us: float = 0.0
    work_us: float = 0.0
    roofline_us: float = 0.0
    l2_hit_bytes: float = 0.0
    syncs: int = 0
    units: str = ""                       # where its kernels ran: aicore, aicpu, or both (kernel_paths.py)
    kernels: int = 0                      # device kernels over its calls


class ReferenceCase(BaseModel):
    index: int
    inputs: list[str]
    total_us: float | None                # end_to_end_us (the scored reference time)
    device_us: float | None = None        # event-timed: first kernel's start to the last one's end, gaps included
    kernel_us: float | None = None        # the vendor kernels' durations summed (msprof op_summary)
    breakdown: Any = None                 # the split of the time and `ops` (OpTotal per aten operator)
    calls: list[dict] | None = None       # per-call rows, only with detail (moved out of results.jsonl)
    timed_on: Literal["meta", "real"] | None = None   # sized (meta) inputs, or inputs made for real
    unsupported: str | None = None        # why no 910B kernel can take the case (not measured)
    reference_error: str | None = None    # the CPU reference raised on this case (not measured)


class ReferenceRun(BaseModel):
    status: Literal["reference_ok", "reference_unavailable", "reference_error", "unsupported"]
    reason: str | None = None
    cases: list[ReferenceCase] = []
    total_us: float | None = None         # sum over the cases


def measure_reference(task: Task, preset: str, cases: int | list[int] | None, *, detail: bool = False,
                      shard: tuple[int, int] | None = None) -> ReferenceRun:
    """The reference time of each selected case (see the module's docstring); with `shard`
    (k, n), of every n-th selected case from the k-th (`merged_reference` joins the parts)."""
    try:
        model = task.make_model()
    except InputsTooLarge as exc:
        return ReferenceRun(status="unsupported", reason=exc.reason)
    except Exception as exc:  # the task's own code: its failure is the task's row, with why
        reason = runtime_accelerator_reason(exc)
        if reason:
            return ReferenceRun(status="reference_unavailable", reason=reason)
        return ReferenceRun(status="reference_error", reason=f"building Model raised {type(exc).__name__}: {exc}")
    real = _RealCases(task)
    try:
        try:
            sized = task.sized_cases()
        except TaskLoadError:
            sized = real.get()            # its input code reads large values: the real inputs from the start
        indices = case_indices(len(sized), cases)
        if shard is not None:
            indices = indices[shard[0]::shard[1]]
        # The collector off across the cases: their rows (breakdowns of thousands of calls)
        # stay alive to the end, so its passes would scan them again and again (cycles.py).
        with without_cycle_collection():
            out = [_measure_case(task, model, index, sized[index], real, preset, detail) for index in indices]
    except IndexError as exc:
        return ReferenceRun(status="reference_error", reason=str(exc))
    except ReferenceUnavailable as exc:
        return ReferenceRun(status="reference_unavailable", reason=exc.reason)
    except ReferenceFailure as exc:
        return ReferenceRun(status="reference_error", reason=str(exc))
    except TaskLoadError as exc:
        return ReferenceRun(status="reference_error", reason=exc.problem)
    except InputsTooLarge as exc:
        return ReferenceRun(status="unsupported", reason=exc.reason)
    # A shard's cases say nothing about the task as a whole: merged_reference decides.
    return _run_of(out) if shard is None else ReferenceRun(status="reference_ok", cases=out)


def _run_of(cases: list[ReferenceCase]) -> ReferenceRun:
    """The run of a task whose cases were measured: a reference_error when every case raised."""
    if cases and all(c.reference_error for c in cases):
        return ReferenceRun(status="reference_error", reason=cases[0].reference_error, cases=cases)
    totals = [c.total_us for c in cases if c.unsupported is None and c.reference_error is None]
    return ReferenceRun(status="reference_ok", cases=cases,
                        total_us=sum(totals) if totals and None not in totals else None)


# What a merged run says when its parts disagree: the worst first.
_STATUS_ORDER = ("reference_error", "reference_unavailable", "unsupported", "reference_ok")


def merged_reference(parts: list[ReferenceRun]) -> ReferenceRun:
    """One task's run from the runs of its shards: the cases of all, in order; the worst status
    of any part (a part that failed makes the task's row say why)."""
    cases = sorted((c for p in parts for c in p.cases), key=lambda c: c.index)
    worst = min(parts, key=lambda p: _STATUS_ORDER.index(p.status))
    if worst.status != "reference_ok":
        return worst.model_copy(update={"cases": cases})
    return _run_of(cases)


class _RealCases:
    """The task's cases made for real, once, when a case needs them."""

    def __init__(self, task: Task) -> None:
        self.task, self.cases = task, None

    def get(self) -> list[list]:
        if self.cases is None:
            self.cases = self.task.cases()
        return self.cases


def _measure_case(task: Task, model: Any, index: int, case: list, real: _RealCases, preset: str,
                  detail: bool) -> ReferenceCase:
    head = dict(index=index, inputs=describe_inputs(case))
    # What a 910B kernel cannot take is not measured (fp64, complex, more than 2^28 elements);
    # the meta tensors of a sized case are no reason by themselves.
    unsupported = sized_support(case, None)
    if unsupported:
        return ReferenceCase(**head, total_us=None, unsupported=unsupported)
    timed_on: Literal["meta", "real"] = "meta" if has_meta(case) else "real"
    try:
        # every tensor on the meta device: a small real one beside meta ones is a device mismatch
        ref = reference_time_for(task, on_meta(case) if has_meta(case) else case, preset)
    except ReferenceFailure as failure:
        if not has_meta(case):
            return _classified(model, index, case, head, failure)
        case, timed_on = real.get()[index], "real"     # the forward needs values: made for real
        over = task.case_support(case)
        if over:
            return ReferenceCase(**head, total_us=None, unsupported=over)
        try:
            ref = reference_time_for(task, case, preset)
        except ReferenceFailure as again:
            return _classified(model, index, case, head, again)
    if ref is None:
        return ReferenceCase(**head, total_us=None, timed_on=timed_on)
    return ReferenceCase(**head, total_us=float(ref.end_to_end_us), device_us=float(ref.device_us),
                         kernel_us=float(ref.kernel_us),
                         breakdown=breakdown(ref), calls=[o.model_dump(mode="json") for o in ref.ops] if detail else None,
                         timed_on=timed_on)


def _classified(model: Any, index: int, case: list, head: dict, failure: ReferenceFailure) -> ReferenceCase:
    """The time model failed on real inputs: the eager forward runs now, to tell a forward that
    raises (this case's reference_error, or an accelerator it needs) from a time model that
    does (`failure` re-raised: the task's error)."""
    try:
        reference_outputs(model, case)
    except ReferenceFailure as exc:
        return ReferenceCase(**head, total_us=None, reference_error=f"case {index} ({describe_case(case)}): {exc}")
    raise failure


def breakdown(ref: Any) -> dict:
    """The case's time split and its ops summed per aten operator (largest device time first)."""
    totals: dict[str, OpTotal] = {}
    for op in ref.ops:
        t = totals.setdefault(op.op, OpTotal(op=op.op, op_class=str(op.op_class), calls=0))
        t.calls += 1
        t.device_us += op.device_us
        t.work_us += op.work_us
        t.roofline_us += op.roofline_us
        t.l2_hit_bytes += op.l2_hit_bytes
        t.syncs += int(op.sync)
        t.kernels += op.kernels
        if op.unit:
            t.units = "+".join(dict.fromkeys([*filter(None, t.units.split("+")), *op.unit.split("+")]))
    split = ref.model_dump(mode="json", exclude={"ops"})
    return {**split, "ops": [t.model_dump() for t in sorted(totals.values(), key=lambda t: -t.device_us)]}
