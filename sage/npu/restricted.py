"""Kernel files as restricted Python: what the language allows, and the guards of its namespace.

Kernel text is hostile (LLMs reward-hack), so it is compiled with RestrictedPython's
compiler, whose transformer rewrites every attribute read ``a.b`` into ``_getattr_(a, "b")``,
every attribute or item write through ``_write_``, every subscript through ``_getitem_`` and
every iteration through ``_getiter_``. `KernelPolicy` is stricter than RestrictedPython's
default in the ways a kernel file needs:

- no name, attribute, argument, keyword, class or def starting with ``_`` anywhere (class
  bodies and methods included: RestrictedPython would allow ``__init__`` and friends);
- imports: ``from sage.npu.ascendc import *`` (or named DSL names) and ``math`` only;
- no ``try``/``with``/``yield``/``global``/``nonlocal``/``match``/async: Ascend C kernels
  have none of them, and ``try`` would let a kernel swallow the simulator's errors;
- the guards below decide, per type, which attributes exist. A DSL handle exposes its
  public API, a plain value (int, str, list, ...) its methods except ``str.format`` and
  ``format_map`` (their field syntax walks attributes), ``math`` its public functions, and
  a class the kernel defined its own members. Everything else (functions, frames,
  generators, modules, numpy objects) has no readable attribute at all: an allow-list, not
  a deny-list, so an attribute Python adds in a later version is refused by default.
- no ``id``, ``type``, ``vars``, ``dir``, ``getattr``, ``globals``, ``open``, ``eval``...: the
  builtins are an allow-list too. A class statement may not derive from a DSL class (or
  any class the kernel did not define, ``object`` aside).

The DSL's own handles (`sage.npu.ascendc`) hold no reference to simulator state either:
that is the second layer, in ``sage/npu/ascendc/handles.py``.
"""

from __future__ import annotations

import ast
import enum
import json
import math
import operator
import re
import sys
import types
import unicodedata  # noqa: F401 - see below
from typing import Any, Callable

import numpy as np
from RestrictedPython import compile_restricted_exec
from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence
from RestrictedPython.transformer import RestrictingNodeTransformer

from sage.npu.errors import KernelRuntimeError, KernelSyntaxError, SandboxError
from sage.npu import masked_if
from sage.npu.sim import masks, tries
from sage.npu.sim.lanes import lane_isinstance, lane_max, lane_min, lane_range, per_lane_call

DSL_MODULE = "sage.npu.ascendc"
MAX_SOURCE_BYTES = 256 * 1024        # a kernel file is a few KB; a larger one is refused unread
MAX_PRINT_BYTES = 64 * 1024          # what a kernel's print()/printf() may leave, in all

_NO_STATEMENT = {
    "Try": "try/except is not allowed in a kernel (Ascend C kernels have no exceptions; "
           "a simulator error ends the run)",
    "TryStar": "try/except* is not allowed in a kernel",
    "With": "`with` is not allowed in a kernel",
    "Yield": "generators (yield) are not allowed in a kernel",
    "YieldFrom": "generators (yield from) are not allowed in a kernel",
    "Global": "`global` is not allowed in a kernel: keep state on `self`",
    "Nonlocal": "`nonlocal` is not allowed in a kernel: keep state on `self`",
}


class KernelPolicy(RestrictingNodeTransformer):
    """RestrictedPython's transformer with a kernel file's stricter rules (see the module doc)."""

    def check_name(self, node, name, allow_magic_methods: bool = False) -> None:
        # Never the magic-method exception: `def __init__` in a kernel class is refused too.
        super().check_name(node, name, allow_magic_methods=False)

    def visit_keyword(self, node: ast.keyword):
        if node.arg is not None:
            self.check_name(node, node.arg)
        return super().visit_keyword(node)

    def visit_Import(self, node: ast.Import):
        for alias in node.names:
            if alias.name != "math":
                self.error(node, f"import of '{alias.name}' is not allowed: a kernel file may only use "
                                 f"`from {DSL_MODULE} import *` and `import math`")
            if alias.asname:
                self.check_name(node, alias.asname)
        return self.node_contents_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom):
        if node.level != 0 or node.module not in (DSL_MODULE, "math"):
            where = "." * node.level + (node.module or "")
            self.error(node, f"import from '{where}' is not allowed: a kernel file may only use "
                             f"`from {DSL_MODULE} import *` and `import math`")
            return node
        public = dsl_names() if node.module == DSL_MODULE else MATH_NAMES
        for alias in node.names:
            if alias.name == "*" and node.module == DSL_MODULE:
                continue
            if alias.name not in public:
                self.error(node, f"'{alias.name}' is not part of {node.module} as a kernel sees it")
            if alias.asname:
                self.check_name(node, alias.asname)
        return self.node_contents_visit(node)

    def visit_Name(self, node: ast.Name):
        if node.id == "printed":
            self.error(node, "`printed` is not available in a kernel: what a kernel prints cannot be read back "
                             "(on the chip it goes to the host, not to the kernel)")
            return node
        return super().visit_Name(node)

    def visit_Compare(self, node: ast.Compare):
        # Identity says which objects the interpreter shares, not what a value is: blocks run as
        # one lane group share objects that blocks run alone do not (sage.npu.sim.lanes), and a
        # kernel must not be able to tell the two apart. `is None` asks only about a value.
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            if isinstance(op, (ast.Is, ast.IsNot)) and not any(
                    isinstance(x, ast.Constant) and x.value is None for x in operands[i:i + 2]):
                self.error(node, "`is` / `is not` may only compare with None in a kernel: use == to compare values")
        return self.node_contents_visit(node)

    def visit_If(self, node: ast.If):
        # an `if` whose arms are only calls may run both arms under lane masks (sage/npu/masked_if.py)
        maskable = masked_if.eligible(node)
        new = self.node_contents_visit(node)
        return masked_if.rewrite(node, new) if maskable else new

    def visit_ClassDef(self, node: ast.ClassDef):
        for kw in node.keywords:
            self.error(node, f"class keyword '{kw.arg}' is not allowed in a kernel")
        new = super().visit_ClassDef(node)
        # RestrictedPython rebuilds the class statement from a template: give it the original
        # line, so an error raised while the class is created names the kernel's line.
        for part in (new, *new.keywords, *(n for kw in new.keywords for n in ast.walk(kw.value))):
            ast.copy_location(part, node)
        return new


for _name, _why in _NO_STATEMENT.items():
    def _refuse(self, node, _why=_why):
        self.error(node, _why)
        return node
    setattr(KernelPolicy, f"visit_{_name}", _refuse)


def dsl_names() -> frozenset[str]:
    import sage.npu.ascendc as dsl

    return frozenset(dsl.__all__)


MATH_NAMES = frozenset(n for n in dir(math) if not n.startswith("_"))
# The `math` a kernel imports: the module's constants, and its functions per lane when given a
# lane group's values (sage.npu.sim.lanes.per_lane_call), so a block's own scalar math keeps
# the group together.
KERNEL_MATH = types.ModuleType("math", math.__doc__)
for _n in MATH_NAMES:
    _v = getattr(math, _n)
    setattr(KERNEL_MATH, _n, per_lane_call(_v) if callable(_v) else _v)
del _n, _v


def compile_kernel(source: str, filename: str = "kernel.py") -> types.CodeType:
    """Restricted byte code of a kernel file: SandboxError (with the line) for anything the
    language refuses, KernelSyntaxError (the line quoted, a caret under the column) for a syntax error."""
    if not isinstance(source, str) or len(source.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        raise SandboxError(f"the kernel file is larger than {MAX_SOURCE_BYTES // 1024} KB")
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise _syntax_error(exc, source) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise SandboxError(f"the kernel file cannot be parsed: {type(exc).__name__}", line=None) from None
    try:
        result = compile_restricted_exec(tree, filename=filename, policy=KernelPolicy)
    except (RecursionError, MemoryError) as exc:
        raise SandboxError(f"the kernel file is nested too deeply to compile ({type(exc).__name__})") from None
    except SyntaxError as exc:
        raise _syntax_error(exc, source) from None
    if result.errors or result.code is None:
        first = result.errors[0] if result.errors else "the kernel file was refused"
        match = _ERROR_LINE.match(first)
        if match:
            raise SandboxError(match.group(2), line=int(match.group(1)) if match.group(1) != "None" else None)
        raise SandboxError(first)
    return result.code


_ERROR_LINE = re.compile(r"Line (\d+|None): (.*)", re.S)
_QUOTED_CHARS = 160     # of the offending line, around the column: a minified kernel has very long lines


def _syntax_error(exc: SyntaxError, source: str) -> KernelSyntaxError:
    """"expected ':' at line 3, column 22:" then the line and a caret under the column, tabs
    expanded so that the caret stands under what it points at."""
    line_no, column = exc.lineno, exc.offset
    lines = source.splitlines()
    if line_no is None or not 1 <= line_no <= len(lines):
        return KernelSyntaxError(exc.msg, line=line_no)
    text = lines[line_no - 1]
    if column is None:
        return KernelSyntaxError(f"{exc.msg} at line {line_no}:\n{text[:_QUOTED_CHARS]}", line=line_no)
    start = max(0, min(column - 1, len(text)) - _QUOTED_CHARS // 2)
    shown = text[start:start + _QUOTED_CHARS]
    at = len(text[start:column - 1].expandtabs())
    width = 1
    if exc.end_lineno == line_no and exc.end_offset and exc.end_offset > column:
        width = min(exc.end_offset - column, len(shown) - at) or 1
    return KernelSyntaxError(f"{exc.msg} at line {line_no}, column {column}:\n{shown.expandtabs()}\n"
                             f"{' ' * at}{'^' * width}", line=line_no)
# The parser imports unicodedata on first sight of a non-ASCII identifier (to NFKC-normalise
# it). In the sandboxed child that import comes after the uid drop, when the standard
# library may be unreadable: importing it here, in the zygote, keeps `α = 0.5` a name
# instead of an internal error (ModuleNotFoundError inside ast.parse).


# ---------------------------------------------------------------------------------------------
# The kernel's namespace: guards and builtins.

_VALUE_TYPES = (int, float, bool, complex, str, bytes, tuple, list, dict, set, frozenset, range, slice,
                type(None))
_VALUE_DENY = frozenset({"format", "format_map"})
# The methods that change their list, dict or set: each read of one is checked (a try of a launch
# that may be thrown away may not change a container made before it: sage/npu/sim/tries.py).
_MUTATORS = {list: frozenset({"append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse"}),
             dict: frozenset({"update", "setdefault", "pop", "popitem", "clear"}),
             set: frozenset({"add", "discard", "remove", "pop", "clear", "update", "intersection_update",
                             "difference_update", "symmetric_difference_update"})}
_VALUE_ATTRS = {t: frozenset(n for n in dir(t) if not n.startswith("_")) - _VALUE_DENY - _MUTATORS.get(t, frozenset())
                for t in _VALUE_TYPES}
_DTYPE_ATTRS = frozenset({"itemsize", "name"})
_ITEM_TYPES = (list, tuple, dict, str, range, bytes)
_WRITE_TYPES = (list, dict, set)


class KernelNamespace:
    """The guards and builtins of one kernel run; it remembers the classes the kernel defined."""

    def __init__(self, printer: PrintSink):
        global _active_sink
        self.classes: set[type] = set()
        self.printer = printer
        # The DSL's printf/DumpTensor write to this run's buffer too (a process runs one kernel file at a time).
        _active_sink = printer
        self.attrs: dict[type, frozenset[str]] = dict(_VALUE_ATTRS)
        from sage.npu.ascendc import handles

        self.attrs.update(handles.public_attributes())
        self.writable = handles.writable_types()
        # A parameter struct's fields are readable, as in Ascend C (its methods are not).
        self.attrs.update({t: frozenset(t.__dataclass_fields__) for t in self.writable})
        self.item_types = handles.subscriptable_types() + _ITEM_TYPES
        self.enum_members: dict[tuple[type, str], Any] = {}  # (DSL enum class, member name) -> member

    # -- guards -----------------------------------------------------------------------------
    def guarded_getattr(self):
        """The `_getattr_` of the kernel's namespace: a closure over the allow-lists (every attribute
        read of a kernel goes through it, so the common cases are a dict lookup and a set test)."""
        attrs, classes, slow, members = self.attrs, self.classes, self._slow_getattr, self.enum_members

        def _getattr_(obj: Any, name: str, default: Any = None) -> Any:
            t = type(obj)
            allowed = attrs.get(t)
            if allowed is not None and name in allowed:
                return getattr(obj, name)
            if t in classes and name[0] != "_":
                return getattr(obj, name)
            if t is enum.EnumMeta:  # HardEvent.V_S and friends: members the slow path has allowed before
                member = members.get((obj, name))
                if member is not None:
                    return member
            return slow(obj, t, name)
        return _getattr_

    def _slow_getattr(self, obj: Any, t: type, name: str) -> Any:
        if name.startswith("_"):
            raise SandboxError(f"the attribute '.{name}' is not allowed in a kernel")
        if self._is_own_class(obj):  # the kernel's own class: its own members only, not type's
            for klass in obj.__mro__[:-1]:
                if name in klass.__dict__:
                    return getattr(obj, name)
            raise KernelRuntimeError(f"AttributeError: class {obj.__name__} has no attribute '{name}'")
        if isinstance(obj, np.dtype) and name in _DTYPE_ATTRS:
            return getattr(obj, name)
        if isinstance(obj, enum.Enum) and name in ("name", "value") and _is_dsl(t):
            return getattr(obj, name)
        if isinstance(obj, enum.EnumMeta) and _is_dsl(obj) and name in obj.__members__:
            # members never change: the fast path answers this read from now on (isinstance with
            # np.dtype above is slow for a class object: it made HardEvent.V_S cost a microsecond)
            member = self.enum_members[(obj, name)] = obj[name]
            return member
        if obj is KERNEL_MATH and name in MATH_NAMES:
            return getattr(KERNEL_MATH, name)
        if name in _MUTATORS.get(t, ()):
            tries.check_change(obj)
            return getattr(obj, name)
        what = getattr(t, "__name__", "object")
        raise SandboxError(f"reading '.{name}' of a {what} is not allowed in a kernel "
                           "(kernels reach DSL handles, plain values and their own classes only)")

    def write(self, obj: Any) -> Any:
        t = type(obj)
        if t in self.classes or t in _WRITE_TYPES or t in self.writable or self._is_own_class(obj):
            if tries._frozen is not None and id(obj) in tries._frozen:
                tries.check_change(obj)
            return obj
        raise SandboxError(f"a kernel may not change a {getattr(t, '__name__', 'object')} "
                           "(DSL handles are immutable; keep state on your own objects)")

    def _is_own_class(self, obj: Any) -> bool:
        # Only a type can be one of the kernel's classes; asking a set about anything else
        # would hash it, and lists, dicts and parameter structs are unhashable.
        return isinstance(obj, type) and obj in self.classes

    def guarded_getitem(self):
        """The `_getitem_` of the kernel's namespace (every ``x[i]`` of a kernel: a tensor view, a
        list item): a closure, so the common case, an object of one of the very classes allowed,
        is one set test; a subclass of one of them is asked of isinstance."""
        item_types = self.item_types
        exact = frozenset(item_types)

        def _getitem_(obj: Any, key: Any) -> Any:
            if type(obj) in exact or isinstance(obj, item_types):
                return obj[key]
            raise SandboxError(f"indexing a {getattr(type(obj), '__name__', 'object')} is not allowed in a kernel")
        return _getitem_

    def build_class(self, name: str, bases: tuple, ns: dict) -> type:
        for base in bases:
            if base is not object and base not in self.classes:
                raise SandboxError(f"class {name} may not derive from {getattr(base, '__name__', base)!s}: "
                                   "a kernel's classes derive only from its own classes")
        for key in ns:
            if key.startswith("_") and key not in ("__module__", "__qualname__", "__doc__"):
                raise SandboxError(f"class {name} may not define '{key}'")
        klass = type(name, bases or (object,), ns)
        self.classes.add(klass)
        return klass

    def import_(self, name: str, globals=None, locals=None, fromlist=(), level: int = 0):
        if level == 0 and name == "math":
            return KERNEL_MATH
        if level == 0 and name == DSL_MODULE and fromlist:
            return sys.modules[DSL_MODULE]
        raise SandboxError(f"import of '{name}' is not allowed in a kernel")

    # -- the namespace ---------------------------------------------------------------------
    def globals(self, filename: str) -> dict:
        return {
            "__name__": "sage_kernel",
            "__file__": filename,
            "__builtins__": self.builtins(),
            "__metaclass__": self.build_class,
            "_getattr_": self.guarded_getattr(),
            "_arms_": masks.arms,
            "_callee_": masks.callee,
            "_write_": self.write,
            "_getitem_": self.guarded_getitem(),
            "_getiter_": iter,
            "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
            "_unpack_sequence_": guarded_unpack_sequence,
            "_apply_": _apply,
            "_inplacevar_": _inplacevar,
            "_print_": self.printer.collector,
        }

    def builtins(self) -> dict:
        import builtins as b

        safe = {n: getattr(b, n) for n in _BUILTINS}
        # isinstance and range themselves, for a value that differs per lane of a lane group as
        # each lane alone would see it (sage.npu.sim.lanes)
        safe["isinstance"], safe["range"] = lane_isinstance, lane_range
        safe["min"], safe["max"] = lane_min, lane_max
        safe["__build_class__"] = b.__build_class__
        safe["__import__"] = self.import_
        return safe


_BUILTINS = (
    "abs", "all", "any", "bool", "chr", "dict", "divmod", "enumerate", "filter", "float", "frozenset",
    "hex", "int", "isinstance", "iter", "len", "list", "map", "max", "min", "next", "oct", "ord", "pow",
    "range", "repr", "reversed", "round", "set", "slice", "sorted", "str", "sum", "tuple", "zip", "object",
    "True", "False", "None",
    "Exception", "ValueError", "TypeError", "RuntimeError", "ArithmeticError", "ZeroDivisionError",
    "IndexError", "KeyError", "AssertionError", "NotImplementedError",
)

_INPLACE = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
            "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "<<=": operator.ilshift,
            ">>=": operator.irshift, "&=": operator.iand, "^=": operator.ixor, "|=": operator.ior,
            "@=": operator.imatmul}


def _inplacevar(op: str, x: Any, y: Any) -> Any:
    fn = _INPLACE.get(op)
    if fn is None:
        raise SandboxError(f"operator {op} is not allowed in a kernel")
    if x.__class__ in _WRITE_TYPES:  # `xs += ys` changes the list itself
        tries.check_change(x)
    return fn(x, y)


def _apply(f, *args, **kwargs):
    return f(*args, **kwargs)


def _is_dsl(obj: Any) -> bool:
    return getattr(obj, "__module__", "").startswith(DSL_MODULE)


_active_sink: PrintSink | None = None
TRUNCATED = "\n[output truncated]"


def active_printer() -> PrintSink | None:
    """The print buffer of the latest kernel namespace made in this process: the run in
    progress, whose DSL calls (printf, DumpTensor) write where its print() does."""
    return _active_sink


class PrintSink:
    """Where a kernel's print() goes: a bounded buffer returned with the result, never stdout.

    The bound is on the text as the reply carries it (JSON, where a control character or a
    non-ASCII one takes up to 12 bytes), so what a kernel prints can never push the reply
    over its cap and cost the kernel its verdict.
    """

    def __init__(self, limit: int = MAX_PRINT_BYTES):
        self.limit = limit
        self.parts: list[tuple[tuple, int, str]] = []   # (order key, arrival, text)
        self.size = 0
        self.truncated = False
        # Blocks run in a random order (Session.block_order): the text is shown ordered by
        # this key (host phase, block, sub-block), so it reads the same from run to run.
        self.order: Callable[[], tuple] = lambda: ()

    def write(self, text: str) -> None:
        room = self.limit - self.size
        if room <= 0:
            self.truncated = self.truncated or bool(text)
            return
        kept = text[:room]  # every character costs at least one byte
        cost = _json_size(kept)
        while cost > room:
            kept = kept[:max(0, len(kept) * room // cost - 1)]
            cost = _json_size(kept)
        self.truncated = self.truncated or len(kept) < len(text)
        self.parts.append((self.order(), len(self.parts), kept))
        self.size += cost

    def text(self) -> str:
        """What was printed, at most `limit` characters: when cut, the marker replaces the end,
        so whatever carries the text at that size (the sandbox's reply) keeps the marker."""
        body = "".join(text for _, _, text in sorted(self.parts))
        return body[:self.limit - len(TRUNCATED)] + TRUNCATED if self.truncated else body

    def collector(self, _getattr_=None) -> _Collector:
        return _Collector(self)


def _json_size(text: str) -> int:
    return len(json.dumps(text)) - 2


class _Collector:
    """RestrictedPython's print protocol (`_print_(_getattr_)` then `_print._call_print(...)`)."""

    def __init__(self, sink: PrintSink):
        self.sink = sink

    def _call_print(self, *objects, sep: str = " ", end: str = "\n", **_ignored) -> None:
        self.sink.write(str(sep).join(str(o) for o in objects) + str(end))

    def __call__(self) -> str:
        # (`printed`; the policy refuses the name, this refuses any other way to it)
        raise SandboxError("what a kernel prints cannot be read back")
