"""Lockstep lanes: the blocks of a launch that run the same kernel code, run once for all of them.

Most launches run one instruction stream per block, and most blocks of a launch follow the
same control flow on different data (48 blocks of a row softmax have 2 distinct streams).
Running the kernel's Python once per block then costs 48 times the interpretation for the
same instruction records. A *lane group* runs the kernel's Python once for several blocks:
the core holds every lane's local memory as one row of a 2-D array, each vector
instruction is one numpy call over all lanes, each record is made (and race-checked) once
and copied per lane at the end, and what differs per lane (the block index, GM offsets,
scalars read from data) is a `LaneValue`.

Exactness rests on one rule: **a LaneValue never turns into one Python value**. The moment
kernel code or a DSL check needs one (``if``, ``range``, ``int()``, an index, ``repr``, a
dict key, ``isinstance``) and the lanes disagree, the coercion raises `Divergence` with
every lane's value; the launch is then rolled back and run again with the group split by
that value. Where the lanes agree a value is a plain Python value, so the code of each lane
takes the very path it takes alone. Only DSL calls written for lanes (`lane_ready`) may run
in a lane group; any other raises `NotLaneable`, and so does any error: the launch then
runs block by block exactly as before, and the error a kernel sees is the per-block one.
"""

from __future__ import annotations

import operator
import struct
from typing import Any, Callable

import numpy as np


class Divergence(BaseException):
    """The lanes of a group disagree on a value the code needs as one Python value.

    A BaseException: DSL code that catches errors to reword them must not swallow it
    (kernels have no try/except at all)."""

    def __init__(self, values: tuple, data: bool = False):
        super().__init__("lanes diverge")
        self.values = values
        self.data = data  # the values come from tensor data (GetValue), not from the block index
        self.group: tuple[int, ...] | None = None  # the group's blocks, set where its stream is resumed


class NotLaneable(BaseException):
    """A DSL call or state a lane group cannot run: the launch runs block by block instead."""


class LockstepAbort(BaseException):
    """A lane group failed after it wrote GM: the whole run starts again, every block alone."""


_F64 = struct.Struct("<d")
LANE_READY: set = set()
_group: Any = None  # the lane group running now (its core), set by LaunchRun around each resume


def enter(group: Any) -> None:
    """Lane group `group` runs from now on (None: no group runs)."""
    global _group
    _group = group


def foreign(x: LaneValue) -> None:
    """A value kept from another group (or taken out to the host in a Python object) would be
    combined lane by lane with lanes it does not belong to: the run starts again block by block."""
    raise NotLaneable("a value of another lane group")


_foreign = foreign


def lane_values(x: LaneValue) -> tuple:
    """The per-lane values of a LaneValue of the running group (NotLaneable for another's)."""
    if x.g is not _group:
        foreign(x)
    return x.v


def lane_ready(obj: Any) -> Any:
    """Mark a DSL function, method, property getter or class as correct for a lane group."""
    LANE_READY.add(obj)
    return obj


def _key(x: Any) -> tuple:
    """What two lanes must share to count as one value: its type and, for a float, its bits
    (-0.0 is not 0.0, and NaNs of one bit pattern are one value, so a split on them ends)."""
    if x.__class__ is float:
        return (float, _F64.pack(x))
    return (x.__class__, x)


def _uniform(v: tuple) -> bool:
    v0 = v[0]
    cls = v0.__class__
    for x in v:
        if x.__class__ is not cls or not x == v0:
            break
    else:
        if cls is not float or v0 != 0.0:
            return True
    k = _key(v0)
    return all(_key(x) == k for x in v)


def lanes(values, data: bool = False) -> Any:
    """One Python value if every lane holds the same, else a LaneValue of the running group
    (`data`: computed from tensor data, see Divergence.data)."""
    v = tuple(values)
    return v[0] if _uniform(v) else LaneValue(v, _group, data)


def per_lane(x: Any, n: int) -> tuple:
    """`x` as one value per lane (a plain value repeats)."""
    if x.__class__ is LaneValue:
        if x.g is not _group or len(x.v) != n:
            _foreign(x)
        return x.v
    return (x,) * n


def groups(values: tuple, members: tuple) -> list[tuple] | None:
    """`members` (block indices, one per lane) split by their lanes' values, in lane order;
    None when a value cannot be a key (a list): the launch then runs block by block."""
    out: dict = {}
    try:
        for m, x in zip(members, values):
            out.setdefault(_key(x), []).append(m)
    except TypeError:  # unhashable: lanes that computed lists of different contents
        return None
    return [tuple(g) for g in out.values()]


def as_array(x: Any, dtype: np.dtype, ndim: int = 2) -> Any:
    """A scalar operand of a vector instruction: `dtype.type(x)`, or per lane an array of shape
    (lanes, 1, ...) that broadcasts over each lane's `ndim`-dimensional operand (lanes first),
    each value rounded to the dtype alone."""
    if x.__class__ is LaneValue:
        if x.g is not _group:
            _foreign(x)
        return np.array([dtype.type(a) for a in x.v], dtype=dtype).reshape((len(x.v),) + (1,) * (ndim - 1))
    return dtype.type(x)


def plain_only(arr: np.ndarray, what: str) -> None:
    """`what` is not written for lane groups: refuse it on a lane group's memory (2-D)."""
    if arr.ndim != 1:
        raise NotLaneable(what)


class LaneValue:
    """A Python value that differs between the lanes of a group: arithmetic works lane by
    lane, turning it into one value diverges (see the module docstring)."""

    __slots__ = ("v", "g", "d")

    def __init__(self, v: tuple, group: Any, data: bool = False):
        # (g: the group it belongs to: its lanes are that group's lanes; d: computed from tensor data)
        self.v, self.g, self.d = v, group, data

    def _diverge(self, *args):
        if self.g is not _group:
            _foreign(self)
        raise Divergence(self.v, self.d)

    __bool__ = __index__ = __int__ = __float__ = __complex__ = __hash__ = _diverge
    __repr__ = __str__ = __format__ = __len__ = __iter__ = __trunc__ = __floor__ = __ceil__ = _diverge

    def __round__(self, ndigits=None):
        if self.g is not _group:
            _foreign(self)
        return lanes((round(a, ndigits) for a in self.v), self.d)

    def __reduce__(self):
        raise TypeError("a LaneValue cannot be pickled")


def _binary(fn: Callable) -> tuple[Callable, Callable]:
    def op(self, other):
        if self.g is not _group:
            _foreign(self)
        if other.__class__ is LaneValue:
            if other.g is not _group:
                _foreign(other)
            return lanes((fn(a, b) for a, b in zip(self.v, other.v)), self.d or other.d)
        return lanes((fn(a, other) for a in self.v), self.d)

    def rop(self, other):
        if self.g is not _group:
            _foreign(self)
        return lanes((fn(other, a) for a in self.v), self.d)
    return op, rop


for _name, _fn in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv), ("mod", operator.mod),
                   ("pow", operator.pow), ("lshift", operator.lshift), ("rshift", operator.rshift),
                   ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor), ("divmod", divmod)):
    _op, _rop = _binary(_fn)
    setattr(LaneValue, f"__{_name}__", _op)
    setattr(LaneValue, f"__r{_name}__", _rop)
for _name, _fn in (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge),
                   ("eq", operator.eq), ("ne", operator.ne)):
    setattr(LaneValue, f"__{_name}__", _binary(_fn)[0])
for _name, _fn in (("neg", operator.neg), ("pos", operator.pos), ("abs", abs), ("invert", operator.invert)):
    setattr(LaneValue, f"__{_name}__", (lambda f: lambda self: lanes((f(a) for a in self.v), self.d) if self.g is _group
                                        else _foreign(self))(_fn))
del _name, _fn, _op, _rop


def lane_isinstance(obj: Any, classinfo: Any) -> bool:
    """The kernel's isinstance: a LaneValue is asked as the value of each lane would be, which
    only one Python value can answer; a range over lanes is a range, as each lane's is."""
    if obj.__class__ is _LaneRange:
        return isinstance(range(0), classinfo)
    if obj.__class__ is LaneValue:
        if obj.g is not _group:
            _foreign(obj)
        answers = tuple(isinstance(a, classinfo) for a in obj.v)
        if not _uniform(answers):
            raise Divergence(answers, obj.d)
        return answers[0]
    return isinstance(obj, classinfo)


class _RangeType(type):
    def __instancecheck__(cls, obj: Any) -> bool:  # isinstance(r, range) as with the builtin
        return isinstance(obj, range)


class lane_range(metaclass=_RangeType):  # noqa: N801 - it stands for the builtin `range` in kernels
    """The kernel's `range`: the builtin, except that bounds that differ per lane give one
    iteration per lane value (`for t in range(t0, t1)` with t0 = block * tiles) as long as every
    lane runs the loop equally often; where the counts differ the lanes diverge on them."""

    def __new__(cls, *args):
        for a in args:
            if a.__class__ is LaneValue:
                break
        else:
            return range(*args)
        n = next(len(a.v) for a in args if a.__class__ is LaneValue)
        per = [range(*lane) for lane in zip(*(per_lane(a, n) for a in args))]  # (each lane's own checks)
        counts = tuple(len(r) for r in per)
        data = any(a.__class__ is LaneValue and a.d for a in args)
        if not _uniform(counts):
            raise Divergence(counts, data)
        return _LaneRange(per, counts[0], data)


class _LaneRange:
    """range(...) over the lanes of a group: the i-th value of each lane's range, counts equal.

    Whatever kernel code can ask of it answers as each lane's range would (a LaneValue where
    they differ, Divergence where one Python value is needed); what it cannot answer is an
    error, which runs the launch block by block: code must not be able to tell lanes apart
    from blocks run alone (tests/security/test_lane_equivalence.py)."""

    __slots__ = ("per", "n", "data")

    def __init__(self, per: list[range], n: int, data: bool = False):
        self.per, self.n, self.data = per, n, data

    def _each(self, fn: Callable) -> Any:
        return lanes((fn(r) for r in self.per), self.data)

    def _one(self, fn: Callable) -> Any:
        values = tuple(fn(r) for r in self.per)
        if not _uniform(values):
            raise Divergence(values, self.data)
        return values[0]

    def __repr__(self) -> str:
        return self._one(repr)

    def __str__(self) -> str:
        return self._one(str)

    def __format__(self, spec: str) -> str:
        return self._one(lambda r: format(r, spec))

    def __hash__(self) -> int:
        return self._one(hash)

    def __eq__(self, other: Any) -> Any:
        if other.__class__ is _LaneRange:
            return lanes((a == b for a, b in zip(self.per, other.per)), self.data or other.data)
        return self._each(lambda r: r == other)

    def __ne__(self, other: Any) -> Any:
        if other.__class__ is _LaneRange:
            return lanes((a != b for a, b in zip(self.per, other.per)), self.data or other.data)
        return self._each(lambda r: r != other)

    def __contains__(self, x: Any) -> Any:
        if x.__class__ is LaneValue:
            return lanes((a in r for a, r in zip(per_lane(x, len(self.per)), self.per)), self.data or x.d)
        return self._each(lambda r: x in r)

    def __reduce__(self):
        raise TypeError("a lane range cannot be pickled")

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        for i in range(self.n):
            yield lanes((r[i] for r in self.per), self.data)

    def __reversed__(self):
        for i in reversed(range(self.n)):
            yield lanes((r[i] for r in self.per), self.data)



# -- per-lane math -------------------------------------------------------------------------------
# A block's own scalar math (`math.sqrt(1 / n)` of a per-block count, `min(rows, left)`) on a
# LaneValue is done lane by lane, giving a LaneValue, instead of diverging: each lane gets what
# the function gives it alone (an error in one lane ends the lanes, and the launch runs block by
# block, where that block raises it).

def _lane_count(args: tuple, kwargs: dict) -> tuple[int, bool]:
    """(lanes, whether any LaneValue argument comes from data); (0, False) without one."""
    n, data = 0, False
    for a in (*args, *kwargs.values()):
        if a.__class__ is LaneValue:
            if a.g is not _group:
                foreign(a)
            n, data = len(a.v), data or a.d
    return n, data


def per_lane_call(fn: Callable) -> Callable:
    """`fn` as kernel code calls it: per lane where an argument is a LaneValue."""
    def call(*args, **kwargs):
        n, data = _lane_count(args, kwargs)
        if not n:
            return fn(*args, **kwargs)
        cols = [per_lane(a, n) for a in args]
        kcols = {k: per_lane(v, n) for k, v in kwargs.items()}
        return lanes((fn(*(c[i] for c in cols), **{k: c[i] for k, c in kcols.items()}) for i in range(n)), data)
    call.__name__ = call.__qualname__ = getattr(fn, "__name__", "function")
    call.__doc__ = fn.__doc__
    return call


def _extremum(fn: Callable) -> Callable:
    """min or max: per lane when given LaneValues, one by one or in a list (without `key`).

    Where the lanes pick different arguments and the picks are integers, the lanes diverge,
    as the builtin's comparisons would: an int min or max that clamps in some lanes and not in
    others makes a size (`min(tile, left)`: a tail block's last tile), which an instruction soon
    needs as one value, and splitting here rather than where it is used spares the retry the
    work done in between (the 4 M-element add example ran its whole launch in lanes before its
    last tile split it, at 1.8x the CPU). Floats stay per lane (they end up as scalar operands,
    which lane-ready instructions take per lane), and so do ints that every lane takes from the
    same argument (`min(first + tile, m)` of full tiles: offsets, not sizes)."""
    def per_lane_pick(values: list) -> Any:
        n, data = _lane_count(tuple(values), {})
        if not n:
            return fn(values)
        columns = [per_lane(v, n) for v in values]
        picks, out = [], []
        for i in range(n):
            row = [c[i] for c in columns]
            best = fn(row)
            picks.append(next(j for j, x in enumerate(row) if x is best or x == best))
            out.append(best)
        if not _uniform(tuple(picks)) and all(x.__class__ is int for x in out):
            raise Divergence(tuple(picks), data)
        return lanes(out, data)

    def call(*args, **kwargs):
        if "key" in kwargs or (len(args) == 1 and args[0].__class__ not in (list, tuple)):
            return fn(*args, **kwargs)
        items = list(args[0]) if len(args) == 1 else list(args)
        if not items or not any(x.__class__ is LaneValue for x in items):
            return fn(*args, **kwargs)
        if kwargs:  # (default=: items are not empty here, so it plays no part)
            kwargs = {}
        return per_lane_pick(items)
    call.__name__ = call.__qualname__ = fn.__name__
    call.__doc__ = fn.__doc__
    return call


lane_min, lane_max = _extremum(min), _extremum(max)
