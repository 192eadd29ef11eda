"""Lowering elementwise chains to DSL vector instructions.

`Lowerer` walks a chain (post-order, shared sub-expressions computed once) and writes the
body of a `Compute` method: one line per vector instruction. Values live in UB buffers
whose length depends on their broadcast kind (full tile, one row of the tile, one value per
row); scalars and constants are Python values on the scalar unit. The lowering picks the
cheapest instruction form: a constant operand uses the scalar instruction (`Adds`, `Muls`),
a row operand is applied row by row, a column operand is read once per row with `GetValue`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sage.bench.library.chain import BINARY, COMPARE, TERNARY, Const, Expr, Inp, Kind, Op

# Vector instruction for each binary op with two buffer operands.
_VECTOR_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "maximum": "Max", "minimum": "Min"}
_UNARY_PRIMITIVE = {
    "relu": "Relu", "exp": "Exp", "log": "Ln", "abs": "Abs", "sqrt": "Sqrt",
    "rsqrt": "Rsqrt", "reciprocal": "Reciprocal",
}
# Ops the vector unit supports on int32 operands.
INT_OPS = {"add", "sub", "mul", "maximum", "minimum", "abs", "relu", "neg", "identity", "square", "where"} | set(COMPARE)
# Compare works on whole 256 B repeats: its element count is the kind's count rounded up to
# CMP_PAD elements (256 B of float32 and 512 B of float16), so every buffer a comparison
# reads holds CMP_PAD elements more than a tile; the lanes past the tile are never stored.
CMP_PAD = 128
# Magnitudes from 2^23 up are whole numbers in float32 (and beyond int32's range): floor
# leaves them as they are.
_FLOAT_INTEGRAL = 8388608.0
# Scalar on the left of a comparison: the same relation with the operands swapped.
_SWAPPED = {"gt": "lt", "lt": "gt", "ge": "le", "le": "ge", "eq": "eq", "ne": "ne"}

# Abramowitz & Stegun 7.1.26: erf(z) = 1 - t*P(t)*exp(-z^2), t = 1/(1+p*z), |error| <= 1.5e-7.
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


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
    free: dict[str, list[str]] = field(default_factory=lambda: {"full": [], "row": [], "col": []})
    made: dict[str, int] = field(default_factory=lambda: {"full": 0, "row": 0, "col": 0})
    scalars: int = 0
    uses_mask: bool = False  # a comparison or select ran: the kernel needs the mask buffer `mk`
    int_temp: bool = False   # floor ran: the kernel needs an int32 buffer `ti` of one tile
    dtype: str = "float32"   # the compute dtype (comparisons against scalars are typed by it)

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
        uses: dict[Expr, int] = {}
        self._count_uses(root, uses)
        memo: dict[Expr, Val] = {}
        return self._eval(root, uses, memo)

    def _count_uses(self, e: Expr, uses: dict[Expr, int]) -> None:
        uses[e] = uses.get(e, 0) + 1
        if uses[e] == 1 and isinstance(e, Op):
            for a in e.args:
                self._count_uses(a, uses)

    def _eval(self, e: Expr, uses: dict[Expr, int], memo: dict[Expr, Val]) -> Val:
        if e in memo:
            return memo[e]
        if isinstance(e, Inp):
            val = self.inputs[e.index]
        elif isinstance(e, Const):
            val = Val("scalar", repr(e.value))
        else:
            args = [self._eval(a, uses, memo) for a in e.args]
            val = self._apply(e, args)
            for a_expr, a_val in zip(e.args, args):
                uses[a_expr] -= 1
                if uses[a_expr] == 0:
                    self.release(a_val)
        memo[e] = val
        return val

    def _apply(self, e: Op, args: list[Val]) -> Val:
        if e.name in TERNARY:
            return self._where(*args)
        if e.name in COMPARE:
            return self._compare(e.name, args[0], args[1])
        if e.name in BINARY:
            return self._binary(e, args[0], args[1])
        (x,) = args
        if x.kind == "scalar":
            return Val("scalar", self.scalar_var(_scalar_unary(e, x.ref)))
        d = self.temp(x.kind)
        self._unary(e, d, x.ref, self.count[x.kind], x.kind)
        return Val(x.kind, d, temp=True)

    # -- unary -------------------------------------------------------------------------
    def _unary(self, e: Op, d: str, x: str, c: str, kind: Kind) -> None:
        name, E = e.name, self.emit
        if name in _UNARY_PRIMITIVE:
            E(f"{_UNARY_PRIMITIVE[name]}({d}, {x}, {c})")
        elif name == "neg":
            E(f"Muls({d}, {x}, -1.0, {c})")
        elif name == "identity":
            E(f"Adds({d}, {x}, 0, {c})")
        elif name == "square":
            E(f"Mul({d}, {x}, {x}, {c})")
        elif name == "sigmoid":
            self._sigmoid(d, x, c, 1.0)
        elif name == "tanh":
            # tanh(x) = 2 / (1 + exp(-2x)) - 1: saturates cleanly at both ends (no inf/inf).
            self._sigmoid(d, x, c, 2.0)
            E(f"Muls({d}, {d}, 2.0, {c})")
            E(f"Adds({d}, {d}, -1.0, {c})")
        elif name in ("silu", "hardswish"):
            t = self.temp(kind)
            if name == "silu":
                self._sigmoid(t, x, c, 1.0)
            else:
                self._hardsigmoid(t, x, c)
            E(f"Mul({d}, {x}, {t}, {c})")
            self.free[kind].append(t)
        elif name == "hardsigmoid":
            self._hardsigmoid(d, x, c)
        elif name == "gelu_tanh":
            # x * sigmoid(2*sqrt(2/pi)*(x + 0.044715 x^3)) = x / (1 + exp(-k*(x + 0.044715 x^3)))
            t = self.temp(kind)
            k = 2.0 * math.sqrt(2.0 / math.pi)
            E(f"Mul({t}, {x}, {x}, {c})")
            E(f"Muls({t}, {t}, 0.044715, {c})")
            E(f"Adds({t}, {t}, 1.0, {c})")
            E(f"Mul({t}, {t}, {x}, {c})")
            E(f"Muls({t}, {t}, {-k!r}, {c})")
            E(f"Exp({t}, {t}, {c})")
            E(f"Adds({t}, {t}, 1.0, {c})")
            E(f"Div({d}, {x}, {t}, {c})")
            self.free[kind].append(t)
        elif name == "gelu":
            self._gelu_erf(d, x, c, kind)
        elif name in ("softplus", "mish"):
            t = self.temp(kind)
            # softplus(x) = max(x, 0) + log(1 + exp(-|x|)), stable for large |x|.
            E(f"Abs({t}, {x}, {c})")
            E(f"Muls({t}, {t}, -1.0, {c})")
            E(f"Exp({t}, {t}, {c})")
            E(f"Adds({t}, {t}, 1.0, {c})")
            E(f"Ln({t}, {t}, {c})")
            if name == "softplus":
                E(f"Maxs({d}, {x}, 0.0, {c})")
                E(f"Add({d}, {d}, {t}, {c})")
            else:
                E(f"Maxs({d}, {x}, 0.0, {c})")
                E(f"Add({t}, {d}, {t}, {c})")
                self._sigmoid(t, t, c, 2.0)
                E(f"Muls({t}, {t}, 2.0, {c})")
                E(f"Adds({t}, {t}, -1.0, {c})")
                E(f"Mul({d}, {x}, {t}, {c})")
            self.free[kind].append(t)
        elif name in ("elu", "leaky_relu"):
            t = self.temp(kind)
            E(f"Mins({t}, {x}, 0.0, {c})")
            if name == "elu":
                E(f"Exp({t}, {t}, {c})")
                E(f"Adds({t}, {t}, -1.0, {c})")
                E(f"Muls({t}, {t}, {e.param('alpha', 1.0)!r}, {c})")
            else:
                E(f"Muls({t}, {t}, {e.param('slope', 0.01)!r}, {c})")
            E(f"Maxs({d}, {x}, 0.0, {c})")
            E(f"Add({d}, {d}, {t}, {c})")
            self.free[kind].append(t)
        elif name == "log1p":
            E(f"Adds({d}, {x}, 1.0, {c})")
            E(f"Ln({d}, {d}, {c})")
        elif name == "clamp":
            src = x
            lo = dict(e.params).get("min")
            hi = dict(e.params).get("max")
            if lo is None and hi is None:
                E(f"Adds({d}, {x}, 0, {c})")
            if lo is not None:
                E(f"Maxs({d}, {src}, {lo!r}, {c})")
                src = d
            if hi is not None:
                E(f"Mins({d}, {src}, {hi!r}, {c})")
        elif name == "pow_scalar":
            self._pow(d, x, c, e.param("exponent"))
        elif name == "floor":
            self._floor(d, x, c, kind)
        else:
            raise ValueError(f"no lowering for unary op {name!r}")

    def _sigmoid(self, d: str, x: str, c: str, scale: float) -> None:
        """d = 1 / (1 + exp(-scale*x))."""
        self.emit(f"Muls({d}, {x}, {-scale!r}, {c})")
        self.emit(f"Exp({d}, {d}, {c})")
        self.emit(f"Adds({d}, {d}, 1.0, {c})")
        self.emit(f"Reciprocal({d}, {d}, {c})")

    def _hardsigmoid(self, d: str, x: str, c: str) -> None:
        self.emit(f"Muls({d}, {x}, {1.0 / 6.0!r}, {c})")
        self.emit(f"Adds({d}, {d}, 0.5, {c})")
        self.emit(f"Maxs({d}, {d}, 0.0, {c})")
        self.emit(f"Mins({d}, {d}, 1.0, {c})")

    def _gelu_erf(self, d: str, x: str, c: str, kind: Kind) -> None:
        # gelu(x) = x/2 * (1 + erf(x/sqrt2)); x*erf(x/sqrt2) is even, so
        # gelu(x) = (x + |x| - |x| * q(|x|)) / 2 with q = t*P(t)*exp(-x^2/2): no sign needed.
        E = self.emit
        a, t, q = self.temp(kind), self.temp(kind), self.temp(kind)
        E(f"Abs({a}, {x}, {c})")
        E(f"Muls({t}, {a}, {_AS_P / math.sqrt(2.0)!r}, {c})")
        E(f"Adds({t}, {t}, 1.0, {c})")
        E(f"Reciprocal({t}, {t}, {c})")
        E(f"Muls({q}, {t}, {_AS_A[4]!r}, {c})")
        for coef in reversed(_AS_A[:4]):
            E(f"Adds({q}, {q}, {coef!r}, {c})")
            E(f"Mul({q}, {q}, {t}, {c})")
        E(f"Mul({t}, {x}, {x}, {c})")
        E(f"Muls({t}, {t}, -0.5, {c})")
        E(f"Exp({t}, {t}, {c})")
        E(f"Mul({q}, {q}, {t}, {c})")
        E(f"Mul({q}, {q}, {a}, {c})")
        E(f"Add({a}, {x}, {a}, {c})")
        E(f"Sub({a}, {a}, {q}, {c})")
        E(f"Muls({d}, {a}, 0.5, {c})")
        self.free[kind] += [a, t, q]

    def _pow(self, d: str, x: str, c: str, p: float) -> None:
        E = self.emit
        if p == 1.0:
            E(f"Adds({d}, {x}, 0, {c})")
        elif p == 2.0:
            E(f"Mul({d}, {x}, {x}, {c})")
        elif p == 3.0:
            E(f"Mul({d}, {x}, {x}, {c})")
            E(f"Mul({d}, {d}, {x}, {c})")
        elif p == 0.5:
            E(f"Sqrt({d}, {x}, {c})")
        elif p == -0.5:
            E(f"Rsqrt({d}, {x}, {c})")
        elif p == -1.0:
            E(f"Reciprocal({d}, {x}, {c})")
        else:
            E(f"Ln({d}, {x}, {c})")
            E(f"Muls({d}, {d}, {p!r}, {c})")
            E(f"Exp({d}, {d}, {c})")

    def _floor(self, d: str, x: str, c: str, kind: Kind) -> None:
        # Cast to int32 rounding down and back; magnitudes past 2^23 are already whole (and
        # may not fit int32), so a select keeps them.
        E = self.emit
        self.uses_mask = self.int_temp = True
        t = self.temp(kind)
        E(f"Abs({t}, {x}, {c})")
        E(f"CompareScalar(mk, {t}, {_FLOAT_INTEGRAL!r}, CMPMODE.LT, {self._padded(kind)})")
        E(f"Cast(ti, {x}, RoundMode.CAST_FLOOR, {c})")
        E(f"Cast({t}, ti, RoundMode.CAST_NONE, {c})")
        E(f"Select({d}, mk, {t}, {x}, SELMODE.VSEL_TENSOR_TENSOR_MODE, {c})")
        self.free[kind].append(t)

    # -- comparisons and select ----------------------------------------------------------
    def _padded(self, kind: Kind) -> str:
        return {"full": "pn", "row": "pnc", "col": "pnr"}[kind]

    def _compare(self, name: str, a: Val, b: Val) -> Val:
        """1 where `a <name> b` holds, else 0: a bit mask, then a select of 1 over 0."""
        if a.kind == "scalar" and b.kind == "scalar":
            py = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}[name]
            return Val("scalar", self.scalar_var(f"1.0 if ({a.ref}) {py} ({b.ref}) else 0.0"))
        self.uses_mask = True
        if a.kind == "scalar":
            a, b, name = b, a, _SWAPPED[name]
        kind = _joint(a.kind, b.kind)
        pc = self._padded(kind)
        if b.kind == "scalar":
            self.emit(f"CompareScalar(mk, {a.ref}, {b.ref}, CMPMODE.{COMPARE[name]}, {pc})")
        else:
            a2, b2 = self._materialize(a, kind), self._materialize(b, kind)
            self.emit(f"Compare(mk, {a2.ref}, {b2.ref}, CMPMODE.{COMPARE[name]}, {pc})")
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
        if cond.kind == "scalar":
            raise ValueError("where with a scalar condition is a plain choice, not a kernel op")
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

    # -- binary ------------------------------------------------------------------------
    def _binary(self, e: Op, a: Val, b: Val) -> Val:
        name = e.name
        if a.kind == "scalar" and b.kind == "scalar":
            return Val("scalar", self.scalar_var(_scalar_binary(name, a.ref, b.ref)))
        if name not in _VECTOR_BINARY:          # composite binaries need equal kinds
            out_kind = _joint(a.kind, b.kind)
            a2, b2 = self._materialize(a, out_kind), self._materialize(b, out_kind)
            d = self.temp(out_kind)
            self._log_add_exp(d, a2.ref, b2.ref, self.count[out_kind], out_kind)
            for orig, m in ((a, a2), (b, b2)):
                if m is not orig:
                    self.release(m)
            return Val(out_kind, d, temp=True)
        out_kind = _joint(a.kind, b.kind)
        d = self.temp(out_kind)
        c = self.count[out_kind]
        if b.kind == "scalar":
            self._with_scalar(name, d, a.ref, b.ref, c, scalar_left=False)
        elif a.kind == "scalar":
            self._with_scalar(name, d, b.ref, a.ref, c, scalar_left=True)
        elif a.kind == b.kind:
            self.emit(f"{_VECTOR_BINARY[name]}({d}, {a.ref}, {b.ref}, {c})")
        else:
            self._mixed(name, d, a, b)
        return Val(out_kind, d, temp=True)

    def _mixed(self, name: str, d: str, a: Val, b: Val) -> None:
        """Different vector kinds: applied one output row at a time."""
        s = self.row_stride
        if "col" in (a.kind, b.kind):
            # the column values were written by V (a cast or an op): sync before reading them
            self.emit("SetFlag(HardEvent.V_S, 0)")
            self.emit("WaitFlag(HardEvent.V_S, 0)")
        self.emit("for r in range(nr):")
        self.depth += 1
        row = {v.ref: (f"{v.ref}[r * {s}]" if v.kind == "full" else v.ref) for v in (a, b) if v.kind != "col"}
        if a.kind == "col" or b.kind == "col":
            col, other = (a, b) if a.kind == "col" else (b, a)
            v = self.scalar_var(f"{col.ref}.GetValue(r)")
            self._with_scalar(name, f"{d}[r * {s}]", row[other.ref], v, "nc", scalar_left=col is a)
            self.depth -= 1
            # later vector writes to the column buffer must wait for these scalar reads
            self.emit("SetFlag(HardEvent.S_V, 0)")
            self.emit("WaitFlag(HardEvent.S_V, 0)")
            return
        self.emit(f"{_VECTOR_BINARY[name]}({d}[r * {s}], {row[a.ref]}, {row[b.ref]}, nc)")
        self.depth -= 1

    def _with_scalar(self, name: str, d: str, x: str, v: str, c: str, *, scalar_left: bool) -> None:
        E = self.emit
        if name in ("add", "mul", "maximum", "minimum"):
            fn = {"add": "Adds", "mul": "Muls", "maximum": "Maxs", "minimum": "Mins"}[name]
            E(f"{fn}({d}, {x}, {v}, {c})")
        elif name == "sub" and not scalar_left:
            E(f"Adds({d}, {x}, -({v}), {c})")
        elif name == "sub":
            E(f"Muls({d}, {x}, -1.0, {c})")
            E(f"Adds({d}, {d}, {v}, {c})")
        elif name == "div" and not scalar_left:
            E(f"Muls({d}, {x}, 1.0 / ({v}), {c})")
        elif name == "div":
            E(f"Reciprocal({d}, {x}, {c})")
            E(f"Muls({d}, {d}, {v}, {c})")
        else:
            raise ValueError(f"no scalar form for {name!r}")

    def _materialize(self, v: Val, kind: Kind) -> Val:
        """Broadcast a value to `kind` in a fresh temp (for composite binaries)."""
        if v.kind == kind:
            return v
        d = self.temp(kind)
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

    def _log_add_exp(self, d: str, a: str, b: str, c: str, kind: Kind) -> None:
        # log(e^a + e^b) = max(a, b) + log(1 + exp(-|a - b|))
        t = self.temp(kind)
        E = self.emit
        E(f"Sub({t}, {a}, {b}, {c})")
        E(f"Abs({t}, {t}, {c})")
        E(f"Muls({t}, {t}, -1.0, {c})")
        E(f"Exp({t}, {t}, {c})")
        E(f"Adds({t}, {t}, 1.0, {c})")
        E(f"Ln({t}, {t}, {c})")
        E(f"Max({d}, {a}, {b}, {c})")
        E(f"Add({d}, {d}, {t}, {c})")
        self.free[kind].append(t)


def _joint(a: Kind, b: Kind) -> Kind:
    ks = {a, b} - {"scalar"}
    if not ks:
        return "scalar"
    if "full" in ks or ks == {"row", "col"}:
        return "full"
    return ks.pop()


def _scalar_binary(name: str, a: str, b: str) -> str:
    return {
        "add": f"({a}) + ({b})", "sub": f"({a}) - ({b})", "mul": f"({a}) * ({b})",
        "div": f"({a}) / ({b})", "maximum": f"max({a}, {b})", "minimum": f"min({a}, {b})",
        "log_add_exp": f"max({a}, {b}) + math.log1p(math.exp(-abs(({a}) - ({b}))))",
    }[name]


def _scalar_unary(e: Op, x: str) -> str:
    """A unary op on a scalar value, computed by the scalar unit with `math`."""
    table = {
        "relu": f"max({x}, 0.0)", "exp": f"math.exp({x})", "log": f"math.log({x})",
        "abs": f"abs({x})", "sqrt": f"math.sqrt({x})", "rsqrt": f"1.0 / math.sqrt({x})",
        "reciprocal": f"1.0 / ({x})", "neg": f"-({x})", "square": f"({x}) * ({x})",
        "sigmoid": f"1.0 / (1.0 + math.exp(-({x})))", "tanh": f"math.tanh({x})",
        "identity": f"{x}", "log1p": f"math.log1p({x})", "floor": f"float(math.floor({x}))",
        "silu": f"({x}) / (1.0 + math.exp(-({x})))",
    }
    if e.name not in table:
        raise ValueError(f"op {e.name!r} on a scalar operand is not supported by the library")
    return table[e.name]
