"""Evaluating one kernel on one task: reference in torch, kernel in the sandboxed simulator.

For every case the inputs are made fresh (`Task.cases()` regenerates them on each call),
the reference runs on CPU torch twice (eager in the task's dtypes, and the float64 truth),
the kernel runs through `run_sandboxed` on the same values, and the outputs are compared
with the rule of `correctness.py`. The reference time of the case comes from the torch_npu
stand-in (`sage.bench.reference`); both sides go through the same eager timeline
(`sage.npu.timeline`), which gives each side three times (`Times`: kernel_us, device_us,
end_to_end_us; docs/evaluation.md). The speedup is reported twice: end to end (reference
end-to-end / kernel end-to-end: the headline, what fast_p and the agent's reward use) and on
device_us. The roofline fraction is the reference forward's essential-work bound over the
kernel's kernel_us (launch costs excluded from both). A correct case whose kernel_us beats
that essential work at the simulator's fastest rates by more than the tripwire allows
(`sage.npu.bound`) is an ImpossibleResultError, never scored.

A case whose kernel raises stops the evaluation (the task did not execute); a case that
runs but is wrong does not, so every executed case has statistics. Every error and
reference failure names its case and the case's shapes.

Cases that say nothing about the kernel are not judged, and leave both correctness and
speed: a case no 910B kernel can take (fp64 or complex arguments, more elements than a
simulated run can hold: `Task.case_support`) is `unsupported` with that reason, and a case
whose CPU reference raises (e.g. an op without a CPU kernel for fp16) has its
`reference_error`. A task none of whose cases can be judged is `unsupported` (or
`reference_error` when its reference failed on every case). A case whose outputs all have
zero elements (`empty`) is judged on shape and dtype alone and needs no launch; it has no
time to compare, so it leaves the speed means. An incorrect case gets no speedup or
roofline fraction: a wrong kernel has no speed worth reporting. When an incorrect output
still holds the 0xFF fill of `empty()`, the reason says it was never written, and when
forward() launched no kernel at all, it says that.

`sage.bench.reference_run.measure_reference` is the same pass without a kernel (what
`sage bench --reference-only` records).
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import math
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field

from sage.bench.case_support import describe_arg, describe_case
from sage.bench.copy_only import copies_only, recorded_ops
from sage.bench.correctness import Comparison, OutputStats, compare_outputs, dtype_name, unwritten_elements
from sage.bench.deterministic import deterministic
from sage.bench.input_size import InputsTooLarge
from sage.bench.tasks import (ReferenceUnavailable, Task, TaskLoadError, kernel_args,
                              parameter_kwargs, runtime_accelerator_reason, to_numpy)
from sage.npu.bound import EssentialWork
from sage.npu.results import ErrorInfo, Profile
from sage.npu.sandbox import Limits, run_sandboxed
from sage.npu.timeline import Times
from sage.text import ERROR_CHARS, clean

if TYPE_CHECKING:
    from sage.bench.reference.essential import Essential

Status = Literal["correct", "incorrect", "error", "no_kernel", "reference_unavailable", "reference_error",
                 "unsupported"]
# Statuses that say nothing about the kernel: such tasks leave the metrics' denominators.
SKIP_STATUSES = frozenset({"reference_unavailable", "reference_error", "unsupported"})


class CaseResult(BaseModel):
    model_config = ConfigDict(ser_json_inf_nan="strings")

    index: int
    inputs: list[str] = []                    # "float16[64, 2117]" per tensor argument, repr of the others
    correct: bool = False
    unsupported: str | None = None            # why no 910B kernel can take the case (not judged)
    reference_error: str | None = None        # the CPU reference raised on this case (not judged)
    empty: bool = False                       # every output has zero elements: judged on shape and dtype, not timed
    error: ErrorInfo | None = None
    reason: str | None = None                 # why the comparison failed
    stats: list[OutputStats] = []
    cycles: int | None = None
    times: Times | None = None                # the kernel's kernel_us, device_us, end_to_end_us (the scored one)
    reference_times: Times | None = None      # the vendor's, the same three
    reference_problem: str | None = None      # why there is no reference time (the model failed, or no kernel)
    speedup: float | None = None              # end to end: reference end_to_end_us / the kernel's
    device_speedup: float | None = None       # reference device_us / the kernel's device_us
    roofline_fraction: float | None = None    # essential-work bound / kernel_us (launch excluded)
    roofline_bound_us: float | None = None
    roofline_bound: str | None = None         # memory | cube: which essential bound
    bottleneck: str | None = None
    profile: Profile | None = None
    printed: str | None = None                # what the kernel printed (bounded)
    trace: list[dict] | None = Field(default=None, exclude=True)   # only on request, never stored


class Split(BaseModel):
    """Where a task's judging time went, in seconds of wall time (issue 31 asks the public
    levels' wall time split into reference, compile and simulate: the compile is the rest of
    the job, outside the evaluation)."""

    reference: float = 0.0       # the reference's outputs and their float64 truth
    time_model: float = 0.0      # the torch_npu time model (sage.bench.reference)
    simulate: float = 0.0        # the kernel's sandboxed runs
    check: float = 0.0           # comparing the outputs, the physical tripwire

    @contextlib.contextmanager
    def part(self, name: str) -> Iterator[None]:
        """Adds the wall time of the block (also when it leaves by an exception) to `name`."""
        began = time.perf_counter()
        try:
            yield
        finally:
            setattr(self, name, getattr(self, name) + time.perf_counter() - began)


class TaskEvaluation(BaseModel):
    model_config = ConfigDict(ser_json_inf_nan="strings")

    task: str
    level: int | None = None
    tags: list[str] = []
    status: Status
    executed: bool = False
    correct: bool = False
    speedup: float | None = None              # end to end, geometric mean over the cases (the headline)
    device_speedup: float | None = None       # device only, geometric mean over the cases
    times: Times | None = None                # the kernel's three times, each the geometric mean over the cases
    reference_times: Times | None = None      # the vendor's, likewise
    roofline_fraction: float | None = None    # mean over the timed correct cases (docs/evaluation.md)
    roofline_bound: str | None = None         # memory | cube, or "memory/cube" when the cases differ
    reason: str | None = None
    error: ErrorInfo | None = None            # the first kernel error
    cases: list[CaseResult] = []
    wall_s: float = 0.0
    isolation_gaps: list[str] = []            # OS isolation layers this machine could not apply
    split: Split | None = None                # where wall_s went


def evaluate_kernel(task: Task, source: str, *, preset: str = "ascend910b2",
                    cases: int | Sequence[int] | None = None, limits: Limits | None = None,
                    filename: str = "kernel.py", trace: bool = False,
                    on_case: Callable[[int, int], None] | None = None) -> TaskEvaluation:
    """`cases`: None for all, an int K for the first K, or explicit case indices.
    `trace`: keep each case's Chrome trace events in `CaseResult.trace` (never serialised).
    `on_case(done, total)`: called as each case is judged (progress)."""
    limits = limits or Limits()
    start = time.perf_counter()
    head = dict(task=task.key, level=task.level, tags=task.tags)
    try:
        model, selected = select_cases(task, cases)
    except ReferenceUnavailable as exc:
        return TaskEvaluation(**head, status="reference_unavailable", reason=exc.reason)
    except TaskLoadError as exc:
        return TaskEvaluation(**head, status="reference_error", reason=exc.problem)
    except InputsTooLarge as exc:
        return TaskEvaluation(**head, status="unsupported", reason=exc.reason)
    kwargs = parameter_kwargs(model)

    results: list[CaseResult] = []
    isolation_gaps: set[str] = set()
    split = Split()
    for index, case in selected:
        if on_case is not None:
            on_case(len(results), len(selected))
        result = CaseResult(index=index, inputs=describe_inputs(case))
        results.append(result)
        result.unsupported = task.case_support(case)
        if result.unsupported:
            continue
        where = f"case {index} ({describe_case(case)})"
        try:
            with split.part("reference"):
                ops: set[str] = set()
                expected = reference_outputs(model, case, ops)
        except ReferenceUnavailable as exc:
            return TaskEvaluation(**head, status="reference_unavailable", reason=exc.reason)
        except ReferenceFailure as exc:
            result.reference_error = f"{where}: {exc}"
            continue
        with split.part("reference"):
            # a reference that only moves elements has its eager output as its float64 truth
            truth = expected if copies_only(ops) else truth_outputs(model, case, len(expected))
        result.empty = all(e.size == 0 for e in expected)
        ref = None
        try:
            with split.part("time_model"):
                ref = reference_time_for(task, case, preset)
        except ReferenceFailure as exc:
            # Correctness does not need the time model: the case is still judged, without a speedup.
            result.reference_problem = str(exc)
        if ref is not None:
            result.reference_times = ref.times
        with split.part("simulate"):
            run = run_sandboxed(source, kernel_args(case), kwargs, preset=preset, filename=filename,
                                trace=trace, expected=output_specs(expected), limits=limits)
        result.printed = run.printed or None
        isolation_gaps.update(run.isolation_gaps)
        never_launched = _never_launched(run.profile, expected)
        blank = None if run.error is not None or never_launched else _blank_output(expected, run.outputs)
        if run.error is None:
            with split.part("check"):
                comparison: Comparison = compare_outputs(expected, run.outputs or [], truth=truth,
                                                         int_step=1 if "quant" in task.tags else 0)
                # The tripwire guards what is scored, a correct result's time: a wrong result is not
                # scored, and "incorrect" (an output never written, say) tells its author more than
                # "impossible" would. An empty case (every output without elements) is not scored
                # either: it needs no work, whatever its inputs hold.
                if comparison.correct and not never_launched and not result.empty:
                    run.error = physical_check(run.profile, expected, model, case, preset,
                                               essential=ref.essential if ref is not None else None)
        if run.error is not None:
            result.error = run.error.model_copy(update={"message": f"{where}: {run.error.message}"})
            break
        if not result.empty:
            _fill_profile(result, run.profile, ref)
        result.trace = run.trace
        result.correct, result.reason, result.stats = comparison.correct, comparison.reason, comparison.outputs
        if never_launched:
            # Outputs that no kernel computed are wrong even where empty()'s fill happens to match.
            result.correct, result.reason = False, f"{where}: {NEVER_LAUNCHED}"
        elif blank is not None:
            result.correct, result.reason = False, f"{where}: {blank}"
        elif not result.correct:
            result.reason = f"{where}: {_unwritten_reason(expected, run.outputs) or result.reason}"
        if not result.correct:
            # A wrong kernel has no speed worth reporting.
            result.speedup = result.device_speedup = result.roofline_fraction = None
    evaluation = _summarise(head, results, time.perf_counter() - start)
    evaluation.isolation_gaps = sorted(isolation_gaps)
    evaluation.split = split
    return evaluation


def physical_check(profile: Profile | None, expected: list[np.ndarray], model: torch.nn.Module, case: list,
                   preset: str, essential: Essential | None = None) -> ErrorInfo | None:
    """The tripwire of `sage.npu.bound`: an ImpossibleResultError when the run claims less kernel
    time (kernel_us) than its essential work (the reference forward's essential bytes and cube FLOPs)
    takes at the simulator's fastest rates, beyond the tripwire's margin. `essential`: that work
    as the reference time model found it on the same forward (else the forward is traced here)."""
    from sage.npu.bound import check_physical
    from sage.npu.errors import ImpossibleResultError
    from sage.npu.hardware import load_preset

    if profile is None:
        return None
    try:
        # The kernels' durations alone: a launch's fixed cost and the gaps are no work on the outputs.
        work = essential_of(model, case, expected, preset) if essential is None else \
            EssentialWork(bytes=essential.bytes, cube_flops=essential.cube_flops)
        check_physical(load_preset(preset), work, profile.kernel_us)
    except ImpossibleResultError as exc:
        return exc.info()
    return None


def essential_of(model: torch.nn.Module, case: list, expected: list[np.ndarray], preset: str) -> EssentialWork:
    """The essential work of the reference forward on `case` (the roofline's: inputs it must
    read, outputs, matmul FLOPs); its outputs alone when its graph cannot be traced."""
    from sage.bench.reference import essential_work
    from sage.kernels import trace_graph
    from sage.npu.hardware import load_preset

    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in case]
    try:
        with torch.no_grad():
            work = essential_work(trace_graph(model, args), load_preset(preset))
    except Exception:  # noqa: BLE001 - the reference model reports its own failure; the outputs bound stands
        return EssentialWork(bytes=float(sum(e.nbytes for e in expected)))
    return EssentialWork(bytes=work.bytes, cube_flops=work.cube_flops)


class ReferenceFailure(Exception):
    """The reference forward raised for a reason other than a missing accelerator."""

    def __init__(self, message: str) -> None:
        super().__init__(clean(message, ERROR_CHARS))   # task code's text: shown and stored (sage/text.py)


def reference_outputs(model: torch.nn.Module, case: list, ops: set[str] | None = None) -> list[np.ndarray]:
    """Runs the reference on clones of the inputs (a forward that mutates its arguments
    must not change what the kernel sees), with torch's deterministic algorithms, and
    flattens the result to numpy arrays. `ops`: filled with what the forward dispatched
    (sage/bench/copy_only.py)."""
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in case]
    try:
        with torch.no_grad(), deterministic():      # repeated indices land in index order (deterministic.py)
            if ops is None:
                out = model(*args)
            else:
                with recorded_ops() as seen:
                    out = model(*args)
                ops.update(seen)
    except Exception as exc:  # the reference is trusted code; its failure is reported, not hidden
        reason = runtime_accelerator_reason(exc)
        if reason:
            raise ReferenceUnavailable("<reference>", reason) from exc
        raise ReferenceFailure(f"reference forward raised {type(exc).__name__}: {exc}") from exc
    # the outputs of a forward run on clones: nothing else holds their memory (the case's own
    # tensors are untouched), so they need no second copy
    return [to_numpy(t, copy=False) if isinstance(t, torch.Tensor) else np.asarray(t) for t in _flatten(out)]


def truth_outputs(model: torch.nn.Module, case: list, count: int) -> list[np.ndarray] | None:
    """The reference on the same inputs with floating inputs, parameters and buffers promoted
    to float64 (explicit casts inside it stay as written): the truth of correctness.py. None
    when that forward cannot run in float64 (the eager output then stands in for the truth)."""
    promoted = copy.deepcopy(model).double()
    args = [a.detach().clone().double() if isinstance(a, torch.Tensor) and a.is_floating_point()
            else (a.clone() if isinstance(a, torch.Tensor) else a) for a in case]
    try:
        with torch.no_grad(), deterministic():
            out = promoted(*args)
    except (RuntimeError, TypeError, ValueError, NotImplementedError):
        return None   # e.g. an op without a float64 kernel, or float64 meeting an explicit float32 operand
    # a forward of a copied model on cloned inputs: nothing else holds its outputs' memory, so
    # they need no second copy (a float64 truth of 1.9 GB took 4.7 s to copy: public
    # level1/24 case 14, whose file ran past the 300 s a task may take)
    flat = [to_numpy(t, copy=False) if isinstance(t, torch.Tensor) else np.asarray(t) for t in _flatten(out)]
    return flat if len(flat) == count else None


def reference_time_for(task: Task, case: list, preset: str) -> Any:
    """The reference model's `ReferenceTime` for this case (None while that model is absent)."""
    spec = importlib.util.find_spec("sage.bench.reference")
    if spec is None or spec.origin is None:  # absent, or a folder still without its __init__
        return None
    from sage.bench.reference import reference_time

    try:
        return reference_time(task, case, preset)
    except ReferenceUnavailable:
        raise
    except Exception as exc:  # reported as this task's reference problem, never as the kernel's
        raise ReferenceFailure(f"reference time model raised {type(exc).__name__}: {exc}") from exc


def output_specs(expected: list[np.ndarray]) -> list:
    from sage.npu.execute import OutputSpec

    return [OutputSpec(shape=tuple(e.shape), dtype=dtype_name(e.dtype)) for e in expected]


def describe_inputs(case: list) -> list[str]:
    """One entry per forward argument: "float16[0, 7]", "0.5", "None", "[float32[3], int64[]]"."""
    return [describe_arg(a) for a in case]


NO_REFERENCE_KERNEL = ("the reference dispatches no kernel (views only), so the case has no reference time to be "
                       "scored against: judged, not timed")
NEVER_LAUNCHED = ("the kernel was never launched: forward() returned its outputs without launching a kernel, "
                  "so nothing computed them")


def _never_launched(profile: Profile | None, expected: list[np.ndarray]) -> bool:
    """forward() returned without a launch although the outputs have elements to compute."""
    return profile is not None and profile.launches == 0 and any(e.size for e in expected)


def _blank_output(expected: list[np.ndarray], outputs: list[np.ndarray] | None) -> str | None:
    """`output N (dtype[shape]) was never written` when one output with elements holds only what
    `empty()` left there, wherever the reference differs: no kernel copy reached any of it."""
    for i, (e, a) in enumerate(zip(expected, outputs or [])):
        # every element of a blank output is 0xFF: its first ones decide most outputs at once
        head = np.ascontiguousarray(a.reshape(-1)[:1024]).view(np.uint8)
        if a.size and (head == 0xFF).all() and unwritten_elements(a, e) == a.size:
            return (f"output {i} ({dtype_name(a.dtype)}{list(a.shape)}) was never written: no copy from a kernel "
                    f"reached any of its elements (each still holds the 0xFF fill of empty())")
    return None


def _unwritten_reason(expected: list[np.ndarray], outputs: list[np.ndarray] | None) -> str | None:
    """Why an incorrect output is wrong when elements of it still hold what `empty()` left there."""
    for i, (e, a) in enumerate(zip(expected, outputs or [])):
        count = unwritten_elements(a, e)
        if count:
            whole = "every element still holds" if count == a.size else f"{count} of {a.size} elements still hold"
            return (f"output {i} ({dtype_name(a.dtype)}{list(a.shape)}) was never written: {whole} the 0xFF "
                    f"fill of empty() (no copy from a kernel reached them)")
    return None


def geomean(values: Sequence[float]) -> float | None:
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vals or len(vals) != len(values):
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def geomean_times(per_case: Sequence[Times | None]) -> Times | None:
    """Each of the three times' geometric mean over the cases; None unless every case has all three."""
    if not per_case or any(t is None for t in per_case):
        return None
    means = {kind: geomean([getattr(t, kind) for t in per_case]) for kind in Times.model_fields}
    return None if any(v is None for v in means.values()) else Times(**means)


def select_cases(task: Task, cases: int | Sequence[int] | None) -> tuple[torch.nn.Module, list[tuple[int, list]]]:
    try:
        model = task.make_model()
    except InputsTooLarge:
        raise
    except Exception as exc:
        reason = runtime_accelerator_reason(exc)
        if reason:
            raise ReferenceUnavailable(task.path, reason) from exc
        raise TaskLoadError(task.path, f"building Model raised {type(exc).__name__}: {exc}") from exc
    groups = task.cases()
    try:
        indices = case_indices(len(groups), cases)
    except IndexError as exc:
        raise TaskLoadError(task.path, str(exc)) from None
    return model, [(i, groups[i]) for i in indices]


def nothing_to_judge(task: Task, cases: int | Sequence[int] | None) -> str | None:
    """Why no selected case of the task can be judged (each unsupported: element type, size,
    input budget), found on its sized inputs before any kernel is asked for; None when one can."""
    from sage.bench.input_size import sized_support

    try:
        sized = task.sized_cases()
        reasons = [sized_support(sized[i], task.input_budget) for i in case_indices(len(sized), cases)]
    except (TaskLoadError, IndexError):
        return None                  # the evaluation says what is wrong with the cases themselves
    return reasons[0] if reasons and all(reasons) else None


def reference_fails_everywhere(task: Task, cases: int | Sequence[int] | None) -> str | None:
    """The first case's reason when the reference raises on every selected case a kernel
    could be judged on (no kernel can be correct: evaluate_kernel would say reference_error),
    else None. Run where no kernel was answered, so that such a task leaves the metrics as it
    would with one (public level2/24: indices drawn in [0, 10000) into a cache of 128 rows)."""
    try:
        model, selected = select_cases(task, cases)
    except (ReferenceUnavailable, TaskLoadError, InputsTooLarge):
        return None                  # said elsewhere, and not this verdict
    first = None
    for index, case in selected:
        if task.case_support(case):
            continue
        try:
            reference_outputs(model, case)
        except ReferenceUnavailable:
            return None
        except ReferenceFailure as exc:
            first = first or f"case {index} ({describe_case(case)}): {exc}"
            continue
        return None
    return first


def case_indices(count: int, cases: int | Sequence[int] | None) -> list[int]:
    """The indices `cases` selects among `count` cases: None all, an int K the first K (at
    least one), else the indices given; IndexError names one that does not exist."""
    if cases is None:
        return list(range(count))
    if isinstance(cases, int):
        return list(range(min(max(cases, 1), count)))
    bad = [i for i in cases if not 0 <= i < count]
    if bad:
        raise IndexError(f"case {bad[0]} does not exist (the task has {count} cases)")
    return list(cases)


def _fill_profile(result: CaseResult, profile: Profile | None, ref: Any) -> None:
    if profile is None:
        return
    work_us = profile.kernel_us
    if ref is not None and work_us > 0:
        # The essential-work bound of the reference forward (gathered rows, not whole tables;
        # the reference's matmul FLOPs) replaces the simulator's input+output-bytes bound.
        profile = profile.model_copy(update={
            "roofline_bound_us": round(ref.roofline_us, 4), "roofline_bound": ref.roofline_bound,
            "roofline_fraction": round(ref.roofline_us / work_us, 4)})
    result.profile = profile
    result.cycles = profile.cycles
    result.times = profile.times
    result.roofline_fraction = profile.roofline_fraction
    result.roofline_bound_us = profile.roofline_bound_us
    result.roofline_bound = profile.roofline_bound
    result.bottleneck = profile.bottleneck
    if ref is not None and ref.launches == 0:
        # Nothing to time against: a reference of views only dispatches no kernel, and the
        # model has no time for it (docs/reference-model.md), so the case is judged, not scored.
        result.reference_problem = result.reference_problem or NO_REFERENCE_KERNEL
        return
    if ref is not None and profile.time_us > 0:
        result.speedup = ref.end_to_end_us / profile.time_us
    if ref is not None and profile.device_us > 0:
        result.device_speedup = ref.device_us / profile.device_us


def _summarise(head: dict, results: list[CaseResult], wall_s: float) -> TaskEvaluation:
    error = next((r.error for r in results if r.error is not None), None)
    judged = [r for r in results if r.unsupported is None and r.reference_error is None]
    executed = error is None and bool(judged)
    correct = executed and all(r.correct for r in judged)
    reason = next((r.reason for r in judged if r.reason), None)
    if error is not None:
        status = "error"
    elif not judged:
        # Nothing about the kernel was learned: the task leaves the metrics (SKIP_STATUSES).
        status = "unsupported" if any(r.unsupported for r in results) else "reference_error"
        reason = next(r.unsupported or r.reference_error for r in results) if results else "no case selected"
    else:
        status = "correct" if correct else "incorrect"
    timed = [r for r in judged if not r.empty]
    fractions = [r.roofline_fraction for r in timed if r.roofline_fraction is not None]
    bounds = sorted({r.roofline_bound for r in timed if r.roofline_fraction is not None and r.roofline_bound})
    return TaskEvaluation(
        **head, status=status, executed=executed, correct=correct,
        speedup=geomean([r.speedup for r in timed]) if executed and timed else None,
        device_speedup=geomean([r.device_speedup for r in timed]) if executed and timed else None,
        times=geomean_times([r.times for r in timed]) if executed else None,
        reference_times=geomean_times([r.reference_times for r in timed]),
        roofline_fraction=sum(fractions) / len(fractions) if correct and fractions else None,
        roofline_bound="/".join(bounds) if correct and bounds else None,
        reason=reason, error=error, cases=results, wall_s=round(wall_s, 3),
    )


def _flatten(out: Any) -> list:
    if isinstance(out, (list, tuple)):
        return [x for item in out for x in _flatten(item)]
    return [out]
