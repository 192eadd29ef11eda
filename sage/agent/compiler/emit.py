"""The kernel file: every group's kernel, one `forward` per traced case, a dispatcher.

A library generator writes module-level names (constants, the kernel class, helpers, the
launcher); each group's source gets a suffix on all of them so that many groups and
cases share one file. Each case's host code allocates the temporaries, launches the
groups in order (a group with nothing to do is not launched) and returns the results;
`forward` picks the case by the arguments' shapes, dtypes and Python values, as a
shape-specialised compiled module does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sage.agent.compiler.build import Unsupported
from sage.kernels import HEADER, dsl_dtype, suffixed

if TYPE_CHECKING:
    from sage.agent.compiler.merge import TileProgram


@dataclass
class Launch:
    source: str                # the generator's file text (module-level definitions)
    call: str                  # the host line that launches it
    label: str                 # what it computes, for comments and plans
    args: list[str] = field(default_factory=list)   # the buffers it reads and writes
    program: TileProgram | None = None              # a tile program: what merging it with others needs
    weight: int | None = None                       # a tile program: the bytes it moves (symbolic in a trace)


@dataclass
class Variant:
    signature: tuple           # ((name, "dtype"|"shape"|"value", value), ...)
    args: list[str]            # forward's parameters, in order
    temps: list[tuple[str, int, str]] = field(default_factory=list)    # (name, elements, dtype)
    launches: list[Launch] = field(default_factory=list)
    returns: list[str] = field(default_factory=list)
    # per forward argument, the number of tensors of a list argument (None: one value); the
    # variant's own parameters are the flat ones (each list's tensors spliced in)
    packing: tuple[int | None, ...] = ()


def kernel_file(variants: list[Variant], title: str) -> str:
    parts = [HEADER.rstrip("\n"), f"# {title}", ""]
    for k, v in enumerate(variants):
        parts.append(f"# ==== case variant {k}: {_describe(v.signature)} " + "=" * 20)
        for g, launch in enumerate(v.launches):
            parts.append(f"# ---- v{k} launch {g}: {launch.label}")
            parts.append(suffixed(launch.source, f"_v{k}g{g}"))
        parts.append(_variant_forward(k, v))
    parts.append(_dispatcher(variants))
    return "\n".join(parts).rstrip() + "\n"


def _variant_forward(k: int, v: Variant) -> str:
    lines = [f"def forward_v{k}({', '.join(v.args)}):"]
    for name, numel, dtype in v.temps:
        lines.append(f"    {name} = empty(({numel},), {dsl_dtype(dtype)})")
    for g, launch in enumerate(v.launches):
        call = launch.call
        head, _, rest = call.partition("(")
        lines.append(f"    {head}_v{k}g{g}({rest}")
    ret = v.returns[0] if len(v.returns) == 1 else "(" + ", ".join(v.returns) + ("," if len(v.returns) == 1 else "") + ")"
    lines.append(f"    return {ret}")
    return "\n".join(lines) + "\n"


def _dispatcher(variants: list[Variant]) -> str:
    if not any(n is not None for v in variants for n in v.packing):
        args = variants[0].args
        lines = [f"def forward({', '.join(args)}):"]
        for k, v in enumerate(variants):
            cond = " and ".join(_test(name, what, value) for name, what, value in v.signature) or "True"
            lines += [f"    if {cond}:", f"        return forward_v{k}({', '.join(args)})"]
    else:
        head = variants[0]
        params = head.args[_flat_count(head.packing):]
        lines = [f"def forward({', '.join([f'x{i}' for i in range(len(head.packing))] + params)}):"]
        for k, v in enumerate(variants):
            # the list lengths first: the element tests index the lists
            expr = dict(zip(v.args, _flat_exprs(v.packing)))
            tests = [f"len(x{i}) == {n}" for i, n in enumerate(v.packing) if n is not None]
            tests += [_test(expr[name], what, value) for name, what, value in v.signature]
            lines += [f"    if {' and '.join(tests) or 'True'}:",
                      f"        return forward_v{k}({', '.join(_flat_exprs(v.packing) + params)})"]
    lines.append('    raise ValueError("no compiled case for these argument shapes, dtypes and values")')
    return "\n".join(lines) + "\n"


def _flat_count(packing: tuple[int | None, ...]) -> int:
    return sum(1 if n is None else n for n in packing)


def _flat_exprs(packing: tuple[int | None, ...]) -> list[str]:
    """The dispatcher's expression of each flat argument: `x1` or an element `x0[2]`."""
    return [e for i, n in enumerate(packing) for e in ([f"x{i}"] if n is None else [f"x{i}[{j}]" for j in range(n)])]


def _test(name: str, what: str, value: Any) -> str:
    if what == "dtype":
        return f"{name}.dtype == {dsl_dtype(value)}"
    if what == "shape":
        if tuple(value) == ():       # the simulator holds a rank-0 tensor as one element
            return f"tuple({name}.shape) in ((), (1,))"
        return f"tuple({name}.shape) == {tuple(value)!r}"
    if what == "list":
        return f"list({name}) == {list(value)!r}"
    return f"{name} == {value!r}"


def _describe(signature: tuple) -> str:
    parts = []
    for name, what, value in signature:
        if what == "shape":
            parts.append(f"{name}{list(value)}")
        elif what in ("value", "list"):
            parts.append(f"{name}={value!r}")
    return ", ".join(parts)


def library_launch(what: str, name: str, label: str, source: Callable[[], str], args: list[str]) -> Launch:
    """A library generator's kernel and its host call `{name}_launch(*args)`; a ValueError of
    the generator (a size or dtype it cannot take) is Unsupported naming `what` (the op)."""
    try:
        text = source()
    except ValueError as exc:
        raise Unsupported(f"{what}: {exc}") from None
    return Launch(text, f"{name}_launch({', '.join(args)})", label, args)
