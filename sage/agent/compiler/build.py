"""From the recorded graph (sage.kernels.trace_graph, decompositions applied) to a `Program`.

Each torch storage becomes one buffer: the forward's inputs and the Model's parameters,
or a temporary the program allocates. Views disappear into layouts. What a kernel cannot
do is refused here, naming the op: reading tensor data on the host, output shapes that
depend on the data, tensor constants captured by the model, a buffer seen as two dtypes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sage.agent.compiler.ir import Layout, Node, Program, Ref, contiguous_strides
from sage.kernels import AtenCall, Graph, TensorMeta, base_name, op_def

# Free ops that create a storage with a known value (the recorder marks them views).
_CONSTANT_MAKERS = {"scalar_tensor", "lift_fresh_copy", "lift_fresh"}
_ALLOCATIONS = {"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided"}
_HOST_READS = {"_local_scalar_dense", "item", "is_nonzero", "tolist"}
UNSUPPORTED_DTYPES = {"float64", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2", "uint64"}


# A node writing the values of a small tensor the forward captured (its call's scalars[0]).
CONSTANT_OP = "captured_constant"
CAPTURED = "reads a tensor constant captured by the model; the kernel can only read its inputs and parameters"


class Unsupported(Exception):
    """The compiler cannot lower this program; the message names the op and the reason."""


class SourceTooLarge(Unsupported):
    """The kernel file would pass the sandbox's source limit."""


@dataclass
class Built:
    program: Program
    constants: dict[int, float]          # buffer -> the value of a one-element constant buffer


def build_program(graph: Graph, n_args: int) -> Built:
    prog = Program(inputs=[None] * n_args, scalar_args=dict(graph.scalar_args))
    storage_buf: dict[int, int] = {}
    derived: set[int] = set()            # buffers whose contents depend on the forward's data
    consts: dict[int, float] = {}

    def declare(vid: int, kind: str, name: str) -> None:
        shape, strides = graph.shapes[vid], graph.strides[vid]
        dense = graph.offsets[vid] == 0 and Layout(shape, strides).is_dense()
        numel = Layout.dense(shape).numel
        if not dense or graph.storage_numel[vid] != numel:
            raise Unsupported(f"forward input {name} is a view of a larger tensor; pass it contiguous")
        buf = prog.new_buffer(graph.dtypes[vid], numel, kind, name)  # type: ignore[arg-type]
        storage_buf[graph.storage[vid]] = buf.id
        derived.add(buf.id)

    for vid, pos in sorted(graph.inputs.items(), key=lambda kv: kv[1]):
        declare(vid, "input", f"a{pos}")
        prog.inputs[pos] = storage_buf[graph.storage[vid]]
    for vid, name in graph.params.items():
        declare(vid, "param", name)
        prog.params[name] = storage_buf[graph.storage[vid]]

    def ref(vid: int, what: str) -> Ref:
        st = graph.storage[vid]
        if st not in storage_buf:
            captured = vid not in graph.producer
            if captured and vid not in graph.captured_data:
                raise Unsupported(f"{what} {CAPTURED}")
            buf = prog.new_buffer(graph.dtypes[vid], graph.storage_numel[vid])
            storage_buf[st] = buf.id
            if captured:             # a small constant: a kernel writes its values first
                meta = TensorMeta(shape=graph.shapes[vid], dtype=graph.dtypes[vid], contiguous=True)
                layout = Layout(graph.shapes[vid], graph.strides[vid], graph.offsets[vid])
                prog.nodes.append(_data_node(prog, meta, Ref(buf.id, layout, graph.dtypes[vid]),
                                             graph.captured_data[vid], what))
        buf = prog.buffers[storage_buf[st]]
        if buf.dtype != graph.dtypes[vid]:
            raise Unsupported(f"{what} reinterprets a {buf.dtype} buffer as {graph.dtypes[vid]}")
        return Ref(buf.id, Layout(graph.shapes[vid], graph.strides[vid], graph.offsets[vid]), graph.dtypes[vid])

    for gnode in graph.nodes:
        call = gnode.call
        what = f"aten.{call.qualname}"
        name = base_name(call.name)
        entry = op_def(call.name)
        if call.name in _HOST_READS:
            src = [ref(v, what).buf for v in gnode.args]
            if any(b in derived for b in src):
                raise Unsupported(f"{what}: the reference reads tensor data on the host (.item()/.tolist()); "
                                  "a kernel's host code cannot read device data")
            continue
        if not gnode.outs:
            continue                     # no tensor result (promote_types, size queries)
        if entry is not None and entry.dynamic_shape:
            raise Unsupported(f"{what}: its output shape depends on the input values; a kernel allocates "
                              "its outputs before it reads any data")
        if name in _CONSTANT_MAKERS:
            data = graph.captured_data.get(gnode.args[0]) if gnode.args else None
            prog.nodes.append(_constant_node(prog, gnode, ref(gnode.outs[0], what), consts, what, data))
            continue
        # A "view" op that made a new storage copied (aten.to returns self or a copy): a node.
        fresh = any(graph.storage[v] not in storage_buf for v in gnode.outs) and name not in _ALLOCATIONS
        if call.free and not (fresh and gnode.args):
            for v in gnode.outs:           # a view, or an allocation (its contents come later)
                ref(v, what)
            if gnode.args and any(ref(v, what).buf in derived for v in gnode.args):
                derived.update(ref(v, what).buf for v in gnode.outs)
            continue
        if call.free and entry is not None and entry.keeps_order and len(gnode.args) == 1 and len(gnode.outs) == 1:
            # A reshape of a view that cannot be one: torch copies the elements in the source's
            # order, which is the copy of the source into a dense buffer of the source's shape.
            src, out = ref(gnode.args[0], what), ref(gnode.outs[0], what)
            dense = Ref(out.buf, Layout.dense(src.shape, out.layout.offset), out.dtype)
            prog.nodes.append(Node(index=len(prog.nodes), op="clone", call=call, ins=[src], outs=[dense],
                                   consts=[None]))
            if src.buf in derived:
                derived.add(out.buf)
            continue
        ins = [ref(v, what) for v in gnode.args]
        outs = [ref(v, what) for v in gnode.outs]
        inplace = call.name.endswith("_") and name != call.name and bool(ins) and outs[0].buf == ins[0].buf
        node = Node(index=len(prog.nodes), op=name, call=call, ins=list(ins), outs=outs, inplace=inplace,
                    consts=[consts.get(r.buf) if prog.buffers[r.buf].numel == 1 else None for r in ins])
        if entry is not None and entry.prim is not None and entry.prim.kind == "fill" and not ins:
            value = call.outputs[0].value
            if value is not None and outs[0].layout.numel == 1:
                consts[outs[0].buf] = value
        elif any(r.buf in derived for r in ins):
            derived.update(o.buf for o in outs)
        prog.nodes.append(node)
    prog.outputs = [ref(v, "the forward's result") for v in graph.outputs]
    _prune(prog)
    return Built(prog, consts)


def check_dtypes(prog: Program) -> None:
    """After the rewrites: no node may still compute in a dtype no kernel holds."""
    for node in prog.nodes:
        for r in [*node.ins, *node.outs]:
            if r is not None and r.dtype in UNSUPPORTED_DTYPES:
                raise Unsupported(f"{node.describe()} computes in {r.dtype}, which no 910B kernel type holds")


def _constant_node(prog: Program, gnode, out: Ref, consts: dict[int, float], what: str,
                   data: torch.Tensor | None) -> Node:
    """A literal the forward wraps in a tensor (scalar_tensor, lift_fresh of a Python
    number): a fill node writing its value; a small captured tensor (`data`, see
    sage.kernels.record.CAPTURED_BYTES): a node writing its values."""
    meta = gnode.call.outputs[0]
    if (meta.value is None or meta.numel != 1) and data is not None:
        return _data_node(prog, meta, out, data, what)
    if meta.value is None or meta.numel != 1:
        raise Unsupported(f"{what} wraps a tensor constant captured by the model; the kernel can only read "
                          "its inputs and parameters")
    consts[out.buf] = meta.value
    call = AtenCall(name="full", overload="default", inputs=[], outputs=[meta], scalars=[list(meta.shape), meta.value],
                    arg_kinds=["scalar", "scalar"])
    return Node(index=len(prog.nodes), op="full", call=call, ins=[], outs=[out])


def _data_node(prog: Program, meta: TensorMeta, out: Ref, data: torch.Tensor, what: str) -> Node:
    """A node writing a captured tensor's values (`data`, in its shape) into `out`'s buffer,
    which it must fill exactly in row-major order (literals are written in storage order)."""
    buf = prog.buffers[out.buf]
    if out.layout.offset != 0 or not out.layout.is_dense() or out.layout.numel != buf.numel \
            or tuple(out.layout.strides) != contiguous_strides(out.shape) or tuple(data.shape) != tuple(out.shape):
        raise Unsupported(f"{what} {CAPTURED}")
    call = AtenCall(name=CONSTANT_OP, overload="default", inputs=[], outputs=[meta],
                    scalars=[data.reshape(-1).tolist()], arg_kinds=["scalar"])
    return Node(index=len(prog.nodes), op=CONSTANT_OP, call=call, ins=[], outs=[out])


def _prune(prog: Program) -> None:
    """Drop nodes whose results nobody reads (liveness by buffer, backwards)."""
    live = {r.buf for r in prog.outputs}
    keep = []
    for node in reversed(prog.nodes):
        if any(o.buf in live for o in node.outs):
            keep.append(node)
            live.update(r.buf for r in node.ins if r is not None)
    keep.reverse()
    for i, node in enumerate(keep):
        node.index = i
    prog.nodes = keep


def dense_like(shape: tuple[int, ...]) -> tuple[int, ...]:
    return contiguous_strides(shape)
