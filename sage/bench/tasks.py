"""Task files: loading KernelBench / MultiKernelBench-format operators and resolving names.

A task file defines `Model`, `get_inputs()`, `get_init_inputs()` and optionally
`get_input_groups()`, `DESCRIPTION`, `TAGS` and `FUSED_OP` (see NPUKERNELBENCH.md).
Task files are trusted code (they ship with the suite or the user points at them), so
they are imported in-process; kernels are the untrusted part and never come through here.

Two things can go wrong when loading, and they must not be confused with a bad kernel:
- `TaskLoadError`: the file itself is broken (syntax error, no `Model`, `get_inputs`
  raising). The message names the file and the problem.
- `ReferenceUnavailable`: the file is fine but its reference cannot run on a CPU
  (it imports `torch_npu`, calls `.cuda()`, allocates on `device="cuda"`). Such tasks
  are skipped with their reason and never counted as kernel failures.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import importlib.util
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import numpy as np
import torch
from pydantic import BaseModel

SUITE_DIR = Path(__file__).parent / "npukernelbench"
PLAIN_OPS_DIR = SUITE_DIR / "ops"

_LEVEL_DIR = re.compile(r"level[_-]?(\d+)$", re.IGNORECASE)
# Modules and attributes whose presence means the reference needs an accelerator.
_ACCELERATOR_MODULES = {"torch_npu", "apex", "triton", "cupy", "pycuda"}
_ACCELERATOR_METHODS = {"cuda", "npu"}
_ACCELERATOR_DEVICES = re.compile(r"^(cuda|npu)(:\d+)?$")


class TaskLoadError(Exception):
    """A task file that cannot be used: the message names the file and the problem."""

    def __init__(self, path: Path | str, problem: str):
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class ReferenceUnavailable(Exception):
    """The task's reference cannot run on a CPU; the task is skipped, not failed."""

    def __init__(self, path: Path | str, reason: str):
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{self.path}: reference unavailable: {reason}")


class UnknownOpError(ValueError):
    """`resolve_op` found no task of that name; the message lists close matches."""


class Skipped(BaseModel):
    """A task file that was found but not loaded, with why."""

    path: str
    name: str
    level: int | None
    kind: Literal["reference_unavailable", "load_error"]
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

    @property
    def key(self) -> str:
        """Stable identifier used in results and kernel folders: "level1/10_layer_norm"."""
        return f"level{self.level}/{self.name}" if self.level is not None else self.name

    def make_model(self) -> torch.nn.Module:
        init = list(self.module.get_init_inputs()) if hasattr(self.module, "get_init_inputs") else []
        model = self.module.Model(*init)
        model.eval()
        return model

    def cases(self) -> list[list]:
        """Fresh inputs for every case: each call regenerates them (nothing is cached)."""
        try:
            if hasattr(self.module, "get_input_groups"):
                groups = [list(g) for g in self.module.get_input_groups()]
            else:
                groups = [list(self.module.get_inputs())]
        except Exception as exc:  # a task bug: re-raised with the file named
            _raise_if_accelerator(self.path, exc)
            raise TaskLoadError(self.path, f"making inputs raised {type(exc).__name__}: {exc}") from exc
        if not groups:
            raise TaskLoadError(self.path, "get_input_groups() returned no cases")
        return groups


def load_task(path: Path | str, *, check_inputs: bool = True) -> Task:
    """Imports one task file. `check_inputs` also builds the model and the first inputs,
    so that a file whose `get_inputs` raises is reported at load time."""
    path = Path(path).resolve()
    if not path.is_file():
        raise TaskLoadError(path, "no such file")
    if path.suffix != ".py":
        raise TaskLoadError(path, "a task file must be a .py file")
    source = path.read_text(encoding="utf-8", errors="replace")
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise TaskLoadError(path, f"syntax error at line {exc.lineno}: {exc.msg}") from exc
    reason = accelerator_reason(tree)
    if reason:
        raise ReferenceUnavailable(path, reason)
    module = _import_file(path)
    for required in ("Model", "get_inputs"):
        if not hasattr(module, required):
            raise TaskLoadError(path, f"missing `{required}`")
    if not isinstance(module.Model, type) or not issubclass(module.Model, torch.nn.Module):
        raise TaskLoadError(path, "`Model` must be a torch.nn.Module subclass")
    tags = getattr(module, "TAGS", [])
    task = Task(
        name=path.stem,
        path=path,
        level=level_of(path),
        tags=[str(t) for t in tags] if isinstance(tags, (list, tuple)) else [str(tags)],
        description=_description(module),
        fused_op=getattr(module, "FUSED_OP", None),
        module=module,
    )
    if check_inputs:
        try:
            task.make_model()
        except Exception as exc:
            _raise_if_accelerator(path, exc)
            raise TaskLoadError(path, f"building Model raised {type(exc).__name__}: {exc}") from exc
        try:
            task.module.get_inputs()
        except Exception as exc:
            _raise_if_accelerator(path, exc)
            raise TaskLoadError(path, f"get_inputs() raised {type(exc).__name__}: {exc}") from exc
    return task


def load_tasks(path: Path | str, *, check_inputs: bool = True) -> tuple[list[Task], list[Skipped]]:
    """One file or a folder (recursively, sorted by level then name). Broken files and
    references that need an accelerator become `Skipped` entries instead of errors."""
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
                                   kind="load_error", reason=exc.problem))
    return tasks, skipped


def task_files(folder: Path) -> list[Path]:
    """Python files under `folder` that look like tasks (private/helper files excluded)."""
    return [p for p in folder.rglob("*.py")
            if not p.name.startswith("_") and "__pycache__" not in p.parts]


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


def accelerator_reason(tree: ast.AST) -> str | None:
    """Why a task's code cannot run on a CPU, found by reading it (None if nothing found)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in _ACCELERATOR_MODULES:
                    return f"imports {alias.name} (line {node.lineno})"
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in _ACCELERATOR_MODULES:
                return f"imports {node.module} (line {node.lineno})"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _ACCELERATOR_METHODS:
                return f"calls .{node.func.attr}() (line {node.lineno})"
            for kw in node.keywords:
                if kw.arg == "device" and _is_accelerator_device(kw.value):
                    return f"allocates on device {kw.value.value!r} (line {node.lineno})"
            if node.func.attr == "to" and node.args and _is_accelerator_device(node.args[0]):
                return f"moves tensors to {node.args[0].value!r} (line {node.lineno})"
    return None


def parameter_kwargs(model: torch.nn.Module) -> dict[str, np.ndarray]:
    """The Model's parameters and buffers as kernel keyword arguments (dots → underscores)."""
    named = list(model.named_parameters()) + list(model.named_buffers())
    return {name.replace(".", "_"): to_numpy(t) for name, t in named}


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A contiguous numpy copy; bfloat16 as ml_dtypes.bfloat16 (bit-exact)."""
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
    return t.numpy().copy()


def kernel_args(case: list) -> list:
    """Forward arguments for the simulator: tensors become numpy arrays, the rest passes through."""
    return [_convert(a) for a in case]


def _convert(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return to_numpy(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_convert(v) for v in value)
    return value


def _raise_if_accelerator(path: Path, exc: BaseException) -> None:
    reason = runtime_accelerator_reason(exc)
    if reason:
        raise ReferenceUnavailable(path, reason) from exc


def runtime_accelerator_reason(exc: BaseException) -> str | None:
    """Recognises the errors torch raises when code asks for a device a CPU build lacks."""
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in _ACCELERATOR_MODULES:
        return f"needs the {exc.name} module"
    text = str(exc)
    for marker in ("Torch not compiled with CUDA", "No CUDA GPUs", "Found no NVIDIA driver",
                   "CUDA driver", "torch.npu", "torch_npu", "Expected one of cpu"):
        if marker in text:
            return f"needs an accelerator ({type(exc).__name__}: {text.splitlines()[0][:160]})"
    return None


def _import_file(path: Path) -> ModuleType:
    # A unique module name per file path: two suites can both have "10_layer_norm".
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    safe_stem = re.sub(r"\W", "_", path.stem)
    mod_name = f"sage_task_{safe_stem}_{digest}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise TaskLoadError(path, "cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(mod_name, None)
        _raise_if_accelerator(path, exc)
        raise TaskLoadError(path, f"importing raised {type(exc).__name__}: {exc}") from exc
    return module


def _description(module: ModuleType) -> str:
    """DESCRIPTION, else the module's docstring, else Model's (KernelBench files have only that)."""
    text = getattr(module, "DESCRIPTION", None) or module.__doc__ or module.Model.__doc__ or ""
    return " ".join(str(text).split())


def _is_accelerator_device(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) \
        and bool(_ACCELERATOR_DEVICES.match(node.value))


def _strip_number(stem: str) -> str:
    return re.sub(r"^\d+_", "", stem)


def _sort_key(p: Path) -> tuple:
    level = level_of(p)
    m = re.match(r"^(\d+)_", p.stem)
    return (level if level is not None else -1, int(m.group(1)) if m else 10**6, str(p))
