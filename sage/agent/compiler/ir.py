"""The compiler's program: GM buffers, strided views of them, and the aten nodes in order.

Every tensor the forward touches is a `Ref`: a `Layout` (shape, element strides, offset)
over a `Buffer` (a forward input, a Model parameter, or a temporary the program
allocates). Views cost nothing: they are layouts, taken from torch as it laid them out.
A node reads refs and writes refs; an in-place node (`add_`, `copy_`, `index_put_`)
writes into the buffer of its first operand, so the program is imperative and its node
order is the order of effects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from sage.kernels import AtenCall


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(strides))


@dataclass(frozen=True)
class Layout:
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0

    @classmethod
    def dense(cls, shape: tuple[int, ...], offset: int = 0) -> Layout:
        return cls(tuple(shape), contiguous_strides(tuple(shape)), offset)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def is_dense(self) -> bool:
        """Row-major contiguous (size-1 axes may have any stride)."""
        return all(d == 1 or s == c for d, s, c in zip(self.shape, self.strides, contiguous_strides(self.shape)))

    def span(self) -> tuple[int, int]:
        """The first and one past the last element it can touch (for non-negative strides)."""
        if self.numel == 0:
            return self.offset, self.offset
        hi = self.offset + sum((d - 1) * s for d, s in zip(self.shape, self.strides))
        return self.offset, hi + 1

    def broadcast_to(self, shape: tuple[int, ...]) -> Layout:
        """This layout seen as `shape` by torch's broadcasting: new leading axes and size-1
        axes get stride 0."""
        lead = len(shape) - len(self.shape)
        if lead < 0:
            raise ValueError(f"cannot broadcast {self.shape} to {shape}")
        strides = [0] * lead
        for d, s, want in zip(self.shape, self.strides, shape[lead:]):
            if d == want:
                strides.append(s if want != 1 else 0)
            elif d == 1:
                strides.append(0)
            else:
                raise ValueError(f"cannot broadcast {self.shape} to {shape}")
        return Layout(tuple(shape), tuple(strides), self.offset)

    def permute(self, order: tuple[int, ...]) -> Layout:
        return Layout(tuple(self.shape[i] for i in order), tuple(self.strides[i] for i in order), self.offset)


BufferKind = Literal["input", "param", "temp"]


@dataclass
class Buffer:
    id: int
    dtype: str
    numel: int
    kind: BufferKind
    name: str                  # the forward argument (a0, a1, ...), parameter name, or t<id>

    @property
    def is_input(self) -> bool:
        return self.kind in ("input", "param")


@dataclass(frozen=True)
class Ref:
    buf: int
    layout: Layout
    dtype: str

    @property
    def shape(self) -> tuple[int, ...]:
        return self.layout.shape


@dataclass
class Node:
    index: int
    op: str                    # the aten op, in-place underscore removed (add_ -> add)
    call: AtenCall
    ins: list[Ref | None]      # tensor operands in call.inputs order (None: a folded constant)
    outs: list[Ref]
    inplace: bool = False      # writes into the buffer of ins[0] (and returns it)
    consts: list[float | None] = field(default_factory=list)   # folded value of each operand, if any

    @property
    def scalars(self) -> list[Any]:
        return self.call.scalars

    @property
    def kwargs(self) -> dict[str, Any]:
        return self.call.kwargs

    def describe(self) -> str:
        return f"aten.{self.call.qualname} {self.call.describe()}"


@dataclass
class Program:
    """One traced case of a task, as the compiler sees it."""

    buffers: dict[int, Buffer] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)
    inputs: list[int | None] = field(default_factory=list)   # forward argument i -> its buffer (None: not a tensor)
    params: dict[str, int] = field(default_factory=dict)     # kwarg name -> buffer
    outputs: list[Ref] = field(default_factory=list)
    scalar_args: dict[int, Any] = field(default_factory=dict)

    def new_buffer(self, dtype: str, numel: int, kind: BufferKind = "temp", name: str | None = None) -> Buffer:
        bid = len(self.buffers)
        buf = Buffer(bid, dtype, numel, kind, name or f"t{bid}")
        self.buffers[bid] = buf
        return buf

    def writers(self, buf: int) -> list[Node]:
        return [n for n in self.nodes if any(o.buf == buf for o in n.outs)]

    def names(self) -> set[str]:
        """The names of its GM buffers (inputs, parameters, temporaries)."""
        return {b.name for b in self.buffers.values()}

    def readers(self, buf: int) -> list[Node]:
        return [n for n in self.nodes if any(r is not None and r.buf == buf for r in n.ins)]

    def uses(self) -> BufferUses:
        """Readers and writers of every buffer at once, for passes that ask per node: a
        traced loop (a recurrence over 4096 time steps) has tens of thousands of nodes, and
        asking `readers` per node is quadratic. Valid until the program is rewritten."""
        return BufferUses(self)


class BufferUses:
    """The nodes reading and writing each buffer, in program order."""

    def __init__(self, prog: Program) -> None:
        self._readers: dict[int, list[Node]] = {}
        self._writers: dict[int, list[Node]] = {}
        for n in prog.nodes:
            for b in dict.fromkeys(r.buf for r in n.ins if r is not None):
                self._readers.setdefault(b, []).append(n)
            for b in dict.fromkeys(o.buf for o in n.outs):
                self._writers.setdefault(b, []).append(n)

    def readers(self, buf: int) -> list[Node]:
        return self._readers.get(buf, [])

    def writers(self, buf: int) -> list[Node]:
        return self._writers.get(buf, [])
