"""Assembling one kernel file from library variants.

Library generators write a whole file per spec (module constants, helpers, the kernel,
a launch function and `forward`). A task's cases can need several specs (one per dtype,
per scalar argument), so each variant's module-level names get a suffix and the file's
own `forward` dispatches on the arguments' dtypes and Python values, as a shape- and
dtype-specialised host wrapper would.
"""

from __future__ import annotations

import ast
import io
import tokenize
from typing import Any

from sage.agent.offline.templates import CasePlan
from sage.kernels import HEADER, dsl_dtype


def kernel_file(plans: list[CasePlan], sources: dict[int, str], n_args: int, params: list[str], title: str) -> str:
    """`plans` per case, `sources[v]` the generated file of variant v (in order of first use)."""
    variant_of: dict[Any, int] = {}
    for plan in plans:
        variant_of.setdefault(plan.spec, len(variant_of))
    parts = [HEADER.rstrip("\n"), f"# {title}", ""]
    for v in range(len(variant_of)):
        parts.append(f"# ---- variant {v} " + "-" * 60)
        parts.append(_suffixed(sources[v], f"_v{v}"))
    parts.append(_dispatcher(plans, variant_of, n_args, params))
    return "\n".join(parts).rstrip() + "\n"


def _suffixed(source: str, suffix: str) -> str:
    """The source without its header, every module-level name renamed `<name><suffix>`."""
    body = source.replace(HEADER, "", 1) if source.startswith(HEADER) else source
    tree = ast.parse(body)
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    tokens = []
    for tok in tokenize.generate_tokens(io.StringIO(body).readline):
        if tok.type == tokenize.NAME and tok.string in names:
            tok = tok._replace(string=tok.string + suffix)
        tokens.append(tok)
    return tokenize.untokenize(tokens).strip("\n") + "\n"


def _dispatcher(plans: list[CasePlan], variant_of: dict[Any, int], n_args: int, params: list[str]) -> str:
    args = [f"a{i}" for i in range(n_args)] + params
    lines = [f"def forward({', '.join(args)}):"]
    # One entry per signature: the kernels writing its outputs, in output order.
    outputs: dict[tuple, dict[int, CasePlan]] = {}
    for plan in plans:
        outputs.setdefault(plan.signature, {}).setdefault(plan.output, plan)
    for signature, by_output in outputs.items():
        cond = " and ".join(_test(name, what, value) for name, what, value in signature) or "True"
        calls = [_call(by_output[j], variant_of) for j in sorted(by_output)]
        result = calls[0] if len(calls) == 1 else f"({', '.join(calls)})"
        lines += [f"    if {cond}:", f"        return {result}"]
    lines.append('    raise ValueError("no kernel variant for these argument dtypes and values")')
    return "\n".join(lines) + "\n"


def _call(plan: CasePlan, variant_of: dict[Any, int]) -> str:
    call = f"forward_v{variant_of[plan.spec]}({', '.join(plan.operands)})"
    if plan.keepdim:
        call = f"{call}.reshape(tuple({plan.operands[0]}.shape[:-1]) + (1,))"
    return call


def _test(name: str, what: str, value: Any) -> str:
    if what == "dtype":
        return f"{name}.dtype == {dsl_dtype(value)}"
    return f"{name} == {value!r}"
