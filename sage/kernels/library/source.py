"""Helpers shared by the kernel-source generators: dtype facts, text assembly, and the
helper functions every generated vector kernel file defines."""

from __future__ import annotations

import ast
import io
import textwrap
import tokenize

DTYPE_SIZE = {
    "float32": 4, "float16": 2, "bfloat16": 2, "int32": 4, "int16": 2, "int8": 1,
    "uint8": 1, "int64": 8, "bool": 1, "uint16": 2, "uint32": 4,
}
FLOATS = {"float32", "float16", "bfloat16"}
# What the library's kernels compute on, and what an elementwise kernel reads and writes
# (bool as 0/1 bytes).
LIB_DTYPES = FLOATS | {"int32"}
KERNEL_DTYPES = LIB_DTYPES | {"bool"}
HEADER = "from sage.npu.ascendc import *\nimport math\n"


# The vector op that combines two partial results of a reduction (halving folds, accumulators).
FOLD_OPS = {"sum": "Add", "max": "Max", "min": "Min"}


def compensated(kind: str, compute: str) -> bool:
    """A row-mode float32 sum carries a compensation row (Kahan): accumulated tile after tile,
    a column sum over 16,384 rows drifted 2.3e-4 from the float64 truth where eager torch's
    blocked sum is 7e-6 off (public level2/19, case 23). Four more one-row vector ops per tile."""
    return kind == "sum" and compute == "float32"


def accumulate(kind: str, compute: str, j: int, x: str, first: str) -> list[str]:
    """Accumulator j (bound to `acc`) started at row x (nc elements) where `first` holds, else
    x folded into it. A compensated sum also starts its compensation row `cmp` at zero, and
    adds Kahan's way: what the last add lost is taken off x first (x is overwritten; the
    shared row `ks` holds the new sum)."""
    if not compensated(kind, compute):
        return [f"if {first}:", f"    Adds(acc, {x}, 0, nc)", "else:", f"    {FOLD_OPS[kind]}(acc, acc, {x}, nc)"]
    ct = dsl_dtype(compute)
    return [f"cmp = self.cmpb{j}.Get({ct})", f"if {first}:", f"    Adds(acc, {x}, 0, nc)", "    Duplicate(cmp, 0.0, nc)",
            "else:", f"    ks = self.ksb.Get({ct})", f"    Sub({x}, {x}, cmp, nc)", f"    Add(ks, acc, {x}, nc)",
            "    Sub(cmp, ks, acc, nc)", f"    Sub(cmp, cmp, {x}, nc)", "    Adds(acc, ks, 0, nc)"]


def bind_globals(**buffers: str) -> str:
    """Init lines (8-space indent) binding each GM argument to a GlobalTensor attribute:
    bind_globals(x="x", i="idx") binds self.g_x to x and self.g_i to idx, in that order."""
    return "\n".join(f"        self.g_{name} = GlobalTensor()\n        self.g_{name}.SetGlobalBuffer({arg})"
                     for name, arg in buffers.items())


def dsl_dtype(name: str) -> str:
    """The DSL's name for a numpy/torch dtype name."""
    return {"bool": "bool_"}.get(name, name)


def check_dtype(name: str) -> str:
    if name not in DTYPE_SIZE:
        raise ValueError(f"unsupported dtype {name!r}; known: {sorted(DTYPE_SIZE)}")
    return name


def compute_dtype(in_dtypes: list[str], fp32_compute: bool) -> str:
    """Arithmetic dtype: float32 for any half input when asked (and always for bfloat16,
    whose arithmetic the A2 vector unit lacks), else the common input dtype."""
    kinds = set(in_dtypes)
    if kinds <= {"int32"}:
        return "int32"
    if not kinds <= FLOATS:
        raise ValueError(f"library kernels compute on float or int32 inputs, got {sorted(kinds)}")
    if len(kinds) > 1 or "float32" in kinds or "bfloat16" in kinds or fp32_compute:
        return "float32"
    return "float16"


def cast_line(dst: str, src: str, src_dtype: str, dst_dtype: str, count: str) -> str:
    """One Cast instruction: widening is exact, narrowing rounds to nearest, to int truncates
    (torch's `.to(int)` semantics)."""
    if dst_dtype.startswith("int"):
        mode = "CAST_TRUNC"
    elif DTYPE_SIZE[dst_dtype] >= DTYPE_SIZE[src_dtype] and not src_dtype.startswith("int"):
        mode = "CAST_NONE"
    else:
        mode = "CAST_RINT"
    return f"Cast({dst}, {src}, RoundMode.{mode}, {count})"


def block(text: str, indent: int = 0) -> str:
    return textwrap.indent(textwrap.dedent(text).strip("\n"), "    " * indent) + "\n"


def method(name: str, params: str, body: list[str]) -> str:
    lines = [f"    def {name}(self{', ' + params if params else ''}):"]
    lines += ["        " + ln if ln else "" for ln in (body or ["pass"])]
    return "\n".join(lines) + "\n"


def ub_helpers(block_bytes: int) -> str:
    """`buf_bytes` (a buffer's size rounded up to whole UB blocks) and `row_gap` (the UB gap after
    a row of `nc` elements, in blocks, so that every row starts at a multiple of ALIGN
    elements), as they appear in a generated vector kernel file."""
    b = block_bytes
    return f'''
def buf_bytes(elems, size):
    return (elems * size + {b - 1}) // {b} * {b}


def row_gap(nc, size):
    # UB gap between rows, in {b} B blocks, so that every row starts at a multiple of ALIGN elements.
    return ((nc + ALIGN - 1) // ALIGN * ALIGN * size - (nc * size + {b - 1}) // {b} * {b}) // {b}

'''


def suffixed(source: str, suffix: str, keep: frozenset[str] | set[str] = frozenset()) -> str:
    """`source` without its header, every module-level name renamed `<name><suffix>` (but
    those in `keep`: helpers the file defines once for every module)."""
    body = source.replace(HEADER, "", 1) if source.startswith(HEADER) else source
    tree = ast.parse(body)
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    names -= set(keep)
    tokens = []
    for tok in tokenize.generate_tokens(io.StringIO(body).readline):
        if tok.type == tokenize.NAME and tok.string in names:
            tok = tok._replace(string=tok.string + suffix)
        tokens.append(tok)
    return tokenize.untokenize(tokens).strip("\n") + "\n"
