"""Serving `import torch_npu` to task files with the CPU stand-ins (sage.bench.torch_npu_standin).

A public task file whose reference calls torch_npu's fused operators can run its reference
on a CPU when no real torch_npu is importable: `plan(tree)`, read from the file before it is
imported, says whether the stand-in serves every `torch_npu.<name>` the file uses, and
`install()` puts the stand-in package in `sys.modules` as `torch_npu` (task files import it at
module level or inside `forward`, so it stays there for the process). A real torch_npu always
wins. This is for references only: a kernel file may import nothing but the DSL and math
(sage.npu.restricted), so no kernel can reach the stand-ins.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from dataclasses import dataclass, field

MODULE = "torch_npu"


@dataclass
class StandinPlan:
    imports: bool = False                     # the file imports torch_npu
    used: list[str] = field(default_factory=list)     # torch_npu.<name> attributes it reads
    missing: list[str] = field(default_factory=list)  # of those, what the stand-in lacks

    @property
    def serves(self) -> bool:
        """The file's torch_npu is wholly served by the stand-in (and no real one is installed)."""
        return self.imports and not self.missing and not real_torch_npu()

    @property
    def reason(self) -> str | None:
        if self.imports and self.missing and not real_torch_npu():
            return f"calls {', '.join('torch_npu.' + m for m in self.missing)}, which has no CPU stand-in"
        return None


def real_torch_npu() -> bool:
    """Whether a real torch_npu can be imported (the stand-in installed by us does not count)."""
    mod = sys.modules.get(MODULE)
    if mod is not None:
        return not getattr(mod, "STANDIN", False)
    return importlib.util.find_spec(MODULE) is not None


def plan(tree: ast.AST) -> StandinPlan:
    """What the file needs from torch_npu, found by reading it."""
    from sage.bench import torch_npu_standin
    out = StandinPlan()
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == MODULE:
                    out.imports = True
                    aliases.add(a.asname or a.name)
        elif isinstance(node, ast.ImportFrom) and node.module == MODULE:
            out.imports = True
            out.used += [a.name for a in node.names]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            out.used.append(node.attr)
    out.used = sorted(set(out.used))
    out.missing = [u for u in out.used if not torch_npu_standin.provides(u)]
    return out


def quantising(used: list[str]) -> bool:
    """Whether one of the ops a file uses computes quantised codes (the stand-in's QUANTISING)."""
    from sage.bench import torch_npu_standin
    return any(u in torch_npu_standin.QUANTISING for u in used)


def install() -> None:
    """`import torch_npu` gives the stand-in from now on (unless a real one is installed)."""
    if real_torch_npu():
        return
    from sage.bench import torch_npu_standin
    sys.modules.setdefault(MODULE, torch_npu_standin)
