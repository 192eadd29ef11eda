"""Program rewrites before fusion.

`absorb_upcasts`: a matrix product of half-precision operands upcast to float32
(`x.float() @ w.float()`) reads the half operands directly: the cube multiplies them
exactly and accumulates in float32, which is what float32 arithmetic on the upcast values
computes (up to the order of the sums), at the half-precision rate and with half the
bytes. The casts then have no reader and are dropped.

`exact_integer_products`: `(a.double() @ b.double() + bias.double()).float()` of int8 a, b
and an integer bias (how a reference spells npu_quant_matmul's exact int32 accumulation)
is the int8 product on the cube with an int32 accumulator, then the int32 bias: float64
holds these integers exactly, and so does int32 while |K * 128 * 128| < 2^31, so the
values are the same. The float64 buffers become int32 and the upcasts are dropped.
"""

from __future__ import annotations

from sage.agent.compiler.build import _prune
from sage.agent.compiler.ir import Layout, Node, Program, Ref
from sage.agent.compiler.pointwise import COPIES
from sage.agent.compiler.tilegroup import GMap, compose

HALF = ("float16", "bfloat16")
MATMULS = ("mm", "bmm")


def absorb_upcasts(prog: Program) -> None:
    changed = False
    for node in prog.nodes:
        if node.op not in MATMULS or len(node.ins) < 2:
            continue
        srcs = [_half_source(prog, r) for r in node.ins[:2]]
        dtypes = {s.dtype if s is not None else r.dtype for s, r in zip(srcs, node.ins[:2])}
        if len(dtypes) != 1 or next(iter(dtypes)) not in HALF:
            continue
        for i, s in enumerate(srcs):
            if s is not None:
                node.ins[i] = s
                changed = True
    if changed:
        _prune(prog)


def _half_source(prog: Program, ref: Ref | None, wide: str = "float32", narrow: tuple[str, ...] = HALF) -> Ref | None:
    """`ref` (of dtype `wide`) read back through the upcast from a `narrow` dtype that wrote it, or None."""
    if ref is None or ref.dtype != wide:
        return None
    writers = prog.writers(ref.buf)
    if len(writers) != 1:
        return None
    cast: Node = writers[0]
    out = cast.outs[0]
    src = cast.ins[-1] if cast.ins else None
    if cast.op not in COPIES or cast.inplace or src is None or src.dtype not in narrow:
        return None
    if out.layout.offset or not out.layout.is_dense() or out.layout.numel != prog.buffers[out.buf].numel:
        return None
    gm = compose(GMap(ref.layout.strides, ref.layout.offset), tuple(ref.shape), tuple(out.shape),
                 src.layout.broadcast_to(tuple(out.shape)))
    if gm is None:
        return None
    return Ref(src.buf, Layout(tuple(ref.shape), gm.strides, gm.offset), src.dtype)


EXACT_INTS = ("int8", "int16", "int32", "uint8")


def exact_integer_products(prog: Program) -> None:
    exact: set[int] = set()              # float64 buffers that now hold int32 values
    for node in prog.nodes:
        out = node.outs[0] if len(node.outs) == 1 else None
        if out is None or out.dtype != "float64" or node.inplace or len(node.ins) < 2:
            continue
        if node.op in MATMULS:
            a, b = (_half_source(prog, r, "float64", ("int8",)) for r in node.ins[:2])
            if a is None or b is None or a.shape[-1] * 128 * 128 >= 2**31:
                continue
            node.ins[0], node.ins[1] = a, b
        elif node.op in ("add", "sub") and not any(isinstance(v, (int, float)) and v != 1 for v in node.scalars):
            ins = [r if r is not None and r.buf in exact else _half_source(prog, r, "float64", EXACT_INTS)
                   for r in node.ins[:2]]
            if None in ins or not any(r.buf in exact for r in node.ins[:2] if r is not None):
                continue
            node.ins[0], node.ins[1] = ins
        else:
            continue
        _retype(prog, out.buf, "int32")
        exact.add(out.buf)
    if exact:
        _prune(prog)


def _retype(prog: Program, buf: int, dtype: str) -> None:
    prog.buffers[buf].dtype = dtype

    def re(r: Ref | None) -> Ref | None:
        return Ref(r.buf, r.layout, dtype) if r is not None and r.buf == buf else r

    for node in prog.nodes:
        node.ins = [re(r) for r in node.ins]
        node.outs = [re(r) for r in node.outs]
    prog.outputs = [re(r) for r in prog.outputs]
