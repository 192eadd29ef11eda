"""How much memory a task's inputs take, known before they are made.

A KernelBench-format file may ask for 4096 x 393216 float32 in one `get_inputs()` (6.4 GB):
made blindly, it swaps the machine or gets the process killed. So the inputs are first made
*sized*: their task code runs under `FactoryRouter`, which makes every tensor above
`SMALL_BYTES` on the meta device (shape and dtype, no data), while small ones stay real (task
code reads scalars with `.item()`, and a meta tensor has no value). That costs nothing and
gives each case's size. Where the task code cannot run that way (it reads a large tensor's
values while building the inputs), it runs in a child process under a memory cap
(`sizes_in_child`), which says the size or that the cap was passed.

A case over the input budget (`--max-input-gb`, default half the memory this machine has
free) is then not made: its tensors stay meta and the evaluator reports it `unsupported`
with its size (`over_budget`). The sized cases also serve `--reference-only`, whose time
model needs shapes and dtypes, not values (sage.bench.evaluate.measure_reference).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from sage.bench.case_support import MAX_CASE_ELEMENTS, tensors_of

GB = 1 << 30
SMALL_BYTES = 1 << 16            # a tensor this small is always made for real (scalars, shapes, index lists)
# The functions that allocate a tensor from arguments that are not tensors; *_like functions
# follow their argument (meta in, meta out) and need no routing.
FACTORIES = frozenset({torch.randn, torch.rand, torch.randint, torch.empty, torch.zeros, torch.ones, torch.full,
                       torch.normal, torch.arange, torch.linspace, torch.logspace, torch.randperm, torch.eye,
                       torch.empty_strided, torch.tril_indices, torch.triu_indices})


def default_budget_bytes() -> int:
    """Half the memory this machine has available now (MemAvailable), else half of all of it."""
    try:
        for line in open("/proc/meminfo", encoding="ascii"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024 // 2
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


class FactoryRouter(TorchFunctionMode):
    """Makes each large factory tensor for real while the real ones stay within `budget_bytes`
    in all, on the meta device beyond: `budget_bytes=0` sizes without making anything large.
    A tensor of more elements than a simulated run can take is never made: no case holding it
    can be judged."""

    def __init__(self, budget_bytes: int) -> None:
        super().__init__()
        self.budget_bytes = budget_bytes
        self.real_bytes = 0

    def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if func not in FACTORIES or str(kwargs.get("device", "cpu")) not in ("cpu", "meta"):
            return func(*args, **kwargs)
        try:
            sized = func(*args, **{**kwargs, "device": "meta"})
        except (RuntimeError, TypeError, ValueError, NotImplementedError):
            return func(*args, **kwargs)      # a form the meta device does not take: made as asked
        if str(kwargs.get("device")) == "meta" or not isinstance(sized, torch.Tensor):
            return sized
        size = sized.numel() * sized.element_size()
        if size <= SMALL_BYTES:
            return func(*args, **kwargs)
        if self.real_bytes + size > self.budget_bytes or sized.numel() > MAX_CASE_ELEMENTS:
            return sized
        self.real_bytes += size
        return func(*args, **kwargs)


def routed(make: Callable[[], Any], budget_bytes: int) -> Any:
    """`make()` with its large tensors made only while they fit `budget_bytes` (meta beyond)."""
    with FactoryRouter(budget_bytes):
        return make()


def on_meta(value: Any) -> Any:
    """The case (or argument) with every tensor moved to the meta device, the rest as it is."""
    if isinstance(value, torch.Tensor):
        return value.to("meta")
    if isinstance(value, (list, tuple)):
        return type(value)(on_meta(v) for v in value)
    return value


def case_bytes(case: Sequence[Any]) -> int:
    """Bytes of the tensors of one case, made or meta."""
    return sum(t.numel() * t.element_size() for t in tensors_of(case))


def has_meta(case: Sequence[Any]) -> bool:
    return any(t.is_meta for t in tensors_of(case))


def over_budget(case: Sequence[Any], budget_bytes: int, routed: bool) -> str | None:
    """Why a case whose inputs the budget kept from being made is not judged, with its size;
    None when it was made, or left unmade for another reason (`routed`: the budget made the
    task's cases in part)."""
    if not has_meta(case):
        return None
    size = case_bytes(case)
    if size > budget_bytes:
        return (f"its inputs take {size / GB:.2f} GB, over the input budget of {budget_bytes / GB:.2f} GB "
                "(--max-input-gb): not made")
    if routed:
        return (f"its inputs ({size / GB:.2f} GB) were not made: the task's cases together are over the input "
                f"budget of {budget_bytes / GB:.2f} GB (--max-input-gb)")
    return None


class InputsTooLarge(Exception):
    """The task code cannot make its cases within the input budget, nor size them on the meta
    device: the task is `unsupported` with this reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def check_model_size(build: Callable[[], Any], budget_bytes: int) -> None:
    """InputsTooLarge when the model `build()` makes holds more parameters and buffers than the
    budget (MultiKernelBench's arch/shallow_wide_mlp asks for 16384 x 32768 layers): sized on
    the meta device first, nothing made. A constructor the meta device cannot run is left to
    run as written."""
    try:
        with torch.device("meta"):
            model = build()
    except (RuntimeError, NotImplementedError, TypeError, ValueError, AttributeError, AssertionError):
        return                           # e.g. a constructor that reads a tensor's value: made as written
    if not isinstance(model, torch.nn.Module):
        return
    size = sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])
    if size > budget_bytes:
        raise InputsTooLarge(f"the Model's parameters and buffers take {size / GB:.2f} GB, over the input budget "
                             f"of {budget_bytes / GB:.2f} GB (--max-input-gb): not made")


def sized_cases(task: Any) -> list[list]:
    """The task's cases with nothing large made (FactoryRouter at budget 0). Raises the task's
    TaskLoadError when its code fails that way too."""
    return task.make_cases(lambda make: routed(make, 0))


def budgeted_cases(task: Any) -> list[list]:
    """The task's cases (sage.bench.tasks.Task) made for real when they fit its input budget
    together; else made while they fit, the rest left on the meta device (and reported over
    the budget, with their size, by `over_budget`). InputsTooLarge when even their size cannot
    be known within the budget."""
    from sage.bench.tasks import TaskLoadError

    budget = task.input_budget
    if budget is None:
        return task.make_cases()
    try:
        sized = task.sized_cases()
        if all(sized_support(c, budget) for c in sized):
            return sized                # no case can be judged: none is worth making (each says why)
        total = sum(case_bytes(c) for c in sized)
    except TaskLoadError as problem:   # task code that reads large values: sized in a child, under a cap
        kind, answer = sizes_in_child(str(task.path), task.seed, budget)
        if kind == "broken":
            raise problem               # it fails with real tensors too: the task's own error
        if kind == "over":
            raise InputsTooLarge(str(answer)) from None
        total = sum(answer)
    if total <= budget:
        return task.make_cases()
    task.routed = True
    return task.make_cases(lambda make: routed(make, budget))


_SIZED = "sized on purpose"


def sized_support(case: Sequence[Any], budget_bytes: int | None) -> str | None:
    """Why a sized case (its large tensors meta on purpose) cannot be judged: an element type
    or more elements than a simulated run takes (sage.bench.case_support), or inputs over the
    budget; None when it can be made and judged."""
    from sage.bench.case_support import case_support

    why = case_support(case, not_made=_SIZED)
    if why is not None and why != _SIZED:
        return why
    size = case_bytes(case)
    if budget_bytes is not None and size > budget_bytes:
        return (f"its inputs take {size / GB:.2f} GB, over the input budget of {budget_bytes / GB:.2f} GB "
                "(--max-input-gb): not made")
    return None


def gb(value: float) -> int:
    return int(value * GB)


def sizes_in_child(path: str, seed: int, cap_bytes: int, timeout_s: float = 600.0) -> tuple[str, Any]:
    """The bytes of each case of the task file `path`, its inputs made for real in a fresh
    process whose address space is capped at `cap_bytes` beyond what it starts with:
    ("sizes", [bytes per case]), ("over", why: the cap or the time was passed) or ("broken",
    the task's own error)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")     # a fresh interpreter: nothing forked from torch's threads
    parent, child = context.Pipe(duplex=False)
    process = context.Process(target=_size_in_child, args=(child, path, seed, cap_bytes), name="sage-input-sizes")
    process.start()
    child.close()
    try:
        if not parent.poll(timeout_s):
            return "over", f"making the inputs took longer than {timeout_s:g} s"
        return parent.recv()
    except EOFError:
        return "over", f"making the inputs needs more than {cap_bytes / GB:.2f} GB (the child process was stopped)"
    finally:
        process.kill()
        process.join(5)


def _size_in_child(conn: Any, path: str, seed: int, cap_bytes: int) -> None:
    import resource

    from sage.bench.tasks import TaskLoadError, load_task

    try:
        task = load_task(path, check_inputs=False, seed=seed, input_budget=None)
        # The cap counts from here: the interpreter, torch and the task module are already in.
        resource.setrlimit(resource.RLIMIT_AS, (_address_space() + cap_bytes, resource.RLIM_INFINITY))
        conn.send(("sizes", [case_bytes(c) for c in task.cases()]))
    except TaskLoadError as exc:
        # torch's allocator raises RuntimeError ("can't allocate memory"), numpy MemoryError: both
        # reach here wrapped by the task loader, their text kept.
        over = "allocate" in exc.problem or "MemoryError" in exc.problem
        conn.send(("over", f"making the inputs needs more than {cap_bytes / GB:.2f} GB") if over
                  else ("broken", exc.problem))
    except MemoryError:
        conn.send(("over", f"making the inputs needs more than {cap_bytes / GB:.2f} GB"))


def _address_space() -> int:
    for line in open("/proc/self/status", encoding="ascii"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0
