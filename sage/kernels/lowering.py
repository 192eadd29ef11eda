"""Lowering elementwise chains to DSL vector instructions.

`Lowerer` walks a chain (post-order, shared sub-expressions computed once) and writes the
body of a `Compute` method: one line per vector instruction, from each op's recipe in
`vector_ops.VECTOR_OPS`. Values live in UB buffers whose length depends on their broadcast
kind (full tile, one row of the tile, one value per row); scalars and constants are Python
values on the scalar unit. The lowering picks the
cheapest instruction form: a constant operand uses the scalar instruction (`Adds`, `Muls`),
a row operand is applied row by row, a column operand is read once per row with `GetValue`.

With `repeat_form` (the compiler's tile programs) broadcasts use the mask/repeat forms
instead: one instruction per 256 B of a row covers every row of the tile (a row operand
with repeat stride 0, a column operand spread to one 32 B block per row by `Brcb` and read
with block stride 0), and `Reduce` nodes fold each row's columns with repeat-form adds
down to one repeat, then `WholeReduce*` them: no scalar reads, no per-row loops. That code
expects the kernel to define `LANES` (elements per 256 B repeat) and `EPB` (elements per
32 B block) of the compute dtype, the valid columns `nc` and the row pitch `s`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from sage.kernels.chain import Const, Expr, Inp, Kind, Op, Reduce
from sage.kernels.repeat_cost import FormChoice
from sage.kernels.repeat_rows import PITCH, broadcast_lines, reduce_lines
from sage.kernels.symbolic import active, is_sym
from sage.kernels.vector_ops import (
    Count, Operand, Param, Recipe, Reg, ScalarOf, Temp, VectorOp, inplace_safe, select_recipe, temps_of, vector_op,
)


@dataclass
class Val:
    kind: Kind
    ref: str                 # buffer variable (full/row/col) or a scalar Python expression
    temp: bool = False       # a temp buffer of the lowering (freed when its last use is done)


@dataclass
class Lowerer:
    """Emits instruction lines; `count` maps a kind to the element-count expression."""

    kinds: list[Kind]
    inputs: dict[int, Val]
    count: dict[str, str] = field(default_factory=lambda: {"full": "n", "row": "nc", "col": "nr"})
    row_stride: str = "s"
    lines: list[str] = field(default_factory=list)
    depth: int = 0
    free: dict[str, list[str]] = field(default_factory=lambda: {"full": [], "row": [], "col": [], "brcb": []})
    made: dict[str, int] = field(default_factory=lambda: {"full": 0, "row": 0, "col": 0, "brcb": 0})
    scalars: int = 0
    uses_mask: bool = False  # a comparison or select ran: the kernel needs the mask buffer `mk`
    int_temp: bool = False   # floor ran: the kernel needs an int32 buffer `ti` of one tile
    dtype: str = "float32"   # the compute dtype (comparisons against scalars are typed by it)
    repeat_form: bool = False  # broadcasts and reductions in mask/repeat form (see the module doc)
    # which repeat form each broadcast and reduction takes (repeat_cost.py); None: the column form
    forms: FormChoice | None = None
    site_calls: int = 0        # instruction lines written by those sites
    dying: list[Val] = field(default_factory=list)   # operands of the op being lowered on their last use
    reduce_rows: bool = False  # the tile program reduces over rows itself (Reduce nodes are its roots)
    # segment operands (library/tile_seg.py): buffer -> (segment length, segments per row,
    # pitch between rows' values or 0); "full" values held as one value per segment
    segs: dict[str, tuple[int, int, int]] = field(default_factory=dict)

    # -- bookkeeping -------------------------------------------------------------------
    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def temp(self, kind: Kind) -> str:
        if self.free[kind]:
            return self.free[kind].pop()
        name = f"t{kind[0]}{self.made[kind]}"
        self.made[kind] += 1
        return name

    def release(self, v: Val) -> None:
        if v.temp:
            self.free[v.kind].append(v.ref)

    def scalar_var(self, expr: str) -> str:
        name = f"v{self.scalars}"
        self.scalars += 1
        self.emit(f"{name} = {expr}")
        return name

    # -- walking -----------------------------------------------------------------------
    def lower(self, root: Expr) -> Val:
        return self.lower_all([root])[0]

    def lower_all(self, roots: list[Expr]) -> list[Val]:
        """Several results of one program, sub-expressions shared (each computed once)."""
        if self.repeat_form:
            roots = [_strip_identity(r) for r in roots]
        roots = [_drop_integral_roundings(r) for r in roots]
        uses: dict[Expr, int] = {}
        for root in roots:
            self._count_uses(root, uses)
        memo: dict[Expr, Val] = {}
        return [self._eval(root, uses, memo) for root in roots]

    def _count_uses(self, e: Expr, uses: dict[Expr, int]) -> None:
        uses[e] = uses.get(e, 0) + 1
        if uses[e] == 1 and isinstance(e, Op):
            for a in e.args:
                self._count_uses(a, uses)
        elif uses[e] == 1 and isinstance(e, Reduce):
            self._count_uses(e.arg, uses)

    def _eval(self, e: Expr, uses: dict[Expr, int], memo: dict[Expr, Val]) -> Val:
        if e in memo:
            return memo[e]
        if isinstance(e, Inp):
            val = self.inputs[e.index]
        elif isinstance(e, Const):
            val = Val("scalar", literal(e.value))
        elif isinstance(e, Reduce):
            arg = self._eval(e.arg, uses, memo)
            self.dying = [arg] if self.repeat_form and arg.temp and uses[e.arg] == 1 else []
            val = self._reduce(e.kind, arg)
            self.dying = []
            uses[e.arg] -= 1
            if uses[e.arg] == 0:
                self.release(arg)
        else:
            args = [self._eval(a, uses, memo) for a in e.args]
            # operands on their last use may lend their buffer to the result (repeat form)
            self.dying = [v for a, v in zip(e.args, args) if self.repeat_form and v.temp and uses[a] == 1
                          and e.args.count(a) == 1]
            val = self._apply(e, args)
            self.dying = []
            for a_expr, a_val in zip(e.args, args):
                uses[a_expr] -= 1
                if uses[a_expr] == 0 and a_val.ref != val.ref:
                    self.release(a_val)
        memo[e] = val
        return val

    def _apply(self, e: Op, args: list[Val]) -> Val:
        if e.name == "colsel":
            return self._colsel(e, args)
        if any(a.ref in self.segs for a in args):
            return self._with_segs(e, args)
        v = vector_op(e.name)
        if v.arity == 3:
            return self._where(*args)
        if v.compare:
            return self._compare(v, args[0], args[1])
        if v.arity == 2:
            return self._binary(e, v, args[0], args[1])
        (x,) = args
        if x.kind == "scalar":
            if v.scalar is None:
                raise ValueError(f"op {e.name!r} on a scalar operand is not supported by the library")
            return Val("scalar", self.scalar_var(v.scalar.format(x=x.ref)))
        d = self._dest(x.kind) if inplace_safe(v.recipe) else self.temp(x.kind)
        self.run(v, e, x.kind, {"d": d, "x": x.ref})
        return Val(x.kind, d, temp=True)

    def _dest(self, kind: Kind) -> str:
        """A dying operand's buffer of this kind, else a fresh temp."""
        for v in self.dying:
            if v.kind == kind:
                return v.ref
        return self.temp(kind)

    # -- recipes -------------------------------------------------------------------------
    def run(self, v: VectorOp, node: Op, kind: Kind, regs: dict[str, str]) -> None:
        """Emits the op's recipe with its registers bound; the recipe's temps are taken
        from (and given back to) the pool of `kind`."""
        self.uses_mask = self.uses_mask or "mask" in v.needs
        self.int_temp = self.int_temp or "int" in v.needs
        recipe = select_recipe(v.recipe, node)
        temps = [self.temp(kind) for _ in range(temps_of(recipe))]
        self._steps(recipe, regs, temps, self.count[kind], self._padded(kind), node)
        self.free[kind] += temps

    def _steps(self, recipe: Recipe, regs: dict[str, str], temps: list[str], count: str, padded: str,
               node: Op | None, scalar: str = "") -> None:
        def text(o: Operand) -> str:
            if isinstance(o, Reg):
                return regs[o.name]
            if isinstance(o, Temp):
                return temps[o.index]
            if isinstance(o, Count):
                return padded if o.padded else count
            if isinstance(o, ScalarOf):
                return o.template.format(v=scalar)
            if isinstance(o, Param):
                if node is None:
                    raise ValueError(f"parameter {o.key!r} outside an op node")
                return literal(node.param(o.key, o.default))
            return o if isinstance(o, str) else literal(o)

        for instr, operands in recipe:
            self.emit(f"{instr}({', '.join(text(o) for o in operands)})")

    # -- comparisons and select ----------------------------------------------------------
    def _padded(self, kind: Kind) -> str:
        return {"full": "pn", "row": "pnc", "col": "pnr"}[kind]

    def _compare(self, v: VectorOp, a: Val, b: Val) -> Val:
        """1 where `a <op> b` holds, else 0: a bit mask, then a select of 1 over 0."""
        if a.kind == "scalar" and b.kind == "scalar":
            return Val("scalar", self.scalar_var(f"1.0 if ({a.ref}) {v.py} ({b.ref}) else 0.0"))
        self.uses_mask = True
        if a.kind == "scalar":
            a, b, v = b, a, vector_op(v.swapped)
        kind = _joint(a.kind, b.kind)
        pc = self._padded(kind)
        if b.kind == "scalar":
            self.emit(f"CompareScalar(mk, {a.ref}, {b.ref}, CMPMODE.{v.compare}, {pc})")
        else:
            a2, b2 = self._materialize(a, kind), self._materialize(b, kind)
            self.emit(f"Compare(mk, {a2.ref}, {b2.ref}, CMPMODE.{v.compare}, {pc})")
            for orig, m in ((a, a2), (b, b2)):
                if m is not orig:
                    self.release(m)
        d = self.temp(kind)
        c = self.count[kind]
        self.emit(f"Duplicate({d}, {self._one()}, {c})")
        self.emit(f"Select({d}, mk, {d}, {self._zero()}, SELMODE.VSEL_TENSOR_SCALAR_MODE, {c})")
        return Val(kind, d, temp=True)

    def _one(self) -> str:
        return "1" if self.dtype == "int32" else "1.0"

    def _zero(self) -> str:
        return "0" if self.dtype == "int32" else "0.0"

    def _where(self, cond: Val, a: Val, b: Val) -> Val:
        if cond.kind == a.kind == b.kind == "scalar":      # a plain choice between two numbers
            return Val("scalar", f"({a.ref} if {cond.ref} != 0 else {b.ref})")
        self.uses_mask = True
        kind = _joint(_joint(cond.kind, a.kind), b.kind)
        cond2 = self._materialize(cond, kind)
        self.emit(f"CompareScalar(mk, {cond2.ref}, {self._zero()}, CMPMODE.NE, {self._padded(kind)})")
        if cond2 is not cond:
            self.release(cond2)
        d = self.temp(kind)
        c = self.count[kind]
        if a.kind == "scalar" and b.kind == "scalar":
            self.emit(f"Duplicate({d}, {a.ref}, {c})")
            self.emit(f"Select({d}, mk, {d}, {b.ref}, SELMODE.VSEL_TENSOR_SCALAR_MODE, {c})")
        elif b.kind == "scalar" or a.kind == "scalar":
            # Select takes its scalar second: a scalar `a` is written first, then the tensor
            # `b` where the mask is not set.
            tensor, scalar = (a, b) if b.kind == "scalar" else (b, a)
            t2 = self._materialize(tensor, kind)
            if a.kind == "scalar":
                self.emit(f"Duplicate({d}, {a.ref}, {c})")
                self.emit(f"Select({d}, mk, {d}, {t2.ref}, SELMODE.VSEL_TENSOR_TENSOR_MODE, {c})")
            else:
                self.emit(f"Select({d}, mk, {t2.ref}, {scalar.ref}, SELMODE.VSEL_TENSOR_SCALAR_MODE, {c})")
            if t2 is not tensor:
                self.release(t2)
        else:
            a2, b2 = self._materialize(a, kind), self._materialize(b, kind)
            self.emit(f"Select({d}, mk, {a2.ref}, {b2.ref}, SELMODE.VSEL_TENSOR_TENSOR_MODE, {c})")
            for orig, m in ((a, a2), (b, b2)):
                if m is not orig:
                    self.release(m)
        return Val(kind, d, temp=True)

    def _colsel(self, e: Op, args: list[Val]) -> Val:
        """colsel(p0, p1, ...; c0, c1, ...): piece k over columns [c_k, c_k+1), each piece's
        columns copied into the result, every row at once (repeat form; the tile holds whole
        rows and the cuts start on 32 B blocks, see agent/compiler/colsel.py)."""
        if not self.repeat_form:
            raise ValueError("colsel needs the repeat-form lowering (tile programs)")
        kind: Kind = "row" if all(a.kind in ("row", "scalar") for a in args) else "full"
        rows = "nr" if kind == "full" else "1"
        d = self.temp(kind)
        for k, x in enumerate(args):
            lo, hi = int(e.param(f"c{k}")), int(e.param(f"c{k + 1}"))
            x2 = self._materialize(x, kind)
            self.emit(f"for k in range(0, {hi - lo}, LANES):")
            self.emit(f"    Adds({d}[{lo} + k], {x2.ref}[{lo} + k], {self._zero()}, min(LANES, {hi - lo} - k), {rows}, "
                      f"UnaryRepeatParams(1, 1, {PITCH}, {PITCH}))")
            if x2 is not x:
                self.release(x2)
        return Val(kind, d, temp=True)

    # -- segment operands ---------------------------------------------------------------
    def _with_segs(self, e: Op, args: list[Val]) -> Val:
        """A binary op of a full value and a segment operand: the op's scalar form on each
        segment of each row (the value read by the scalar unit); anything else on the
        segment operand spread to a full temp first."""
        v = vector_op(e.name)
        if v.arity == 2 and v.vector is not None and (args[0].ref in self.segs) != (args[1].ref in self.segs):
            seg, other = (args[0], args[1]) if args[0].ref in self.segs else (args[1], args[0])
            if other.kind == "full" and (v.scalar_left if seg is args[0] else v.scalar_right) is not None:
                d = self._dest("full")
                self._segments(seg.ref, lambda at, value, n: self._with_scalar(
                    v, f"{d}[{at}]", f"{other.ref}[{at}]", value, n, scalar_left=seg is args[0], at=at))
                return Val("full", d, temp=True)
        spread = [self._spread_seg(a) if a.ref in self.segs else a for a in args]
        val = self._apply(e, spread)
        for a, b in zip(args, spread):
            if b is not a and b.ref != val.ref:
                self.release(b)
        return val

    def _spread_seg(self, x: Val) -> Val:
        d = self.temp("full")
        self._segments(x.ref, lambda at, value, n: self.emit(f"Duplicate({d}[{at}], {value}, {n})"))
        return Val("full", d, temp=True)

    def _segments(self, ref: str, body) -> None:
        """`body(element offset, scalar value, count)` once per segment of every row."""
        length, nseg, pitch = self.segs[ref]
        # the values were written by V (their conversion): sync before the scalar reads
        self.emit("SetFlag(HardEvent.V_S, 0)")
        self.emit("WaitFlag(HardEvent.V_S, 0)")
        self.emit("for r in range(nr):")
        self.emit(f"    for k in range({nseg}):")
        self.depth += 2
        value = self.scalar_var(f"{ref}.GetValue(r * {pitch} + k)")
        body(f"r * {self.row_stride} + k * {length}", value, str(length))
        self.depth -= 2
        # later vector writes to the values' buffer must wait for these scalar reads
        self.emit("SetFlag(HardEvent.S_V, 0)")
        self.emit("WaitFlag(HardEvent.S_V, 0)")

    # -- binary ------------------------------------------------------------------------
    def _binary(self, e: Op, v: VectorOp, a: Val, b: Val) -> Val:
        if a.kind == "scalar" and b.kind == "scalar":
            return Val("scalar", self.scalar_var(v.scalar.format(a=a.ref, b=b.ref)))
        out_kind = _joint(a.kind, b.kind)
        if v.vector is None:          # composite binaries need equal kinds
            a2, b2 = self._materialize(a, out_kind), self._materialize(b, out_kind)
            d = self.temp(out_kind)
            self.run(v, e, out_kind, {"d": d, "a": a2.ref, "b": b2.ref})
            for orig, m in ((a, a2), (b, b2)):
                if m is not orig:
                    self.release(m)
            return Val(out_kind, d, temp=True)
        d = self._dest(out_kind)
        c = self.count[out_kind]
        if b.kind == "scalar":
            self._with_scalar(v, d, a.ref, b.ref, c, scalar_left=False, kind=out_kind)
        elif a.kind == "scalar":
            self._with_scalar(v, d, b.ref, a.ref, c, scalar_left=True, kind=out_kind)
        elif a.kind == b.kind:
            self.emit(f"{v.vector}({d}, {a.ref}, {b.ref}, {c})")
        else:
            self._mixed(v, d, a, b)
        return Val(out_kind, d, temp=True)

    def _mixed(self, v: VectorOp, d: str, a: Val, b: Val) -> None:
        """Different vector kinds: applied one output row at a time."""
        if self.repeat_form:
            self._mixed_repeat(v, d, a, b)
            return
        s = self.row_stride
        if "col" in (a.kind, b.kind):
            # the column values were written by V (a cast or an op): sync before reading them
            self.emit("SetFlag(HardEvent.V_S, 0)")
            self.emit("WaitFlag(HardEvent.V_S, 0)")
        self.emit("for r in range(nr):")
        self.depth += 1
        row = {x.ref: (f"{x.ref}[r * {s}]" if x.kind == "full" else x.ref) for x in (a, b) if x.kind != "col"}
        if a.kind == "col" or b.kind == "col":
            col, other = (a, b) if a.kind == "col" else (b, a)
            value = self.scalar_var(f"{col.ref}.GetValue(r)")
            self._with_scalar(v, f"{d}[r * {s}]", row[other.ref], value, "nc", scalar_left=col is a, at=f"r * {s}")
            self.depth -= 1
            # later vector writes to the column buffer must wait for these scalar reads
            self.emit("SetFlag(HardEvent.S_V, 0)")
            self.emit("WaitFlag(HardEvent.S_V, 0)")
            return
        self.emit(f"{v.vector}({d}[r * {s}], {row[a.ref]}, {row[b.ref]}, nc)")
        self.depth -= 1

    def _with_scalar(self, v: VectorOp, d: str, x: str, value: str, c: str, *, scalar_left: bool,
                     kind: Kind = "full", at: str = "") -> None:
        """The op's scalar form on `c` elements of `x` into `d`; its temps are of `kind`,
        taken at offset `at` (a row's or a segment's place in the tile)."""
        recipe = v.scalar_left if scalar_left else v.scalar_right
        if recipe is None:
            raise ValueError(f"no scalar form for {v.name!r}")
        temps = [self.temp(kind) for _ in range(temps_of(recipe))]
        self._steps(recipe, {"d": d, "x": x}, [f"{t}[{at}]" if at else t for t in temps], c, c, None, value)
        self.free[kind] += temps

    def _materialize(self, v: Val, kind: Kind) -> Val:
        """Broadcast a value to `kind` in a fresh temp (for composite binaries)."""
        if v.kind == kind:
            return v
        d = self.temp(kind)
        if self.repeat_form and kind == "full" and v.kind in ("row", "col"):
            src = self._spread(v) if v.kind == "col" else v
            self._columns("Adds", d, [(src.ref, "brcb" if v.kind == "col" else "row")], "0")
            if src is not v:
                self.release(src)
            return Val(kind, d, temp=True)
        if v.kind == "scalar":
            self.emit(f"Duplicate({d}, {v.ref}, {self.count[kind]})")
        elif v.kind == "row":
            self.emit("for r in range(nr):")
            self.emit(f"    Adds({d}[r * {self.row_stride}], {v.ref}, 0, nc)")
        else:
            self.emit("SetFlag(HardEvent.V_S, 0)")
            self.emit("WaitFlag(HardEvent.V_S, 0)")
            self.emit("for r in range(nr):")
            self.emit(f"    Duplicate({d}[r * {self.row_stride}], {v.ref}.GetValue(r), nc)")
            self.emit("SetFlag(HardEvent.S_V, 0)")
            self.emit("WaitFlag(HardEvent.S_V, 0)")
        return Val(kind, d, temp=True)


    # -- repeat forms (tile programs) ------------------------------------------------------
    def _columns(self, op: str, dst: str, srcs: list[tuple[str, str]], scalar: str | None = None) -> None:
        """`op` into full `dst` over the tile, each source (ref, kind "full"/"row"/"brcb"):
        once per 256 B chunk of the columns over every row, or once per row over its chunks
        when that costs less (repeat_rows.py, repeat_cost.py)."""
        form = self.forms.broadcast(op) if self.forms is not None else "cols"
        self._site(broadcast_lines(op, dst, srcs, scalar, form))

    def _site(self, lines: list[str]) -> None:
        """The lines of one repeat-form site (their instructions are counted by `forms`)."""
        self.site_calls += instruction_lines(lines)
        for line in lines:
            self.emit(line)

    def _spread(self, v: Val) -> Val:
        """A column value (one per row) with each row's value filling one 32 B block."""
        t = Val("brcb", self.temp("brcb"), temp=True)
        self.emit(f"Brcb({t.ref}, {v.ref}, (nr + 7) // 8, BrcbRepeatParams(1, 8))")
        return t

    def _mixed_repeat(self, v: VectorOp, d: str, a: Val, b: Val) -> None:
        if "col" in (a.kind, b.kind) and "row" in (a.kind, b.kind):
            full = self._materialize(a if a.kind == "row" else b, "full")
            a, b = (full, b) if a.kind == "row" else (a, full)
            self._mixed_repeat(v, d, a, b)
            self.release(full)
            return
        srcs: list[tuple[str, str]] = []
        spread: list[Val] = []
        for x in (a, b):
            if x.kind == "col":
                spread.append(self._spread(x))
                srcs.append((spread[-1].ref, "brcb"))
            else:
                srcs.append((x.ref, x.kind))
        self._columns(v.vector, d, srcs)
        for t in spread:
            self.release(t)

    def _reduce(self, kind: str, x: Val) -> Val:
        """Each row's first `nc` columns reduced to one value: fold 256 B chunks into the
        first (repeat form, all rows at once), then one WholeReduce over the rows."""
        if not self.repeat_form:
            raise ValueError("reductions need the repeat-form lowering (tile programs)")
        fold, whole = {"sum": ("Add", "WholeReduceSum"), "max": ("Max", "WholeReduceMax"),
                       "min": ("Min", "WholeReduceMin")}[kind]
        if x.kind != "full":
            x = self._materialize(x, "full")
        order = "" if kind == "sum" else ", ReduceOrder.ORDER_ONLY_VALUE"
        c = self.temp("col")
        # A dying operand folds in place (its first LANES columns); else into a fresh temp.
        acc = x.ref if any(d.ref == x.ref for d in self.dying) else self.temp("full")
        form = self.forms.reduce(whole, fold, acc != x.ref) if self.forms is not None else "cols"
        self._site(reduce_lines(whole, fold, c, x.ref, acc, order, form))
        if acc != x.ref:
            self.free["full"].append(acc)
        return Val("col", c, temp=True)


# The two rewrites below are pure functions of immutable trees, cached: a traced program is
# a DAG written out as a tree, so a shared sub-expression would be rewritten once per path
# to it, and the search lowers the same program once per schedule it estimates.
@functools.lru_cache(maxsize=1 << 16)
def _strip_identity(e: Expr) -> Expr:
    """Copies and casts removed: a tile program converts where it loads and stores."""
    if isinstance(e, Op):
        if e.name == "identity":
            return _strip_identity(e.args[0])
        return Op(e.name, tuple(_strip_identity(a) for a in e.args), e.params)
    if isinstance(e, Reduce):
        return Reduce(e.kind, _strip_identity(e.arg))
    return e


ROUNDINGS = ("round", "trunc", "floor", "ceil")
# ops that keep integer values integers (in float arithmetic too: a float past 2^24 is an integer)
INTEGRAL_PRESERVING = ("clamp", "neg", "abs", "relu", "maximum", "minimum", "add", "sub", "mul")


@functools.lru_cache(maxsize=1 << 16)
def _drop_integral_roundings(e: Expr) -> Expr:
    """A rounding of a value that is already an integer removed: `x.round().to(torch.int8)`
    traces as trunc(round(x)), and the trunc would cost as many vector instructions again
    (a cast each way, a magnitude guard and a select) for the same values."""
    if isinstance(e, Op):
        args = tuple(_drop_integral_roundings(a) for a in e.args)
        if e.name in ROUNDINGS and _integral(args[0]):
            return args[0]
        return Op(e.name, args, e.params)
    if isinstance(e, Reduce):
        return Reduce(e.kind, _drop_integral_roundings(e.arg))
    return e


def _integral(e: Expr) -> bool:
    if isinstance(e, Const):
        return math.isfinite(e.value) and float(e.value).is_integer()
    if not isinstance(e, Op):
        return False
    if e.name in ROUNDINGS:
        return True
    return e.name in INTEGRAL_PRESERVING and all(_integral(a) for a in e.args) and \
        all(float(v).is_integer() for _, v in e.params)


def instruction_lines(lines: list[str]) -> int:
    """Lines of kernel text that issue an instruction: calls that are not loop or branch heads."""
    return sum(1 for ln in lines if "(" in ln and not ln.lstrip().startswith(("for", "if", "else", "elif", "while")))


def literal(v: float | int) -> str:
    """A number as kernel source: infinities and NaN as float("...") (repr would write inf).
    A size that remembers its formula (sage.kernels.symbolic) is written as its formula, the
    tiling field the host fills, whatever its value: float("td4") would be a string."""
    if is_sym(v):
        if active() is not None:
            return repr(v)
        v = v.plain()
    if isinstance(v, float) and (math.isinf(v) or math.isnan(v)):
        return f'float("{v}")'
    return repr(v)




def _joint(a: Kind, b: Kind) -> Kind:
    ks = {a, b} - {"scalar"}
    if not ks:
        return "scalar"
    if "full" in ks or ks == {"row", "col"}:
        return "full"
    return ks.pop()
