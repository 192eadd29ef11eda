"""The reference's aten trace with its dataflow: which value each operator read and wrote.

`sage.bench.reference.record_aten` lists the aten calls a forward dispatches (names,
shapes, dtypes, scalars, as `AtenCall`s); fusing them needs one more fact, which call's
output feeds which call's input. `trace_graph` records the same `AtenCall`s (same
fields, same "free" rule, from the reference's FREE_OPS) and numbers every tensor value it
sees, so the synthesizer can rebuild the forward as an expression over its inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from sage.bench.reference.aten import FREE_OPS, AtenCall, TensorMeta, dtype_name


@dataclass
class Node:
    call: AtenCall
    args: list[int]          # value ids of call.inputs, in the same order
    outs: list[int]          # value ids of call.outputs


@dataclass
class Graph:
    """Values are numbered; `inputs` maps forward-argument positions, `params` names."""

    inputs: dict[int, int] = field(default_factory=dict)        # value id -> forward arg position
    params: dict[int, str] = field(default_factory=dict)        # value id -> kwarg name (dots -> _)
    producer: dict[int, Node] = field(default_factory=dict)     # value id -> the node that wrote it
    nodes: list[Node] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    scalar_args: dict[int, Any] = field(default_factory=dict)   # forward arg position -> Python value
    shapes: dict[int, tuple[int, ...]] = field(default_factory=dict)
    dtypes: dict[int, str] = field(default_factory=dict)
    # An in-place op wrote through a view (x[idx] = v on a slice): the write lands in the
    # view's base, which this value-numbered graph cannot follow.
    writes_through_view: bool = False


class _DataflowRecorder(TorchDispatchMode):
    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.ids: dict[int, int] = {}
        self.alive: list[torch.Tensor] = []   # keeps id(t) from being reused while we record

    def fresh(self, t: torch.Tensor) -> int:
        vid = len(self.alive)
        self.alive.append(t)
        self.ids[id(t)] = vid
        self.graph.shapes[vid] = tuple(t.shape)
        self.graph.dtypes[vid] = dtype_name(t.dtype)
        return vid

    def value_id(self, t: torch.Tensor) -> int:
        # A tensor no call we saw produced (a constant captured by the module): a fresh leaf.
        return self.ids[id(t)] if id(t) in self.ids else self.fresh(t)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        # Same order as AtenCall.inputs: positional tensors (lists flattened), then kwargs.
        in_ids: list[int] = []
        inputs: list[TensorMeta] = []
        scalars: list[Any] = []
        kinds: list[str] = []
        for a in args:
            if isinstance(a, torch.Tensor):
                in_ids.append(self.value_id(a))
                inputs.append(_meta(a))
                kinds.append("tensor")
            elif isinstance(a, (list, tuple)) and a and all(isinstance(x, torch.Tensor) or x is None for x in a):
                in_ids += [self.value_id(x) for x in a if x is not None]
                inputs += [_meta(x) for x in a if x is not None]
                kinds.append("tensors")
            else:
                scalars.append(_plain(a))
                kinds.append("scalar")
        for v in kwargs.values():
            if isinstance(v, torch.Tensor):
                in_ids.append(self.value_id(v))
                inputs.append(_meta(v))
        name = func.overloadpacket.__name__
        if name.endswith("_") and args and isinstance(args[0], torch.Tensor) and args[0]._is_view():
            self.graph.writes_through_view = True
        out = func(*args, **kwargs)
        flat, _ = tree_flatten(out)
        tensors = [t for t in flat if isinstance(t, torch.Tensor)]
        # Every output is a new value, even when the op wrote in place into an input.
        out_ids = [self.fresh(t) for t in tensors]
        free = bool(func.is_view) or name in FREE_OPS or (name.endswith("_") and name[:-1] in FREE_OPS)
        call = AtenCall(name=name, overload=func._overloadname, inputs=inputs, outputs=[_meta(t) for t in tensors],
                        scalars=scalars, kwargs={k: _plain(v) for k, v in kwargs.items() if not isinstance(v, torch.Tensor)},
                        arg_kinds=kinds, free=free)
        node = Node(call=call, args=in_ids, outs=out_ids)
        self.graph.nodes.append(node)
        for vid in out_ids:
            self.graph.producer[vid] = node
        return out


def _meta(t: torch.Tensor) -> TensorMeta:
    value = float(t.detach().reshape(()).item()) if t.numel() == 1 and not t.is_complex() else None
    return TensorMeta(shape=tuple(t.shape), dtype=dtype_name(t.dtype), contiguous=t.is_contiguous(), value=value)


def _plain(v: Any) -> Any:
    if isinstance(v, torch.dtype):
        return dtype_name(v)
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (int, float, bool, str)) or v is None:
        return v
    return str(v)


def trace_graph(model: torch.nn.Module, args: list) -> Graph:
    graph = Graph()
    recorder = _DataflowRecorder(graph)
    for position, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            graph.inputs[recorder.fresh(a)] = position
        else:
            graph.scalar_args[position] = a
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        graph.params[recorder.fresh(t)] = name.replace(".", "_")
    with torch.no_grad(), recorder:
        out = model(*args)
    flat, _ = tree_flatten(out)
    graph.outputs = [recorder.value_id(t) for t in flat if isinstance(t, torch.Tensor)]
    return graph
