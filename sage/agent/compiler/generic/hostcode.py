"""The kernel file: its kernels once each with their host tiling functions, one host
function per case class, and forward().

Each distinct kernel module (`TracedLaunch.kernel`) is written once, its module-level names
suffixed `_k<i>`, and after it `tiling_k<i>(p0, p1, ...)`: from the launch's parameters
(sizes, strides, constants), the first tiling variant whose guards hold gives the tiling
struct the kernel takes (Ascend C's host tiling function and its TilingData); None when no
variant holds. Each `Rule` becomes a host function of forward's parameters that returns
None unless the arguments are its case class (dtypes, ranks, list lengths, the scalar
arguments it is specific to, a tiling for every launch): it computes the parameters from
the shapes (`v0 = a0.numel()`), allocates the temporaries, launches and returns the
results. forward() takes the first class that answers.
"""

from __future__ import annotations

import re

from typing import Any

from sage.agent.compiler.generic.ambiguity import category_implied
from sage.agent.compiler.generic.hostexpr import BROADCAST_HELPERS, HostExpr, literal
from sage.agent.compiler.generic.prune import compact, hoist
from sage.agent.compiler.generic.templates import strip_header, templated
from sage.agent.compiler.generic.unify import unified
from sage.agent.compiler.generic.casemodel import PATTERN_HELPER, Tilings, pattern_text
from sage.agent.compiler.generic.rules import Rule
from sage.kernels import HEADER, dsl_dtype, suffixed
from sage.kernels.host_helpers import HOST_HELPERS, helper_source
from sage.agent.compiler.generic.tilingfn import formula_text, tiling_function, tuple_text
from sage.kernels.symbolic import Formula


def kernel_file(rules: list[Rule], tilings: Tilings, title: str, params: list[str]) -> tuple[str, list[str]]:
    """(the file's text, its distinct kernel modules); `params` are the model's parameters
    (forward's keyword arguments)."""
    kernels: list[str] = []
    for rule in rules:
        for launch in rule.code.launches:
            if launch.kernel not in kernels:
                kernels.append(launch.kernel)
    parts = [HEADER.rstrip("\n"), f"# {title}", f"# {len(rules)} case class(es), {len(kernels)} kernel(s): the "
             "kernels take their sizes and tiling at launch; each class's host function computes them", ""]
    entries = {launch.kernel: launch.entry for rule in rules for launch in rule.code.launches}
    shared, names, texts = hoist(kernels)
    if shared:
        parts += ["# ==== helpers every kernel below may use " + "=" * 40, shared]
    bodies = [strip_header(t) for t in texts]
    templates, made = unified(bodies, [entries[k] for k in kernels])
    if templates:
        parts += ["# ==== kernels written once over their code paths (unify.py) " + "=" * 18,
                  compact(templates)]
    tiling_fns = [tiling_function(kernel, tilings) for kernel in kernels]
    head = rules[0].code
    forward_params = [f"x{i}" for i in range(len(head.packing))] + params
    classes = [_rule_function(j, rule, kernels, forward_params, _mixed_kinds(rules)) for j, rule in enumerate(rules)]
    # the tiling functions' helpers and the derived shapes' (generic/derived.py) of the classes
    texts_using = tiling_fns + classes
    helpers: list[str] = []
    while True:          # and the helpers those call (pad_offset calls padded_shape)
        more = [n for n in HOST_HELPERS if n not in helpers and any(f"{n}(" in t for t in texts_using)]
        if not more:
            break
        helpers += more
        texts_using = [helper_source(n) for n in more]
    helpers = [n for n in HOST_HELPERS if n in helpers]
    if helpers:
        parts += ["# ==== host helpers the tiling functions call (sage/kernels/host_helpers.py) " + "=" * 4,
                  *(helper_source(name) for name in helpers)]
    tiling_templates, tiling_made = templated(tiling_fns, ["tiling"] * len(kernels), "tiling")
    if tiling_templates:
        parts += ["# ==== host tiling functions that differ only in constants, as templates " + "=" * 6,
                  compact(tiling_templates)]
    for i, (kernel, text) in enumerate(zip(kernels, texts)):
        parts.append(f"# ==== kernel {i}")
        if made[i] is not None:
            parts.append(f"{entries[kernel]}_k{i} = {made[i]}")
        else:
            parts.append(compact(suffixed(text, f"_k{i}", names)))
        if tiling_made[i] is not None:
            parts.append(f"tiling_k{i} = {tiling_made[i]}\n")
        else:
            parts.append(tiling_fns[i].replace("def tiling(", f"def tiling_k{i}(", 1))
    # the helpers the classes' checks and expressions call (broadcast shapes, 0/1 patterns)
    if any(re.search(r"\b(bshape|bsize)\(", c) for c in classes):
        parts.append(BROADCAST_HELPERS)
    if any("dims_pattern(" in c for c in classes):
        parts.append(PATTERN_HELPER)
    parts += classes
    parts.append(_forward(len(rules), forward_params))
    return "\n".join(parts).rstrip() + "\n", kernels


def _forward(n: int, params: list[str]) -> str:
    args = ", ".join(params)
    lines = [f"def forward({args}):", f"    for case_class in ({', '.join(f'class_{j}' for j in range(n))},):",
             f"        out = case_class({args})", "        if out is not None:", "            return out",
             '    raise ValueError("no compiled case class of this kernel file takes these arguments (dtypes, ranks, sizes)")']
    return "\n".join(lines) + "\n"


def _flat_exprs(packing: tuple[int | None, ...]) -> list[str]:
    return [e for i, n in enumerate(packing) for e in ([f"x{i}"] if n is None else [f"x{i}[{j}]" for j in range(n)])]


def _kind(a: object) -> str:
    if hasattr(a, "dtype") and hasattr(a, "dim"):
        return "tensor"
    return "none" if a is None else "list" if isinstance(a, (list, tuple)) else "scalar"


def _mixed_kinds(rules: list[Rule]) -> set[int]:
    """The arguments some classes' cases pass as a tensor or a list and others as None or
    an int (layer_norm's bias, avg_pool3d's kernel_size): their class checks test the kind
    before reading a dtype, dims or items."""
    kinds: dict[int, set[str]] = {}
    for rule in rules:
        for i, a in enumerate(rule.code.flat):
            kinds.setdefault(i, set()).add(_kind(a))
    return {i for i, ks in kinds.items() if len(ks) > 1}


def _rule_function(j: int, rule: Rule, kernels: list[str], params: list[str], mixed: set[int]) -> str:
    code = rule.code
    lines = [f"def class_{j}({', '.join(params)}):"]
    if rule.exact:
        lines[0] += "    # one case only: its exact shapes and values"
    body: list[str] = []
    lists = [f"len(x{i}) == {n}" for i, n in enumerate(code.packing) if n is not None]
    if lists:
        body.append(f"if not ({' and '.join(lists)}):")
        body.append("    return None")
    flat = [f"a{i}" for i in range(len(code.flat))]
    exprs = _flat_exprs(code.packing)
    if lists:
        body += [f"{a} = {e}" for a, e in zip(flat, exprs)]
    else:           # no list arguments: forward's x<i> is a<i>, taken under that name
        lines[0] = lines[0].replace(f"def class_{j}({', '.join(params)})", f"def class_{j}({', '.join(flat + params[len(flat):])})")
    body += _checks(rule, mixed)
    checked = len(body)
    chosen = rule.chosen()
    names: dict[HostExpr, str] = {}
    for e in chosen:
        if e.kind != "lit" and e not in names:
            names[e] = f"v{len(names)}"
    if names:                # one line: a 50-case file holds dozens of classes (64 KB per file)
        body.append(f"{', '.join(names.values())} = {', '.join(e.text(flat) for e in names)}")
    conds = [f"{names[chosen[k]]} {('== 0', '== 1', 'not in (0, 1)')[cat]}" for k, cat in rule.categories().items()
             if not category_implied(chosen[k], cat, code.flat, rule.ranked)]
    conds += [f"{_side(a, names, flat)} == {_side(b, names, flat)}" for a, b in rule.ambiguities()]
    if conds:
        body.append(f"if not ({' and '.join(dict.fromkeys(conds))}):")
        body.append("    return None")
    at = 0
    calls = []
    for i, launch in enumerate(code.launches):
        k = kernels.index(launch.kernel)
        if rule.exact:
            tiling = tuple_text([literal(v) for v in launch.tiling()])
        else:
            local = [formula_text(_term(chosen[at + p], names)) for p in range(len(launch.values))]
            body.append(f"tl{i} = tiling_k{k}({', '.join(local)})")
            body.append(f"if tl{i} is None: return None")
            tiling = f"tl{i}"
        at += len(launch.values)
        calls.append(f"{launch.entry}_k{k}({', '.join(launch.args)}, {tiling})")
    host = [_term(chosen[at + k], names) for k in range(len(code.host.values))]
    at += len(code.host.values)
    for name, p, dtype in code.host.temps:
        body.append(f"{name} = empty(({formula_text(host[p])},), {dsl_dtype(dtype)})")
    body += calls
    returns = []
    for j, (r, dims) in enumerate(zip(code.host.returns, code.shapes())):
        if rule.ranked:
            shape = tuple_text([formula_text(_term(chosen[at + k], names)) for k in range(len(dims))])
            at += len(dims)
        else:
            shape = f"a{rule.likes[j][0]}.shape"
        returns.append(f"{r[1]}.view({shape})" if r[0] == "view" else f"empty({shape}, {dsl_dtype(r[2])})")
    body.append("return " + (returns[0] if len(returns) == 1 else "(" + ", ".join(returns) + ")"))
    body[checked:] = _shape_aliases(body[checked:], len(flat))
    body = _one_line_refusals(body)
    return "\n".join(lines + ["    " + ln for b in body for ln in b.split("\n")]) + "\n"


def _all_like(code: Any, i: int) -> bool:
    """Whether every other tensor argument is checked to have tensor i's shape (then it is
    the broadcast's shape without a `bshape` check)."""
    sig = code.signature(False)[1]
    return all(p[2][0] == i for p in sig if p[0] == "t")


def _one_line_refusals(body: list[str]) -> list[str]:
    """`if not (...): return None` on one line (the class's checks; 64 KB per file)."""
    out: list[str] = []
    for line in body:
        if line == "    return None" and out and out[-1].startswith("if ") and out[-1].endswith(":"):
            out[-1] += " return None"
        else:
            out.append(line)
    return out


def _shape_aliases(body: list[str], n: int) -> list[str]:
    """`s0 = a0.shape` once and `s0[k]` after it, for a tensor whose dimensions the class
    reads more than twice: ranked classes read many, and a 50-case file holds dozens of
    classes (issue 31: 64 KB per file)."""
    text = "\n".join(body)
    aliases = []
    for i in range(n):
        read = re.compile(rf"\ba{i}\.shape\[")
        if len(read.findall(text)) > 2:
            aliases.append(f"s{i} = a{i}.shape")
            text = read.sub(f"s{i}[", text)
    return aliases + text.split("\n") if aliases else body


def _checks(rule: Rule, mixed: set[int]) -> list[str]:
    """The case class's dtypes, ranks and the scalar arguments it is specific to."""
    code = rule.code
    tests: list[str] = []
    # an optional tensor is None in another class's cases (layer_norm's bias): tested first,
    # as the shape tests below read every tensor's dims (bshape), which None has not
    present: list[str] = []
    for i, a in enumerate(code.flat):
        if hasattr(a, "dtype") and hasattr(a, "dim"):
            if i in mixed:
                present.append(f"a{i} is not None")
            tests.append(f"a{i}.dtype == {dsl_dtype(str(a.dtype).removeprefix('torch.'))}")
            if rule.exact:
                tests.append(f"tuple(a{i}.shape) == {tuple(int(d) for d in a.shape)!r}")
            elif rule.ranked:
                tests.append(f"dims_pattern(a{i}) == {pattern_text(a.shape)!r}")
            else:
                like, whole = code.signature(False)[1][i][2]
                if like != i:
                    tests.append(f"a{i}.shape == a{like}.shape")   # both GmHandle shapes: tuples
                elif whole and not _all_like(code, i):
                    tensors = ", ".join(f"a{j}" for j, b in enumerate(code.flat) if hasattr(b, "shape"))
                    tests.append(f"tuple(bshape(({tensors},))) == tuple(a{i}.shape)")
        elif a is None:
            tests.append(f"a{i} is None")
        elif isinstance(a, (list, tuple)) and i in mixed:
            # the host reads its items (v = a1[1]); another class's cases may pass an int
            # here (avg_pool3d's kernel_size: 2 or [2, 2, 2])
            present.append(f"isinstance(a{i}, (list, tuple)) and len(a{i}) == {len(a)}")
        elif isinstance(a, (int, float)) and i in mixed:
            # and the other way round: a class whose int is read as a size must not take a
            # list (split's 64 or [64, 128, 64]: 64 * a list is a list, and passed every test)
            present.append(f"isinstance(a{i}, {'float' if isinstance(a, float) else 'int'})")
    for i, v in rule.scalar_checks().items():
        if isinstance(v, (list, tuple)):
            tests.append(f"list(a{i}) == {list(v)!r}")
        elif isinstance(v, float) and v != v:
            tests.append(f"a{i} != a{i}")
        elif v is not None:
            tests.append(f"a{i} == {literal(v)}")
    pinned = rule.pinned_shapes()
    tensors = [f"tuple(a{i}.shape)" for i, a in enumerate(code.flat) if hasattr(a, "dtype") and hasattr(a, "dim")]
    if pinned is not None and tensors:    # a forward of scalars only (level2/22) has no shape to pin
        tests.append(f"({', '.join(tensors)},) in {tuple(pinned)!r}")
    tests = present + tests
    return [f"if not ({' and '.join(tests)}):", "    return None"] if tests else []


def _side(e: HostExpr, names: dict[HostExpr, str], flat: list[str]) -> str:
    """One side of an ambiguity check: a variable the class already computed, else the text."""
    return names.get(e) or e.text(flat)


def _term(e: HostExpr, names: dict[HostExpr, str]) -> Formula:
    """A parameter as the host has it: a variable of the rule or a literal."""
    return ("c", e.value) if e.kind == "lit" else ("v", names[e])


__all__ = ["kernel_file"]
