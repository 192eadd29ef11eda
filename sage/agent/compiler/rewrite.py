"""Program rewrites before fusion.

`absorb_upcasts`: a matrix product of half-precision operands upcast to float32
(`x.float() @ w.float()`) reads the half operands directly: the cube multiplies them
exactly and accumulates in float32, which is what float32 arithmetic on the upcast values
computes (up to the order of the sums), at the half-precision rate and with half the
bytes. The casts then have no reader and are dropped.
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


def _half_source(prog: Program, ref: Ref | None) -> Ref | None:
    """`ref` read back through the upcast that wrote it, or None."""
    if ref is None or ref.dtype != "float32":
        return None
    writers = prog.writers(ref.buf)
    if len(writers) != 1:
        return None
    cast: Node = writers[0]
    out = cast.outs[0]
    src = cast.ins[-1] if cast.ins else None
    if cast.op not in COPIES or cast.inplace or src is None or src.dtype not in HALF:
        return None
    if out.layout.offset or not out.layout.is_dense() or out.layout.numel != prog.buffers[out.buf].numel:
        return None
    gm = compose(GMap(ref.layout.strides, ref.layout.offset), tuple(ref.shape), tuple(out.shape),
                 src.layout.broadcast_to(tuple(out.shape)))
    if gm is None:
        return None
    return Ref(src.buf, Layout(tuple(ref.shape), gm.strides, gm.offset), src.dtype)
