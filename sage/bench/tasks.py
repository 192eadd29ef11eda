"""Task files: loading KernelBench / MultiKernelBench-format operators and resolving names.

A task file defines `Model`, `get_init_inputs()` and its cases, any of (docs/tasks.md):
- `get_input_groups()`: a list of cases, each a list of forward arguments (MultiKernelBench,
  NPUKernelBench; the public files read the JSON-lines `NAME.json` beside them themselves);
- `get_inputs()`: one case (KernelBench);
- neither, with `NAME.json` beside it: the cases are read from it (`sage.bench.case_file`).
Optionally `DESCRIPTION`, `TAGS` and `FUSED_OP`. Task files are trusted code (they ship with
the suite or the user points at them), so they are imported in-process, with their own
folder importable for helper modules beside them; kernels are the untrusted part and never
come through here.

Three things can go wrong when loading, and they must not be confused with a bad kernel:
- `TaskLoadError`: the file itself is broken (syntax error, no `Model`, making inputs
  raising, a bad line in its case file). The message names the file, and the case and its
  shapes when one case is the problem.
- `NotATask`: a Python file in a task folder that defines none of the task names (a helper).
- `ReferenceUnavailable`: the file is fine but its reference cannot run on a CPU
  (it imports `torch_npu`, calls `.cuda()`, calls an aten operator this torch lacks).
  Such tasks are skipped with their reason and never counted as kernel failures.
A case that loads but has an element type no 910B kernel can use (fp64, complex) is not an
error: `Task.case_support(case)` says why, for the evaluator to report per case.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import importlib.util
import os
import random
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import numpy as np
import torch
from pydantic import BaseModel

from sage.bench import torch_npu_hook
from sage.bench.accelerator import accelerator_reason, runtime_accelerator_reason
from sage.bench.drawn_inputs import DESCRIPTION as DRAWS_DESCRIPTION
from sage.bench.drawn_inputs import DrawsAsInputs, cases_with_draws, on_meta, probe_draws
from sage.bench.forward_args import fill_keyword_tail
from sage.bench.case_file import CaseFileError, case_specs, read_case_file
from sage.bench.case_support import case_support, describe_case, dtype_name
from sage.bench.input_size import (InputsTooLarge, budgeted_cases, check_model_size, default_budget_bytes, over_budget,
                                   sized_cases)
from sage.text import ERROR_CHARS, TAG_CHARS, clean

SUITE_DIR = Path(__file__).parent / "npukernelbench"
DESCRIPTION_CHARS = 4096
PLAIN_OPS_DIR = SUITE_DIR / "ops"

_LEVEL_DIR = re.compile(r"level[_-]?(\d+)$", re.IGNORECASE)
# Names a task file defines; a .py file with none of them is a helper, not a task.
_TASK_NAMES = frozenset({"Model", "get_inputs", "get_input_groups"})
# Folders a task search never enters (virtual environments, VCS data, caches).
_SKIP_DIR = re.compile(r"^(\.|__|site-packages$|node_modules$)")


class TaskLoadError(Exception):
    """A task file that cannot be used: the message names the file and the problem."""

    def __init__(self, path: Path | str, problem: str):
        self.path = Path(path)
        self.problem = clean(problem, ERROR_CHARS)   # often a task's own exception text (sage/text.py)
        super().__init__(f"{self.path}: {problem}")


class NotATask(TaskLoadError):
    """A Python file in a task folder that defines none of `Model`, `get_inputs`,
    `get_input_groups`: a helper module, skipped with that reason."""


class ReferenceUnavailable(Exception):
    """The task's reference cannot run on a CPU; the task is skipped, not failed."""

    def __init__(self, path: Path | str, reason: str):
        self.path = Path(path)
        self.reason = clean(reason, ERROR_CHARS)
        super().__init__(f"{self.path}: reference unavailable: {reason}")


class UnknownOpError(ValueError):
    """`resolve_op` found no task of that name; the message lists close matches."""


class Skipped(BaseModel):
    """A task file that was found but not loaded, with why."""

    path: str
    name: str
    level: int | None
    kind: Literal["reference_unavailable", "load_error", "not_a_task"]
    reason: str


@dataclass
class Task:
    name: str                       # file stem, e.g. "10_layer_norm"
    path: Path
    level: int | None
    tags: list[str]
    description: str
    fused_op: str | None
    module: ModuleType = field(repr=False)
    # The seed of the case inputs: `cases()` seeds torch's (and numpy's and random's) generator
    # with it before making them, so (seed, case index) names the same inputs on every call
    # and machine: a failing case is replayed with `--case K --seed S`.
    seed: int = 0
    # Bytes the inputs of the cases may take (sage.bench.input_size); None: made unchecked.
    input_budget: int | None = None
    routed: bool = False            # the budget made the cases in part (the rest left on the meta device)
    # (seed, cases) that a checked load made: the next cases() with that seed returns them
    # instead of making the same inputs again, and drops them (the suite's inputs are large).
    _checked: tuple[int, list[list]] | None = field(default=None, init=False, repr=False, compare=False)
    _sized: tuple[int, list[list]] | None = field(default=None, init=False, repr=False, compare=False)
    _model_fits: bool = field(default=False, init=False, repr=False, compare=False)
    # Whether the forward draws random tensors (sage.bench.drawn_inputs); None: not probed yet.
    _draws: bool | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def key(self) -> str:
        """Stable identifier used in results and kernel folders: "level1/10_layer_norm"."""
        return f"level{self.level}/{self.name}" if self.level is not None else self.name

    @property
    def case_file(self) -> Path:
        """Where a MultiKernelBench task keeps its cases: NAME.json beside NAME.py."""
        return self.path.with_suffix(".json")

    def make_model(self) -> torch.nn.Module:
        """The model the evaluation runs: the task's own, or, when its forward draws random
        tensors, that model replaying the draws each case carries as its last argument."""
        model = self.plain_model()
        return DrawsAsInputs(model) if self.draws else model

    @property
    def draws(self) -> bool:
        """Whether the forward draws random tensors (a module built inside forward): probed
        once, on the first case's shapes (every tensor on the meta device: no computing)."""
        if self._draws is None:
            try:
                first = self._raw_sized()[0]
            except TaskLoadError:
                first = self._raw_cases()[0]
            self._draws = bool(probe_draws(self.plain_model(), on_meta(first)))
        return self._draws

    def plain_model(self) -> torch.nn.Module:
        init = list(self.module.get_init_inputs()) if hasattr(self.module, "get_init_inputs") else []
        if self.input_budget is not None and not self._model_fits:
            # A model's weights are made by its constructor, before any input: sized first too.
            check_model_size(lambda: self.module.Model(*init), self.input_budget)
            self._model_fits = True
        model = self.module.Model(*init)
        model.eval()
        return fill_keyword_tail(model)     # cases list keyword-only forward arguments in order

    def cases(self) -> list[list]:
        """Fresh inputs for every case: each call regenerates them, except that the first call
        after a checked load gets the ones the check made (the same seed makes the same inputs,
        and nothing else holds them). From `get_input_groups()`, else `get_inputs()` as the one
        case, else the case file."""
        checked, self._checked = self._checked, None
        if checked is not None and checked[0] == self.seed:
            return checked[1]
        return self._with_draws(self._raw_cases())

    def _raw_cases(self) -> list[list]:
        return budgeted_cases(self)

    def _with_draws(self, cases: list[list]) -> list[list]:
        return cases_with_draws(self.plain_model(), cases, self.seed, seeded) if self.draws else cases

    def make_cases(self, route: Callable[[Callable[[], Any]], Any] | None = None) -> list[list]:
        """The cases made by the task's own code under its seed, each call anew; `route` runs
        that code (sage.bench.input_size.routed: large tensors on the meta device)."""
        m = self.module
        if hasattr(m, "get_input_groups"):
            source, make = "get_input_groups()", m.get_input_groups
        elif hasattr(m, "get_inputs"):
            source, make = "get_inputs()", lambda: [m.get_inputs()]
        else:
            source, make = self.case_file.name, lambda: read_case_file(self.case_file)
        return self._seeded_cases(source, make if route is None else lambda: route(make))

    def sized_cases(self) -> list[list]:
        """The cases with every large tensor on the meta device: shapes, dtypes and sizes at no
        cost (TaskLoadError when the task code cannot make them so). Kept per seed."""
        return self._with_draws(self._raw_sized())

    def _raw_sized(self) -> list[list]:
        if self._sized is None or self._sized[0] != self.seed:
            self._sized = (self.seed, sized_cases(self))
        return self._sized[1]

    def first_case(self) -> list:
        """What KernelBench's `get_inputs()` gives: that function when the file has it, else
        the first of the cases."""
        if hasattr(self.module, "get_inputs"):
            return self._with_draws(self._seeded_cases("get_inputs()", lambda: [self.module.get_inputs()]))[0]
        return self.cases()[0]

    def _seeded_cases(self, source: str, make: Callable[[], Any]) -> list[list]:
        with seeded(self.seed):
            return self._checked_cases(source, make)

    def case_support(self, case: Sequence[Any]) -> str | None:
        """None when a 910B kernel can take the case; else why not (an fp64 or complex
        argument, named with its shape; inputs over the input budget, with their size). The
        case still loads and its reference still runs."""
        budget = self.input_budget
        return case_support(case, over_budget(case, budget, self.routed) if budget is not None else None)

    def _checked_cases(self, source: str, make: Callable[[], Any]) -> list[list]:
        try:
            groups = make()
        except CaseFileError as exc:
            raise TaskLoadError(self.path, str(exc)) from exc
        except Exception as exc:  # a task bug: re-raised with the file named
            _raise_if_accelerator(self.path, exc)
            raise TaskLoadError(self.path, f"{source} raised {_one_line(exc)}{self._case_file_hint()}") from exc
        if isinstance(groups, (torch.Tensor, str, bytes, dict)) or not hasattr(groups, "__iter__"):
            raise TaskLoadError(self.path, f"{source} returned a {type(groups).__name__}, not a list of cases")
        cases = []
        for i, group in enumerate(groups):
            if not isinstance(group, (list, tuple)):
                raise TaskLoadError(self.path, f"case {i} from {source} is a {type(group).__name__} "
                                               f"({describe_case([group])}), not a list of forward arguments")
            cases.append(list(group))
        if not cases:
            raise TaskLoadError(self.path, f"{source} returned no cases")
        return cases

    def _case_file_hint(self) -> str:
        """When the file's own input code fails, the line of its case file that breaks the format, if any."""
        if not self.case_file.is_file():
            return ""
        try:
            case_specs(self.case_file)
        except CaseFileError as exc:
            return f" ({exc})"
        return ""


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Task code generating inputs under `seed` (torch, numpy's global and `random`'s
    generators), the caller's generator states restored afterwards."""
    py_state, np_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        np.random.seed(seed % 2**32)
        random.seed(seed)
        try:
            yield
        finally:
            random.setstate(py_state)
            np.random.set_state(np_state)


def load_task(path: Path | str, *, check_inputs: bool = True, seed: int = 0,
              input_budget: int | None | str = "default") -> Task:
    """Imports one task file (or the .py beside a given case file). `check_inputs` also builds
    the model and every case (with `seed`, the task's), so that a file whose inputs cannot be
    made is reported at load time; the cases it made are the first `cases()` call's.
    `input_budget`: bytes the inputs may take ("default": half the memory available now;
    None: unchecked), see sage.bench.input_size."""
    path = Path(path).resolve()
    if path.suffix == ".json" and path.with_suffix(".py").is_file():
        path = path.with_suffix(".py")
    if not path.is_file():
        raise TaskLoadError(path, "no such file")
    if path.suffix != ".py":
        raise TaskLoadError(path, "a task file must be a .py file")
    source = path.read_text(encoding="utf-8", errors="replace")
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise TaskLoadError(path, f"syntax error at line {exc.lineno}: {exc.msg}") from exc
    if not _TASK_NAMES & _defined_names(tree):
        raise NotATask(path, "not a task file: defines none of `Model`, `get_inputs`, `get_input_groups` "
                             "(a helper module?)")
    # A file that imports torch_npu runs on the CPU stand-ins when they serve every op it calls.
    standin = torch_npu_hook.plan(tree)
    reason = standin.reason or accelerator_reason(tree, frozenset({"torch_npu"}) if standin.serves else frozenset())
    if reason:
        raise ReferenceUnavailable(path, reason)
    if standin.serves:
        torch_npu_hook.install()
    module = _import_file(path)
    if not hasattr(module, "Model"):
        raise TaskLoadError(path, "missing `Model`")
    if not isinstance(module.Model, type) or not issubclass(module.Model, torch.nn.Module):
        raise TaskLoadError(path, "`Model` must be a torch.nn.Module subclass")
    if not (hasattr(module, "get_input_groups") or hasattr(module, "get_inputs")
            or path.with_suffix(".json").is_file()):
        raise TaskLoadError(path, f"missing `get_inputs` or `get_input_groups` (and no case file "
                                  f"{path.with_suffix('.json').name} beside it)")
    tags = getattr(module, "TAGS", [])
    tags = list(tags) if isinstance(tags, (list, tuple)) else [tags]
    if standin.serves and torch_npu_hook.quantising(standin.used) and "quant" not in tags:
        tags.append("quant")
    task = Task(
        name=path.stem,
        path=path,
        level=level_of(path),
        tags=[clean(t, TAG_CHARS, one_line=True) for t in tags],
        description=_description(module),
        fused_op=getattr(module, "FUSED_OP", None),
        module=module,
        seed=seed,
        input_budget=default_budget_bytes() if input_budget == "default" else input_budget,
    )
    if check_inputs:
        try:
            task.plain_model()           # the draws probe comes with the cases, below
        except InputsTooLarge:
            raise
        except Exception as exc:
            _raise_if_accelerator(path, exc)
            raise TaskLoadError(path, f"building Model raised {_one_line(exc)}") from exc
        task._checked = (seed, task.cases())
        if task.draws:
            task.description = f"{task.description} {DRAWS_DESCRIPTION}".strip()
    return task


def load_tasks(path: Path | str, *, check_inputs: bool = True) -> tuple[list[Task], list[Skipped]]:
    """One file or a folder (recursively, sorted by level then name). Broken files, helper
    modules and references that need an accelerator become `Skipped` entries instead of errors."""
    path = Path(path)
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(task_files(path), key=_sort_key)
    else:
        raise TaskLoadError(path, "no such file or folder")
    tasks: list[Task] = []
    skipped: list[Skipped] = []
    for f in files:
        try:
            tasks.append(load_task(f, check_inputs=check_inputs))
        except ReferenceUnavailable as exc:
            skipped.append(Skipped(path=str(f), name=f.stem, level=level_of(f),
                                   kind="reference_unavailable", reason=exc.reason))
        except TaskLoadError as exc:
            skipped.append(Skipped(path=str(f), name=f.stem, level=level_of(f),
                                   kind="not_a_task" if isinstance(exc, NotATask) else "load_error",
                                   reason=exc.problem))
    return tasks, skipped


def task_files(folder: Path) -> list[Path]:
    """Python files under `folder` that may be tasks: private files (`_x.py`) and folders
    such as `.venv`, `__pycache__` or `site-packages` are not searched. Case files (`.json`)
    are found through their task file."""
    folder = Path(folder)
    return [p for p in folder.rglob("*.py")
            if not p.name.startswith("_")
            and not any(_SKIP_DIR.match(part) for part in p.relative_to(folder).parts[:-1])]


def is_helper_module(path: Path) -> bool:
    """A Python file that parses and defines none of the task names: a module the tasks beside
    it import (`NotATask` when loaded). Read, never imported. A file that does not parse is
    not called a helper: it may be a broken task, which must get its row."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError, OSError):
        return False
    return not _TASK_NAMES & _defined_names(tree)


def level_of(path: Path) -> int | None:
    """The level from the nearest `levelN` folder (also `npukernelbench_level2` style)."""
    for part in reversed(Path(path).parent.parts):
        m = _LEVEL_DIR.search(part)
        if m:
            return int(m.group(1))
    return None


def suite_files() -> list[Path]:
    """The npukernelbench level files, ordered by level and name."""
    return sorted((p for p in task_files(SUITE_DIR) if level_of(p) is not None), key=_sort_key)


def plain_op_files() -> list[Path]:
    return sorted(task_files(PLAIN_OPS_DIR)) if PLAIN_OPS_DIR.is_dir() else []


def resolve_op(name: str) -> Path:
    """Maps an operator name to its task file.

    Accepted: a path to a file; a plain task ("softmax" → ops/softmax.py, which wins over
    a suite task of the same name); a suite name with or without its number and level
    ("layer_norm", "10_layer_norm", "level1/10_layer_norm")."""
    candidate = Path(name)
    if candidate.suffix == ".py" and candidate.is_file():
        return candidate.resolve()
    wanted = name.strip().removesuffix(".py").replace("\\", "/")
    plain = {p.stem: p for p in plain_op_files()}
    if wanted in plain:
        return plain[wanted]
    suite = suite_files()
    by_key = {f"level{level_of(p)}/{p.stem}": p for p in suite}
    if wanted in by_key:
        return by_key[wanted]
    matches = [p for p in suite if p.stem == wanted or _strip_number(p.stem) == wanted]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        names = ", ".join(f"level{level_of(p)}/{p.stem}" for p in matches)
        raise UnknownOpError(f"'{name}' is ambiguous: {names}")
    known = sorted(set(plain) | set(by_key) | {_strip_number(p.stem) for p in suite})
    close = difflib.get_close_matches(wanted, known, n=5, cutoff=0.5)
    hint = f" Did you mean: {', '.join(close)}?" if close else " See `sage ops list`."
    raise UnknownOpError(f"unknown operator '{name}'.{hint}")


def parameter_kwargs(model: torch.nn.Module) -> dict[str, np.ndarray]:
    """The Model's parameters and buffers as kernel keyword arguments (dots → underscores)."""
    named = list(model.named_parameters()) + list(model.named_buffers())
    return {name.replace(".", "_"): to_numpy(t) for name, t in named}


def to_numpy(t: torch.Tensor, copy: bool = True) -> np.ndarray:
    """A contiguous numpy copy; bfloat16 as ml_dtypes.bfloat16 (bit-exact). `copy=False`: the
    tensor's own memory where it is contiguous, for a tensor nothing else holds or changes."""
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        array = t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    else:
        array = t.numpy()
    return array.copy() if copy else array


def kernel_args(case: list) -> list:
    """Forward arguments for the simulator: tensors become numpy arrays over their memory (the
    simulator copies each into its GM when a run starts, and nothing here writes them), a
    dtype its name, the rest passes through."""
    return [_convert(a) for a in case]


def _convert(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return to_numpy(value, copy=False)
    if isinstance(value, (list, tuple)):
        return type(value)(_convert(v) for v in value)
    if isinstance(value, torch.dtype):
        return dtype_name(value)      # a plain value the sandbox's job file carries ("int8")
    return value


def _raise_if_accelerator(path: Path, exc: BaseException) -> None:
    reason = runtime_accelerator_reason(exc)
    if reason:
        raise ReferenceUnavailable(path, reason) from exc


def _import_file(path: Path) -> ModuleType:
    # A unique module name per file path: two suites can both have "10_layer_norm".
    digest = hashlib.sha1(os.fsencode(path)).hexdigest()[:10]   # the bytes: a name need not be UTF-8
    safe_stem = re.sub(r"\W", "_", path.stem)
    mod_name = f"sage_task_{safe_stem}_{digest}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise TaskLoadError(path, "cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # dataclasses and pickling look modules up here
    before = set(sys.modules)
    # The task's folder is importable while it loads, so `import common` finds a helper beside it.
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(mod_name, None)
        _raise_if_accelerator(path, exc)
        raise TaskLoadError(path, f"importing raised {_one_line(exc)}") from exc
    finally:
        sys.path.remove(str(path.parent))
        _forget_helpers(path.parent, set(sys.modules) - before)
    return module


def _forget_helpers(folder: Path, names: set[str]) -> None:
    """Drops single-file helper modules the task imported from its own folder from the module
    cache: another task folder's `common.py` must not be served this one's. The task keeps its
    reference. Packages are left alone (a task at a project root may import the project's own)."""
    for name in names:
        origin = getattr(sys.modules.get(name), "__file__", None)
        if "." not in name and origin and Path(origin).resolve() == folder / f"{name}.py":
            del sys.modules[name]


def _defined_names(tree: ast.AST) -> set[str]:
    """Names a module binds anywhere (classes, functions, assignments, imports), found by reading."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


def _description(module: ModuleType) -> str:
    """DESCRIPTION, else the module's docstring, else Model's (KernelBench files have only that)."""
    text = getattr(module, "DESCRIPTION", None) or module.__doc__ or module.Model.__doc__ or ""
    # Shown in prompts, tables and reports: cleaned like any text from outside (sage/text.py).
    return clean(text, DESCRIPTION_CHARS, one_line=True)


def _strip_number(stem: str) -> str:
    return re.sub(r"^\d+_", "", stem)


def _sort_key(p: Path) -> tuple:
    level = level_of(p)
    m = re.match(r"^(\d+)_", p.stem)
    return (level if level is not None else -1, int(m.group(1)) if m else 10**6, str(p))
