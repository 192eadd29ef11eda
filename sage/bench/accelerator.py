"""Why a task's reference cannot run on this machine's CPU-only torch.

A reference that needs torch_npu, CUDA or an operator only an accelerator build of torch
registers is "reference unavailable": the task is skipped with the reason and never counted
as a failure of the kernel. Found two ways: by reading the file before it is imported
(`accelerator_reason`), and from the error torch raises when the code runs anyway
(`runtime_accelerator_reason`).
"""

from __future__ import annotations

import ast
import re

import torch

# Modules and attributes whose presence means the reference needs an accelerator.
ACCELERATOR_MODULES = frozenset({"torch_npu", "apex", "triton", "cupy", "pycuda"})
_ACCELERATOR_METHODS = {"cuda", "npu"}
_ACCELERATOR_DEVICES = re.compile(r"^(cuda|npu)(:\d+)?$")
# torch.ops namespaces whose operators are checked against this torch build before import.
# Other namespaces may be defined by the task file itself (torch.library), so only these
# can be judged by reading.
_BUILTIN_OP_NAMESPACES = ("aten", "prims")
# Texts of the errors torch raises for a device or operator a CPU build lacks.
_RUNTIME_MARKERS = ("Torch not compiled with CUDA", "No CUDA GPUs", "Found no NVIDIA driver",
                    "CUDA driver", "torch.npu", "torch_npu", "Expected one of cpu")
_MISSING_OP = re.compile(r"'_OpNamespace' '(\w+)' object has no attribute '(\w+)'")


def accelerator_reason(tree: ast.AST, allowed: frozenset[str] = frozenset()) -> str | None:
    """Why a task's code cannot run on a CPU, found by reading it (None if nothing found).
    `allowed`: accelerator modules whose import is served otherwise (the torch_npu stand-in)."""
    for node in ast.walk(tree):
        reason = _node_reason(node, allowed)
        if reason:
            return reason
    return None


def runtime_accelerator_reason(exc: BaseException) -> str | None:
    """Recognises the errors torch raises when code asks for a device or an operator a CPU build lacks."""
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in ACCELERATOR_MODULES:
        return f"needs the {exc.name} module"
    text = str(exc)
    missing = _MISSING_OP.search(text)
    if missing:
        return f"calls torch.ops.{missing.group(1)}.{missing.group(2)}, which this build of torch does not have"
    for marker in _RUNTIME_MARKERS:
        if marker in text:
            return f"needs an accelerator ({type(exc).__name__}: {text.splitlines()[0][:160]})"
    return None


def _node_reason(node: ast.AST, allowed: frozenset[str] = frozenset()) -> str | None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.split(".")[0] in ACCELERATOR_MODULES - allowed:
                return f"imports {alias.name} (line {node.lineno})"
    elif isinstance(node, ast.ImportFrom) and node.module:
        if node.module.split(".")[0] in ACCELERATOR_MODULES - allowed:
            return f"imports {node.module} (line {node.lineno})"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in _ACCELERATOR_METHODS:
            return f"calls .{node.func.attr}() (line {node.lineno})"
        for kw in node.keywords:
            if kw.arg == "device" and _is_accelerator_device(kw.value):
                return f"allocates on device {kw.value.value!r} (line {node.lineno})"
        if node.func.attr == "to" and node.args and _is_accelerator_device(node.args[0]):
            return f"moves tensors to {node.args[0].value!r} (line {node.lineno})"
    elif isinstance(node, ast.Attribute):
        return _missing_op_reason(node)
    return None


def _missing_op_reason(node: ast.Attribute) -> str | None:
    """`torch.ops.aten.relu_backward` where this torch has no such operator."""
    ns = node.value
    if not (isinstance(ns, ast.Attribute) and ns.attr in _BUILTIN_OP_NAMESPACES
            and isinstance(ns.value, ast.Attribute) and ns.value.attr == "ops"
            and isinstance(ns.value.value, ast.Name) and ns.value.value.id == "torch"):
        return None
    if hasattr(getattr(torch.ops, ns.attr), node.attr):
        return None
    return (f"calls torch.ops.{ns.attr}.{node.attr}, which this build of torch does not have "
            f"(line {node.lineno})")


def _is_accelerator_device(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) \
        and bool(_ACCELERATOR_DEVICES.match(node.value))
