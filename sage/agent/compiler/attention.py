"""The attention rewrite: matmul(Q, K^T) -> scale -> mask -> softmax -> matmul(P, V) as one
node, lowered to the library's flash-attention kernel (one MIX launch, lower_attention.py)
instead of five launches through GM.

What it matches, as the compiler's trace spells it (level4/03_fusion_attention's reference):

    S = bmm(Q, K^T)                  Q [B*H, Sq, D], K^T a transposed view of K [B*H, Skv, D]
    X = S * c  (or S / c)            optional, c a Python number
    X = masked_fill(X, mask, -inf)   optional, mask bool, broadcast [MB, MH, Sq, Skv] (True = hidden)
    P = softmax(X, -1)               _softmax, or its decomposition amax / sub / exp / sum / div
    O = bmm(P, V)                    V [B*H, Skv, D]
    out = O.to(half)                 the result in Q's half dtype

Every intermediate (S, X, the row max and sum, P, O) must have exactly one writer and only the
readers the pattern names, and not be a result: the kernel never writes them. Q, K and V are
followed back through clones and exact upcasts (half -> float32) to half-precision buffers
laid out densely as [B, Hkv, S, D]; a clone of an expand along a new head axis
(`repeat_interleave(g, dim=1)`) is grouped-query attention with Hkv = H / g. Anything else
(a float32 result, a softmax over another axis, a mask that is not a bool tensor, a score
read elsewhere) is left to the existing path, which stays correct.
"""

from __future__ import annotations

import math

from sage.agent.compiler.build import _prune
from sage.agent.compiler.ir import Layout, Node, Program, Ref
from sage.agent.compiler.pointwise import COPIES
from sage.agent.compiler.rewrite import _read_through, _sole_writer
from sage.kernels import AtenCall, TensorMeta

ATTENTION_OP = "flash_attention"
HALF = ("float16", "bfloat16")
MATMULS = ("bmm",)


class _NoMatch(Exception):
    """The nodes do not form the pattern (a normal outcome, never reported)."""


def fuse_attention(prog: Program) -> int:
    """Rewrite every matching chain into one ATTENTION_OP node; the number rewritten."""
    done = 0
    for node in list(prog.nodes):
        if node.op not in MATMULS or node not in prog.nodes:
            continue
        try:
            _rewrite(prog, node)
        except _NoMatch:
            continue
        done += 1
    if done:
        _prune(prog)
    return done


def _need(cond: bool) -> None:
    if not cond:
        raise _NoMatch


def _whole(prog: Program, ref: Ref | None) -> Ref:
    """A dense read of a whole buffer (what a kernel writing that buffer wholly produced)."""
    _need(ref is not None and not ref.layout.offset and ref.layout.is_dense()
          and ref.layout.numel == prog.buffers[ref.buf].numel)
    assert ref is not None
    return ref


def _only_reader(prog: Program, buf: int, readers: list[Node]) -> None:
    _need(buf not in {r.buf for r in prog.outputs})
    _need(len(prog.writers(buf)) == 1 and not prog.writers(buf)[0].inplace)
    _need({id(n) for n in prog.readers(buf)} == {id(n) for n in readers})


def _next(prog: Program, ref: Ref) -> Node:
    readers = prog.readers(ref.buf)
    _need(len(readers) >= 1)
    return readers[0]


def _last_dim(node: Node, rank: int) -> bool:
    dims = node.scalars[0] if node.scalars else None
    dims = dims if isinstance(dims, list) else [dims]
    keep = node.scalars[1] if len(node.scalars) > 1 else False
    return len(dims) == 1 and isinstance(dims[0], int) and dims[0] % rank == rank - 1 and keep is True


def _reads(prog: Program, ref: Ref | None, buf: int, shape: tuple[int, ...] | None = None) -> Ref:
    """`ref` is a whole read of buffer `buf` (seen with `shape`, when given)."""
    _need(ref is not None and ref.buf == buf and (shape is None or ref.shape == shape))
    return _whole(prog, ref)


def _softmax(prog: Program, x: Ref) -> tuple[Node, list[Node], Ref]:
    """The node writing softmax(x, -1), the nodes of the softmax, and x as the softmax reads it
    (its view may split the matmul's batch into batch and heads)."""
    readers = prog.readers(x.buf)
    if len(readers) == 1 and readers[0].op == "_softmax":
        sm = readers[0]
        view = _reads(prog, sm.ins[0], x.buf)
        rank = len(view.shape)
        _need(sm.scalars[:1] == [-1] or sm.scalars[:1] == [rank - 1])
        _need(len(sm.scalars) < 2 or sm.scalars[1] is False)
        return sm, [sm], view
    by_op = {n.op: n for n in readers}
    _need(len(readers) == 2 and set(by_op) == {"amax", "sub"})
    amax, sub = by_op["amax"], by_op["sub"]
    view = _reads(prog, amax.ins[0], x.buf)
    rank = len(view.shape)
    _reads(prog, sub.ins[0], x.buf, view.shape)
    _reads(prog, sub.ins[1], amax.outs[0].buf)
    _need(_last_dim(amax, rank) and sub.kwargs.get("alpha", 1) == 1)
    _only_reader(prog, amax.outs[0].buf, [sub])
    exp = _next(prog, sub.outs[0])
    _need(exp.op == "exp")
    _reads(prog, exp.ins[0], sub.outs[0].buf, view.shape)
    _only_reader(prog, sub.outs[0].buf, [exp])
    by_op = {n.op: n for n in prog.readers(exp.outs[0].buf)}
    _need(set(by_op) == {"sum", "div"})
    total, div = by_op["sum"], by_op["div"]
    _reads(prog, total.ins[0], exp.outs[0].buf, view.shape)
    _reads(prog, div.ins[0], exp.outs[0].buf, view.shape)
    _reads(prog, div.ins[1], total.outs[0].buf)
    _need(_last_dim(total, rank) and not total.kwargs.get("dtype"))
    _only_reader(prog, exp.outs[0].buf, [total, div])
    _only_reader(prog, total.outs[0].buf, [div])
    return div, [amax, sub, exp, total, div], view


def _as_4d(ref: Ref, heads: int, transposed: bool) -> Ref:
    """A bmm operand [B*H, rows, cols] as [B, H, S, D] (swapping the last two when transposed)."""
    lay = ref.layout
    _need(len(lay.shape) == 3 and lay.shape[0] % heads == 0)
    bh, r, c = lay.shape
    sb, sr, sc = lay.strides
    s, d, ss, sd = (c, r, sc, sr) if transposed else (r, c, sr, sc)
    return Ref(ref.buf, Layout((bh // heads, heads, s, d), (sb * heads, sb, ss, sd), lay.offset), ref.dtype)


def _source(prog: Program, ref: Ref) -> tuple[Ref, int]:
    """A [B, H, S, D] operand followed back to a dense half-precision buffer [B, Hkv, S, D]: the
    ref over it and Hkv."""
    heads = ref.shape[1]
    for _ in range(8):
        if ref.dtype in HALF and _dense(ref) and ref.layout.numel == prog.buffers[ref.buf].numel:
            return ref, heads
        w = _sole_writer(prog, ref)
        _need(w is not None and w.op in COPIES and bool(w.ins) and w.ins[-1] is not None)
        src = w.ins[-1]
        exact = src.dtype == w.outs[0].dtype or (w.outs[0].dtype == "float32" and src.dtype in HALF)
        _need(exact)
        grouped = _grouped(prog, ref, w, src)
        if grouped is not None:
            ref, heads = grouped, grouped.shape[1]
            continue
        nxt = _read_through(prog, ref, w, src)
        _need(nxt is not None)
        ref = nxt
    raise _NoMatch


def _dense(ref: Ref) -> bool:
    return not ref.layout.offset and ref.layout.is_dense()


def _grouped(prog: Program, ref: Ref, w: Node, src: Ref) -> Ref | None:
    """`ref` [B, H, S, D] reading the whole clone of an expand [B, Hkv, g, S, D] (stride 0 on g),
    as a read [B, Hkv, S, D] of the expanded tensor."""
    out = w.outs[0]
    if len(src.shape) != 5 or (src.layout.strides[2] and src.shape[2] != 1) or not _dense(ref):
        return None
    if not _dense(out) or ref.layout.numel != prog.buffers[out.buf].numel:
        return None
    b, hkv, g, s, d = src.shape
    if (b, hkv * g, s, d) != ref.shape:
        return None
    st = src.layout.strides
    return Ref(src.buf, Layout((b, hkv, s, d), (st[0], st[1], st[3], st[4]), src.layout.offset), src.dtype)


def _rewrite(prog: Program, mm1: Node) -> None:
    q3, kt3 = mm1.ins[0], mm1.ins[1]
    _need(q3 is not None and kt3 is not None and len(mm1.outs) == 1)
    s_ref = mm1.outs[0]
    nodes = [mm1]
    scale = 1.0
    x = s_ref
    mask: Ref | None = None
    nxt = _next(prog, x)
    if nxt.op in ("mul", "div") and len([r for r in nxt.ins if r is not None]) == 1 and nxt.ins[0] is not None \
            and nxt.ins[0].buf == x.buf and nxt.scalars and isinstance(nxt.scalars[0], (int, float)):
        c = float(nxt.scalars[0])
        _need(c > 0 and math.isfinite(c))     # the kernel's running max is of the unscaled scores
        scale = c if nxt.op == "mul" else 1 / c
        _only_reader(prog, x.buf, [nxt])
        _whole(prog, nxt.ins[0])
        x = nxt.outs[0]
        nodes.append(nxt)
        nxt = _next(prog, x)
    if nxt.op == "masked_fill":
        _need(nxt.ins[0] is not None and nxt.ins[0].buf == x.buf and nxt.ins[1] is not None)
        _need(nxt.scalars[:1] == [float("-inf")] and nxt.ins[1].dtype == "bool")
        _only_reader(prog, x.buf, [nxt])
        _whole(prog, nxt.ins[0])
        mask, x = nxt.ins[1], nxt.outs[0]
        nodes.append(nxt)
    _whole(prog, x)
    # the scores the softmax reads: not a result, one writer (the softmax checks their readers)
    _need(x.buf not in {r.buf for r in prog.outputs} and len(prog.writers(x.buf)) == 1)
    sm, sm_nodes, view = _softmax(prog, x)
    rank = len(view.shape)
    _need(rank in (3, 4))
    batch, heads = (view.shape[0], view.shape[1]) if rank == 4 else (1, view.shape[0])
    sq, skv = view.shape[-2], view.shape[-1]
    nodes += sm_nodes
    p = sm.outs[0]
    mm2 = _next(prog, p)
    _need(mm2.op in MATMULS and mm2.ins[0] is not None and mm2.ins[0].buf == p.buf and mm2.ins[1] is not None)
    _only_reader(prog, p.buf, [mm2])
    _whole(prog, mm2.ins[0])
    o = mm2.outs[0]
    cast = _next(prog, o)
    _need(cast.op in COPIES and cast.outs[0].dtype in HALF and not cast.inplace)
    _only_reader(prog, o.buf, [cast])
    _whole(prog, cast.ins[-1])
    out = _whole(prog, cast.outs[0])
    _need(out.layout.numel == batch * heads * sq * q3.shape[-1])
    nodes += [mm2, cast]

    q, hq = _source(prog, _as_4d(q3, heads, False))
    k, hk = _source(prog, _as_4d(kt3, heads, True))
    v, hv = _source(prog, _as_4d(mm2.ins[1], heads, False))
    _need(hq == heads and hk == hv and q.dtype == k.dtype == v.dtype == out.dtype)
    _need(not prog.buffers[out.buf].is_input)
    _need(q.shape == (batch, heads, sq, q.shape[3]) and k.shape == v.shape == (batch, hk, skv, q.shape[3]))
    first = mm1.index
    for r in (q, k, v, mask):         # nothing may overwrite an operand once the chain began reading
        _need(r is None or all(w.index < first for w in prog.writers(r.buf)))
    mask_bh = _mask_extents(prog, mask, batch, heads, sq, skv) if mask is not None else None
    ins = [q, k, v] + ([mask] if mask is not None else [])
    meta = [TensorMeta(shape=r.shape, dtype=r.dtype) for r in ins]
    call = AtenCall(name=ATTENTION_OP, overload="default", inputs=meta,
                    outputs=[TensorMeta(shape=out.shape, dtype=out.dtype)], scalars=[scale],
                    kwargs={"mask_batch": mask_bh[0], "mask_heads": mask_bh[1]} if mask_bh else {},
                    arg_kinds=["tensor"] * len(ins))
    fused = Node(index=cast.index, op=ATTENTION_OP, call=call, ins=list(ins), outs=[out])
    at = prog.nodes.index(cast)
    prog.nodes[at] = fused
    gone = {id(n) for n in nodes if n is not cast}
    prog.nodes = [n for n in prog.nodes if id(n) not in gone]
    for i, n in enumerate(prog.nodes):
        n.index = i


def _mask_extents(prog: Program, mask: Ref, batch: int, heads: int, sq: int, skv: int) -> tuple[int, int]:
    """The mask's batch and head extents (1 = broadcast) when it is a dense [MB, MH, Sq, Skv]
    buffer from offset 0, as the kernel's pre-pass reads it."""
    lay = mask.layout.broadcast_to((batch, heads, sq, skv))
    mb = batch if lay.strides[0] else 1
    mh = heads if lay.strides[1] else 1
    dims = (mb, mh, sq, skv)
    want = Layout.dense(dims).strides
    _need(all(n == 1 or got == w for n, got, w in zip(dims, lay.strides, want)))   # size-1 axes: any stride
    _need(not lay.offset and prog.buffers[mask.buf].numel >= mb * mh * sq * skv)
    return mb, mh
