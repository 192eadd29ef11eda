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

`wrapping_int64`: int64 temporaries whose every use ends in a cast to a 32-bit or narrower
integer (`bincount(x).cumsum(0).to(torch.int32)`) are computed in int32. Addition,
subtraction and multiplication commute with reduction mod 2^32, so the int32 results wrap
to the same low 32 bits the final cast keeps; a count of elements is that count mod 2^32.
The 910B's vector unit has no int64 arithmetic (it is refused by the instruction table);
this is how such a chain runs on it at all.

`widened_scans`: `x.long().cumsum(d)` of an int32 x is the int32 scan of x,
widened to int64 at the store: the scan library's int32 path (sage.kernels.library.scan),
which wraps past the int32 range as its int32 cumsum already does. The vector unit has no
int64 scan; group sizes (npu_swiglu_quant's group_index) are how such a scan appears.

`values_only_extrema`: `x.max(dim)[0]` (aten.max.dim, whose indices nobody reads) is
`amax(x, dim)`: the same values, NaN included (both propagate it), through the reduce
lowering; the indices, which need the argreduce lowering, are never computed.
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
    cast = _sole_writer(prog, ref)
    src = cast.ins[-1] if cast is not None and cast.ins else None
    if cast is None or cast.op not in COPIES or src is None or src.dtype not in narrow:
        return None
    return _read_through(prog, ref, cast, src)


def _sole_writer(prog: Program, ref: Ref | None) -> Node | None:
    """The one node that writes `ref`'s buffer, not in place; None if there is not exactly one."""
    writers = prog.writers(ref.buf) if ref is not None else []
    return writers[0] if len(writers) == 1 and not writers[0].inplace else None


def _read_through(prog: Program, ref: Ref, node: Node, src: Ref) -> Ref | None:
    """A read `ref` of what elementwise `node` wrote whole, as the same read of its operand `src`."""
    out = node.outs[0]
    if out.layout.offset or not out.layout.is_dense() or out.layout.numel != prog.buffers[out.buf].numel:
        return None
    gm = compose(GMap(ref.layout.strides, ref.layout.offset), tuple(ref.shape), tuple(out.shape),
                 src.layout.broadcast_to(tuple(out.shape)))
    if gm is None:
        return None
    return Ref(src.buf, Layout(tuple(ref.shape), gm.strides, gm.offset), src.dtype)


# Index-taking primitives (operand 1 the index, operand 0 the tensor indexed along `dim`) whose
# library kernels wrap a negative index themselves, + the axis length, as torch indexing does.
SELF_WRAPPING = ("index_select", "gather", "index_copy", "index_add", "scatter")


def absorb_index_wraps(prog: Program) -> None:
    """`index_select(x, d, where(t < 0, t + n, t))` with n = x.shape[d] (how advanced indexing
    decomposes) reads t directly: the kernel wraps as the `where` does, so the separate launch
    computing the wrapped copy is dropped."""
    changed = False
    for node in prog.nodes:
        x = node.ins[0] if node.op in SELF_WRAPPING and len(node.ins) > 1 else None
        if x is None or node.ins[1] is None:
            continue
        dim = next((v for v in node.scalars if isinstance(v, int) and not isinstance(v, bool)), 0)
        src = _unwrapped(prog, node.ins[1], x.shape[dim % len(x.shape)] if x.shape else 1)
        if src is not None:
            node.ins[1] = src
            changed = True
    if changed:
        _prune(prog)


def _unwrapped(prog: Program, ref: Ref, n: int) -> Ref | None:
    """`ref` read through the `where(t < 0, t + n, t)` that wrote it, as a read of t; else None."""
    wrap = _sole_writer(prog, ref)
    if wrap is None or wrap.op != "where" or len(wrap.ins) != 3 or None in wrap.ins:
        return None
    cond, plus, t = wrap.ins
    lt, add = _sole_writer(prog, cond), _sole_writer(prog, plus)
    if lt is None or lt.op != "lt" or lt.ins[:1] != [t] or list(lt.scalars) != [0]:
        return None
    if add is None or add.op != "add" or add.ins[:1] != [t] or list(add.scalars) != [n] \
            or add.kwargs.get("alpha", 1) != 1:
        return None
    if prog.writers(t.buf) and _sole_writer(prog, t) is None:
        return None                      # t is written more than once: which value the where read is unclear
    return _read_through(prog, ref, wrap, t)


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


NARROW_INTS = ("int32", "int16", "int8", "uint8")
# ops whose low 32 result bits depend only on the low 32 bits of their integer operands
WRAPPING_OPS = {"add", "sub", "mul", "neg", "cumsum", "sum"}
COUNTS = {"bincount"}                 # int64 counts of a tensor's elements: < 2^31 of them


def wrapping_int64(prog: Program) -> None:
    results = {r.buf for r in prog.outputs}
    narrow = {b.id for b in prog.buffers.values()
              if b.dtype == "int64" and not b.is_input and b.id not in results and b.id not in prog.params.values()}
    uses = prog.uses()
    changed = True
    while changed:                    # the largest set whose writers and readers all keep it closed
        changed = False
        for b in sorted(narrow):
            if not (all(_wraps_in(n, narrow) for n in uses.writers(b))
                    and all(_reads_wrapped(n, narrow) for n in uses.readers(b))):
                narrow.discard(b)
                changed = True
    for b in narrow:
        _retype(prog, b, "int32")


def _int_operands_fit(node: Node, narrow: set[int]) -> bool:
    return all(r.buf in narrow or r.dtype in NARROW_INTS for r in node.ins if r is not None) and \
        all(abs(v) < 2**31 for v in node.scalars if isinstance(v, int) and not isinstance(v, bool))


def _wraps_in(node: Node, narrow: set[int]) -> bool:
    """A writer whose int64 output mod 2^32 is what it computes from operands mod 2^32."""
    if node.op in COUNTS:
        return all(r is None or r.dtype in (*NARROW_INTS, "int64") for r in node.ins) and len(node.ins) == 1
    return (node.op in WRAPPING_OPS or node.op in COPIES) and _int_operands_fit(node, narrow)


def _reads_wrapped(node: Node, narrow: set[int]) -> bool:
    """A reader that keeps only the low 32 bits: a wrapping op into the set, or a cast down."""
    if node.op in COPIES:
        return all(o.buf in narrow or o.dtype in NARROW_INTS for o in node.outs)
    return node.op in WRAPPING_OPS and all(o.buf in narrow for o in node.outs)


def widened_scans(prog: Program) -> None:
    changed = False
    for node in prog.nodes:
        x = node.ins[0] if node.op == "cumsum" and node.ins and not node.inplace else None
        if x is None or node.outs[0].dtype != "int64":
            continue
        src = _half_source(prog, x, "int64", ("int32",))      # the scan library's one integer type
        if src is not None:
            node.ins[0] = src
            changed = True
    if changed:
        _prune(prog)


EXTREMA = {"max": "amax", "min": "amin"}


def values_only_extrema(prog: Program) -> None:
    uses = prog.uses()
    returned = {r.buf for r in prog.outputs}
    for node in prog.nodes:
        call = node.call
        if node.op not in EXTREMA or call.overload != "dim" or len(node.outs) != 2:
            continue
        idx = node.outs[1]
        if uses.readers(idx.buf) or idx.buf in returned or len(uses.writers(idx.buf)) != 1:
            continue
        dim, keepdim = (list(call.scalars) + [False])[:2]
        node.op = EXTREMA[node.op]
        node.call = call.model_copy(update={"name": node.op, "overload": "default", "outputs": call.outputs[:1],
                                            "scalars": [[dim], bool(keepdim)], "arg_kinds": call.arg_kinds[:3]})
        node.outs = node.outs[:1]     # its buffer stays (ids are dense): nothing writes or reads it
