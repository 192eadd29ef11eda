"""Running untrusted kernel text: an AST check first, then a resource-limited child process.

Kernel files are written by an LLM, so they are treated as hostile. Two layers:

1. `check_source` refuses, before anything runs, every construct a kernel has no business
   using and that leads to Python internals: imports other than the DSL and `math`, dunder
   names and attributes, frame/code/generator internals, the builtins that evaluate text or
   reach objects by name (`eval`, `getattr`, ...), `global`/`nonlocal`.
2. `run_sandboxed` evaluates the kernel in a forked child with CPU-time, address-space and
   file-size limits, a wall-clock deadline enforced by the parent, and every inherited file
   descriptor closed except its result pipe. A hang, a memory bomb or a crash costs only
   that child; the parent always gets a `KernelRun` back.
"""

from __future__ import annotations

import ast
import math
import multiprocessing
import multiprocessing.connection
import os
import signal
import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from sage.npu import sandbox_child

if TYPE_CHECKING:
    from sage.npu.errors import NpuError
    from sage.npu.execute import OutputSpec
    from sage.npu.hardware import HardwareSpec
    from sage.npu.results import KernelRun

DSL_MODULE = "sage.npu.ascendc"
ALLOWED_PLAIN_IMPORTS = frozenset({"math"})

# Builtins that evaluate text, reach attributes or objects by name, expose namespaces or
# the interpreter, or touch files and the terminal.
FORBIDDEN_NAMES = frozenset({
    "eval", "exec", "compile", "open", "input", "getattr", "setattr", "delattr",
    "globals", "locals", "vars", "dir", "breakpoint", "help", "memoryview", "exit", "quit",
    "copyright", "credits", "license",
    # type(name, bases, ns) builds classes at run time and type(x) leads to class internals;
    # kernels can use isinstance().
    "type",
})

# Attributes that lead from ordinary objects to frames, code objects, namespaces and the
# class hierarchy (the classic sandbox escapes), or, on numpy values, to files and raw memory.
FORBIDDEN_ATTRIBUTES = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "cr_frame", "cr_code", "cr_await",
    "ag_frame", "ag_code", "ag_await", "f_globals", "f_locals", "f_builtins", "f_back",
    "f_code", "f_trace", "tb_frame", "tb_next", "co_code", "co_consts", "co_names",
    "func_globals", "func_code", "func_closure", "im_func", "im_self", "im_class", "mro",
    "with_traceback", "tofile", "dump", "dumps", "ctypes", "format_map",
})


class Limits(BaseModel):
    """Resource limits of one sandboxed evaluation."""

    cpu_seconds: float = Field(120, gt=0, description="CPU time of the child (RLIMIT_CPU)")
    memory_mb: int = Field(
        4096, gt=0,
        description="address space the kernel may add on top of what the child inherits from the fork",
    )
    wall_seconds: float = Field(180, gt=0, description="wall-clock deadline enforced by the parent")


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


class _Checker(ast.NodeVisitor):
    """Walks the tree and stops at the first refusal (raised as _Refusal, with its line)."""

    def __init__(self, dsl_names: frozenset[str] | None):
        self.dsl_names = dsl_names

    def refuse(self, node: ast.AST, why: str) -> None:
        raise _Refusal(why, getattr(node, "lineno", None))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name not in ALLOWED_PLAIN_IMPORTS:
                self.refuse(node, f"import of '{alias.name}' is not allowed: a kernel file may "
                                  f"only use `from {DSL_MODULE} import *` and `import math`")
            self._check_binding(node, alias.asname)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level != 0 or node.module != DSL_MODULE:
            where = "." * node.level + (node.module or "")
            self.refuse(node, f"import from '{where}' is not allowed: a kernel file may only use "
                              f"`from {DSL_MODULE} import *` and `import math`")
        for alias in node.names:
            if alias.name == "*":
                continue
            if alias.name.startswith("_") or (
                self.dsl_names is not None and alias.name not in self.dsl_names
            ):
                self.refuse(node, f"'{alias.name}' is not part of the kernel DSL ({DSL_MODULE})")
            self._check_binding(node, alias.asname)

    def _check_binding(self, node: ast.AST, name: str | None) -> None:
        if name is not None:
            self._check_name(node, name)

    def _check_name(self, node: ast.AST, name: str) -> None:
        if _is_dunder(name):
            self.refuse(node, f"the name '{name}' is not allowed in a kernel (dunder names "
                              "reach Python internals)")
        if name in FORBIDDEN_NAMES:
            self.refuse(node, f"'{name}' is not allowed in a kernel")

    def visit_Name(self, node: ast.Name) -> None:
        self._check_name(node, node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.generic_visit(node)  # inner first: `a.gi_frame.f_globals` is refused at gi_frame
        self._check_attribute(node, node.attr)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        # `case C(attr=pattern)` reads attr with getattr: the same rules as `.attr`
        for attr in node.kwd_attrs:
            self._check_attribute(node, attr)
        self.generic_visit(node)

    def _check_attribute(self, node: ast.AST, attr: str) -> None:
        if _is_dunder(attr):
            self.refuse(node, f"the attribute '.{attr}' is not allowed in a kernel "
                              "(dunder attributes reach Python internals)")
        if attr.startswith("_"):
            # DSL objects keep their simulator state (numpy arrays, buffers) in private
            # attributes; reaching them would compute outside the cost model.
            self.refuse(node, f"the attribute '.{attr}' is not allowed in a kernel: names "
                              "starting with '_' are the simulator's internals (name your own "
                              "attributes without a leading underscore)")
        if attr in FORBIDDEN_ATTRIBUTES:
            self.refuse(node, f"the attribute '.{attr}' is not allowed in a kernel")

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name is not None:
            self._check_name(node, node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name is not None:
            self._check_name(node, node.name)

    def visit_Global(self, node: ast.Global) -> None:
        self.refuse(node, "`global` is not allowed in a kernel: keep state on `self`")

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.refuse(node, "`nonlocal` is not allowed in a kernel: keep state on `self`")

    def visit_Constant(self, node: ast.Constant) -> None:
        # str.format("{0.__class__...}") walks attributes without an Attribute node.
        if isinstance(node.value, str) and "__" in node.value:
            self.refuse(node, "strings containing '__' are not allowed in a kernel "
                              "(format strings can reach Python internals through them)")

    def _check_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self._check_name(node, node.name)
        self.generic_visit(node)

    visit_FunctionDef = _check_def
    visit_AsyncFunctionDef = _check_def
    visit_ClassDef = _check_def

    def visit_arg(self, node: ast.arg) -> None:
        self._check_name(node, node.arg)
        self.generic_visit(node)

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg is not None:
            self._check_name(node, node.arg)
        self.generic_visit(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name is not None:
            self._check_name(node, node.name)
        self.generic_visit(node)


class _Refusal(Exception):
    def __init__(self, message: str, line: int | None):
        super().__init__(message)
        self.message = message
        self.line = line


def _dsl_public_names() -> frozenset[str] | None:
    import sage.npu.ascendc as dsl

    names = getattr(dsl, "__all__", None)
    return frozenset(names) if names is not None else None


def check_source(source: str, filename: str = "kernel.py") -> None:
    """Refuse a kernel file that could reach beyond the DSL: SandboxError with the line
    (a file that is not valid Python: KernelRuntimeError, as when run unsandboxed)."""
    from sage.npu.errors import KernelRuntimeError, SandboxError

    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        # The same class and message as the unsandboxed path (execute.py), so an agent learns one lesson.
        raise KernelRuntimeError(f"SyntaxError: {exc.msg}", line=exc.lineno) from None
    except ValueError as exc:  # e.g. null bytes in the source
        raise SandboxError(f"{filename} cannot be parsed: {exc}", line=None) from None
    try:
        _Checker(_dsl_public_names()).visit(tree)
    except _Refusal as refusal:
        raise SandboxError(refusal.message, line=refusal.line) from None


def run_sandboxed(
    source: str,
    args: list[Any],
    kwargs: dict[str, Any] | None = None,
    *,
    preset: str | HardwareSpec = "ascend910b2",
    filename: str = "kernel.py",
    trace: bool = False,
    expected: list[OutputSpec] | None = None,
    limits: Limits | None = None,
) -> KernelRun:
    """Check `source`, then run `run_kernel_source` on it in a limited child process.

    Never raises for anything the kernel does: refusals, timeouts, memory exhaustion and
    crashes of the child come back as `KernelRun.error`.
    """
    from sage.npu.errors import NpuError
    from sage.npu.results import KernelRun

    limits = limits or Limits()
    try:
        check_source(source, filename)
    except NpuError as exc:
        return KernelRun(outputs=None, error=exc.info(), profile=None)
    # Import the simulator (and load the preset) before forking, so each child starts warm.
    import sage.npu.execute  # noqa: F401
    from sage.npu.hardware import load_preset

    spec = load_preset(preset) if isinstance(preset, str) else preset
    job = sandbox_child.Job(source=source, args=list(args), kwargs=dict(kwargs or {}), preset=spec,
                            filename=filename, trace=trace, expected=expected, limits=limits)
    return _run_child(job)


def _run_child(job: sandbox_child.Job) -> KernelRun:
    ctx = multiprocessing.get_context("fork")
    receiver, sender = ctx.Pipe(duplex=False)
    cpu_flag = ctx.Value("b", 0, lock=False)  # set by the child when it hits RLIMIT_CPU
    child = ctx.Process(target=sandbox_child.child_main, args=(sender, job, cpu_flag), daemon=True)
    max_bytes = job.limits.memory_mb * 2**20
    child.start()
    sender.close()  # the child now holds the only writer: EOF means it is gone
    timed_out = False
    try:
        # Read before join: a large result blocks the child in send until it is consumed.
        reply = sandbox_child.receive(receiver, time.monotonic() + job.limits.wall_seconds, max_bytes)
        if reply is sandbox_child.TIMED_OUT:
            # SIGUSR1 makes the child raise KernelTimeout where it is, so the reply names the line.
            os.kill(child.pid, signal.SIGUSR1)
            reply = sandbox_child.receive(
                receiver, time.monotonic() + sandbox_child.GRACE_SECONDS, max_bytes)
            timed_out = reply is sandbox_child.TIMED_OUT or reply is None
        cpu_used = _cpu_seconds_of_dead_child(child) if reply is None else None
    finally:
        receiver.close()
        if child.is_alive():
            child.kill()
        child.join()
    from sage.npu.errors import KernelTimeout

    if timed_out:
        return _error_run(KernelTimeout(sandbox_child.wall_timeout_message(job.limits)))
    if reply is None:
        # The CPU handler cannot run while the kernel is inside one long C call (sum(range(10**13))):
        # then the hard limit's SIGKILL ends the child, and only its CPU time tells.
        cpu_limit_hit = bool(cpu_flag.value) or (
            cpu_used is not None and cpu_used >= math.ceil(job.limits.cpu_seconds))
        return _death_run(child.exitcode, cpu_limit_hit, job.limits)
    assert not isinstance(reply, sandbox_child.TimedOut)
    return reply


def _cpu_seconds_of_dead_child(child: multiprocessing.process.BaseProcess) -> float | None:
    """CPU time of a child that has exited but is not yet reaped (/proc keeps the zombie's stat)."""
    multiprocessing.connection.wait([child.sentinel], timeout=sandbox_child.GRACE_SECONDS)
    try:
        with open(f"/proc/{child.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    utime, stime = int(fields[11]), int(fields[12])  # stat fields 14 and 15, in clock ticks
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def _error_run(error: NpuError) -> KernelRun:
    from sage.npu.results import KernelRun

    return KernelRun(outputs=None, error=error.info(), profile=None)


def _death_run(exitcode: int | None, cpu_limit_hit: bool, limits: Limits) -> KernelRun:
    """The child ended without a reply: name what ended it."""
    from sage.npu.errors import KernelRuntimeError, KernelTimeout, MemoryLimitError

    if exitcode == -signal.SIGXCPU or cpu_limit_hit:
        return _error_run(KernelTimeout(sandbox_child.cpu_timeout_message(limits)))
    if exitcode == -signal.SIGUSR1:  # the wall-clock signal came before the child was ready
        return _error_run(KernelTimeout(sandbox_child.wall_timeout_message(limits)))
    if exitcode == -signal.SIGKILL:
        return _error_run(MemoryLimitError(
            "the kernel process was killed (SIGKILL), most likely by the system's out-of-memory killer"))
    if exitcode is not None and exitcode < 0:
        return _error_run(KernelRuntimeError(
            f"the kernel process crashed with signal {signal.Signals(-exitcode).name}"))
    return _error_run(KernelRuntimeError(f"the kernel process exited (code {exitcode}) without a result"))
