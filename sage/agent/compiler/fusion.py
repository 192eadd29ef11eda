"""Fusion: the program's nodes partitioned into groups, one kernel launch each.

Pointwise nodes and reductions go into tile groups (the rule is in `tilegroup.py`); a node
joins the most recent group it reads from that accepts it, else starts a group. Every
other primitive (matmul, sort, scan, gathers and scatters) is a group of its own. A
buffer that is an arange or a fill (written once, whole) is virtual: tile groups compute
it where they read it instead of loading it.

Groups launch in creation order. A tile group stores a value to GM when a later group,
the forward's result or an in-place write needs it; everything else stays in UB.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sage.agent.compiler.attention import ATTENTION_OP
from sage.agent.compiler.build import CONSTANT_OP, Built, Unsupported
from sage.agent.compiler.ir import BufferUses, Node, Program, Ref
from sage.agent.compiler.pointwise import IotaOperand, pointwise_of, is_reduce, prim_of
from sage.agent.compiler.tilegroup import GMap, LeafRef, TileGroup, Virtual, compose, leaves_of, new_group
from sage.kernels import Const, Expr, Op


@dataclass
class Group:
    index: int
    kind: str                              # "tile", or the primitive kind of its one node
    nodes: list[Node] = field(default_factory=list)
    tile: TileGroup | None = None
    stores: list[tuple[Node, Ref, Expr]] = field(default_factory=list)   # tile groups: values written to GM
    maps: list[GMap] = field(default_factory=list)   # a piece (pieces.py): each store's map over its box

    def describe(self) -> str:
        ops = ", ".join(n.op for n in self.nodes)
        return f"{self.kind}[{ops}]"


@dataclass
class Plan:
    groups: list[Group]
    virtual: dict[int, Virtual]


def virtual_buffers(prog: Program, consts: dict[int, float], merged_reads: bool = True) -> dict[int, Virtual]:
    """Buffers written exactly once, whole and densely, by an arange or a fill, or by a cheap
    pointwise node its readers recompute (`merged_reads`: also readers that see it through a
    reshape merging its axes, see `compose`)."""
    out: dict[int, Virtual] = {}
    uses = prog.uses()
    results = {r.buf for r in prog.outputs}
    for node in prog.nodes:
        if len(node.outs) != 1 or node.inplace:
            continue
        ref = node.outs[0]
        buf = prog.buffers[ref.buf]
        if buf.is_input or ref.layout.offset or not ref.layout.is_dense() or ref.layout.numel != buf.numel:
            continue
        if len(uses.writers(ref.buf)) != 1:
            continue
        pw = pointwise_of(node, consts)
        if pw is None:
            continue
        if ref.buf in results or any(pointwise_of(r, consts) is None and not is_reduce(r)
                                     for r in uses.readers(ref.buf)):
            continue        # a kernel that is not a tile program reads it from GM
        if isinstance(pw.expr, Const):
            out[ref.buf] = Virtual("const", pw.expr.value)
        elif pw.operands and isinstance(pw.operands[0], IotaOperand) and len(ref.shape) == 1 \
                and _ops(pw.expr) <= 1:
            out[ref.buf] = Virtual("iota", pw.operands[0].start, pw.operands[0].step)
        elif _ops(pw.expr) <= INLINE_OPS and _inlinable(uses, node, pw, out, merged_reads):
            out[ref.buf] = Virtual("expr", node=node, pw=pw)
    return out


def _inlinable(uses: BufferUses, node: Node, pw, virtual: dict[int, Virtual], merged_reads: bool) -> bool:
    """Every reader can follow its view of the node's output back to the node's operands,
    the operands are not themselves inlined (no chains) and nothing overwrites them later."""
    out = node.outs[0]
    operands = [node.ins[k] for k in pw.operands if not isinstance(k, IotaOperand)]
    if any(r is None or (r.buf in virtual and virtual[r.buf].kind == "expr")
           or any(w.index > node.index for w in uses.writers(r.buf)) for r in operands):
        return False
    for reader in uses.readers(out.buf):
        shape = reader.ins[0].shape if is_reduce(reader) else reader.outs[0].shape
        for ref in reader.ins:
            if ref is None or ref.buf != out.buf:
                continue
            try:
                lay = ref.layout.broadcast_to(tuple(shape))
                srcs = [r.layout.broadcast_to(out.shape) for r in operands]
            except ValueError:
                return False
            gm = GMap(lay.strides, lay.offset)
            if any(compose(gm, tuple(shape), out.shape, s, merged_reads) is None for s in srcs):
                return False
    return True


# A pointwise node this cheap (a cast, a negation, a scale) is recomputed where it is read
# rather than written to GM and read back.
INLINE_OPS = 2


def _ops(expr: Expr) -> int:
    if isinstance(expr, Op):
        return (expr.name != "identity") + sum(_ops(a) for a in expr.args)
    return 0


def plan_groups(built: Built, merged_reads: bool = True) -> Plan:
    prog, consts = built.program, built.constants
    virtual = virtual_buffers(prog, consts, merged_reads)
    uses = prog.uses()
    groups: list[Group] = []
    writer: dict[int, int] = {}            # buffer -> the last group writing it
    touch: dict[int, set[int]] = {}        # buffer -> groups reading or writing it
    for node in prog.nodes:
        if len(node.outs) == 1 and node.outs[0].buf in virtual and len(uses.writers(node.outs[0].buf)) == 1:
            continue
        pw = pointwise_of(node, consts)
        tileable = pw is not None or is_reduce(node)
        group = _place(node, pw, groups, writer, touch, virtual) if tileable else None
        if group is None:
            group = Group(len(groups), "tile" if tileable else _prim_kind(node))
            if group.kind == "matmul":
                group.tile = epilogue_group(node)
            if tileable:
                group.tile = new_group(node, pw)
                expr = group.tile.accepts(node, pw, virtual)
                if expr is None:
                    raise Unsupported(f"{node.describe()}: its operands do not broadcast to its output")
                group.tile.add(node, expr, pw)
            groups.append(group)
            group.nodes.append(node)
        for r in node.ins:
            if r is not None:
                touch.setdefault(r.buf, set()).add(group.index)
        for o in node.outs:
            writer[o.buf] = group.index
            touch.setdefault(o.buf, set()).add(group.index)
    _stores(prog, groups, virtual)
    return Plan(groups, virtual)


# The product of a matmul group, as its epilogue reads it (a GM workspace the lowering names).
PRODUCT = -1


def epilogue_group(node: Node) -> TileGroup:
    """A matmul's epilogue: pointwise work on its product, over the product's shape."""
    out = node.outs[0]
    tile = TileGroup(tuple(out.shape), frozenset())
    gm = tile.gmap(out.layout, out.shape)
    acc = "int32" if node.ins[0] is not None and node.ins[0].dtype == "int8" else "float32"
    assert gm is not None
    tile.writes[out.buf] = [(gm, LeafRef(PRODUCT, gm, acc), node)]
    return tile


def _prim_kind(node: Node) -> str:
    if node.op == CONSTANT_OP:
        return CONSTANT_OP
    if node.op == ATTENTION_OP:
        return "attention"
    prim = prim_of(node)
    if prim is None or prim.kind in ("reduce", "fill", "iota"):
        raise Unsupported(f"{node.describe()}: no lowering (not pointwise, not a primitive, no decomposition)")
    return prim.kind


def _reads(node: Node, virtual: dict[int, Virtual]) -> list[int]:
    """The buffers a node reads, an inlined operand's own operands included: a group that
    recomputes an inlined value must come after the groups writing what that value reads."""
    out: list[int] = []
    for r in node.ins:
        if r is None:
            continue
        v = virtual.get(r.buf)
        if v is not None and v.kind == "expr" and v.node is not None:
            out.extend(_reads(v.node, virtual))
        else:
            out.append(r.buf)
    return out


def _place(node: Node, pw, groups: list[Group], writer: dict[int, int], touch: dict[int, set[int]],
           virtual: dict[int, Virtual]) -> Group | None:
    reads = _reads(node, virtual)
    sources = sorted({writer[b] for b in reads if b in writer}, reverse=True)
    if groups and len(groups) - 1 not in sources:
        sources.insert(0, len(groups) - 1)       # an independent node of the same shape: same launch
    for gi in sources:
        g = groups[gi]
        if g.tile is None or (g.kind == "matmul" and pw is None):
            continue
        if any(writer.get(b, -1) > gi for b in reads):
            continue
        if any(t > gi for o in node.outs for t in touch.get(o.buf, ())):
            continue
        expr = g.tile.accepts(node, pw, virtual)
        if expr is None:
            continue
        g.tile.add(node, expr, pw)
        g.nodes.append(node)
        return g
    return None


def _stores(prog: Program, groups: list[Group], virtual: dict[int, Virtual]) -> None:
    """Which values each tile group writes to GM."""
    read_by: dict[int, set[int]] = {}
    for g in groups:
        if g.kind == "matmul":
            for r in g.nodes[0].ins:
                if r is not None:
                    read_by.setdefault(r.buf, set()).add(g.index)
        if g.tile is not None:           # what its expressions load (inlined producers' operands included)
            for writes in g.tile.writes.values():
                for _, expr, _ in writes:
                    for leaf in leaves_of(expr):
                        if leaf.buf is not None and leaf.buf >= 0:
                            read_by.setdefault(leaf.buf, set()).add(g.index)
            continue
        for n in g.nodes:
            for r in n.ins:
                if r is not None:
                    read_by.setdefault(r.buf, set()).add(g.index)
    results = {r.buf for r in prog.outputs}
    for g in groups:
        if g.tile is None:
            continue
        created = {n.outs[0].buf for n in g.nodes if not n.inplace and n.outs[0].buf not in virtual}
        for buf, writes in g.tile.writes.items():
            needed = buf in results or (read_by.get(buf, set()) - {g.index}) or buf not in created \
                or prog.buffers[buf].is_input
            if not needed:
                continue
            latest: dict = {}
            for gm, expr, node in writes:
                latest[gm] = (node, node.outs[0], expr)
            g.stores.extend(latest.values())
