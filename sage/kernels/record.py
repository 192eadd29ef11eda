"""Recording the aten operators a `forward` dispatches, with their dataflow.

Eager PyTorch (and torch_npu) launches one device kernel per non-view aten operator, so
the recorded list is exactly the sequence of vendor kernels the reference would run.
View operators only change metadata and cost nothing; so do allocations (`empty*`) and the
wrapping of Python scalars into 0-d tensors, which torch_npu passes to kernels as
attributes rather than launching anything (the registry marks them `free`).

One recorder serves both users: the reference model reads the calls (`record_forward`),
the offline compiler also needs which call's output feeds which call's input
(`trace_graph` numbers every tensor value it sees).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import torch
from pydantic import BaseModel
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_unflatten

from sage.kernels.numpy_twins import host_numpy_twins
from sage.kernels.registry import base_name, extension_decomposition, is_free, op_def


class TensorMeta(BaseModel):
    shape: tuple[int, ...]
    dtype: str                       # numpy-style name: float32, float16, bfloat16, int64, bool
    contiguous: bool = True
    value: float | None = None       # the value of a 1-element tensor (a folded constant)
    origin: str | None = None        # "arg:<i>" or "param:<name>" when it is a forward input itself

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * dtype_size(self.dtype)


class AtenCall(BaseModel):
    name: str                        # overload packet, e.g. "add", "_softmax", "native_layer_norm"
    overload: str                    # "Tensor", "Scalar", "default", ...
    inputs: list[TensorMeta]         # tensor arguments in order (lists of tensors flattened)
    outputs: list[TensorMeta]
    scalars: list[Any]               # non-tensor positional arguments in order (ints, floats, lists, None)
    kwargs: dict[str, Any] = {}      # non-tensor keyword arguments (dtype as its name)
    arg_kinds: list[str] = []        # per positional argument: "tensor", "tensors" or "scalar"
    free: bool = False               # a view or allocation: no kernel launch

    @property
    def qualname(self) -> str:
        return f"{self.name}.{self.overload}"

    def describe(self) -> str:
        ins = ", ".join(f"{list(t.shape)}:{t.dtype}" for t in self.inputs)
        return f"{self.name}({ins})"


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
    # Where each value lives, as torch laid it out: element strides, the offset in its
    # storage, and which storage (values of one storage alias each other). A storage is
    # numbered by first sight; `storage_numel` is its size in elements of the value's dtype.
    strides: dict[int, tuple[int, ...]] = field(default_factory=dict)
    offsets: dict[int, int] = field(default_factory=dict)
    storage: dict[int, int] = field(default_factory=dict)
    storage_numel: dict[int, int] = field(default_factory=dict)
    # An in-place op wrote through a view (x[idx] = v on a slice): the write lands in the
    # view's base, which this value-numbered graph cannot follow.
    writes_through_view: bool = False
    # Tensors the forward captured (no call we saw produced them, not an input or a parameter):
    # a digest of each one's contents, and the contents of those of at most CAPTURED_BYTES.
    captured: dict[int, str] = field(default_factory=dict)
    captured_data: dict[int, torch.Tensor] = field(default_factory=dict)


# The largest captured constant whose contents a graph keeps (the compiler can bake it in).
CAPTURED_BYTES = 4096


# The recorder runs once per dispatched aten call, and a forward with a Python loop over its
# data (nms) dispatches tens of thousands: what it does per call is kept lean (names looked
# up once per dtype, a direct walk of the outputs instead of pytree's).
_DTYPE_NAMES: dict[torch.dtype, str] = {}
_DTYPE_SIZES = {"float64": 8, "int64": 8, "complex64": 8, "float32": 4, "int32": 4, "uint32": 4,
                "float16": 2, "bfloat16": 2, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1,
                "bool": 1, "complex128": 16, "float8_e4m3fn": 1, "float8_e5m2": 1}


def dtype_name(dt: torch.dtype) -> str:
    name = _DTYPE_NAMES.get(dt)
    if name is None:
        name = _DTYPE_NAMES[dt] = str(dt).removeprefix("torch.")
    return name


def dtype_size(name: str) -> int:
    return _DTYPE_SIZES.get(name, 4)


def _meta(t: torch.Tensor, origins: dict[int, str] | None = None,
          made: dict[tuple, TensorMeta] | None = None) -> TensorMeta:
    """The tensor's metadata; with `made`, one TensorMeta per distinct content (nms's 120,000
    operands have 11,000 distinct ones, and validating a new model each time was a fifth of
    its trace). Nothing changes a TensorMeta once made, so the calls may share it."""
    value = None
    if t.numel() == 1 and t.is_cpu and not t.is_complex():
        value = float(t.item())
    shape, contiguous, origin = tuple(t.shape), t.is_contiguous(), (origins or {}).get(id(t))
    if made is None:
        return TensorMeta(shape=shape, dtype=dtype_name(t.dtype), contiguous=contiguous, value=value, origin=origin)
    # -0.0 == 0.0 (and hashes alike) but prints apart: the sign is part of the key.
    key = (shape, t.dtype, contiguous, value, value is not None and math.copysign(1.0, value) < 0, origin)
    meta = made.get(key)
    if meta is None:
        meta = made[key] = TensorMeta(shape=shape, dtype=dtype_name(t.dtype), contiguous=contiguous, value=value,
                                      origin=origin)
    return meta


def _written_arguments(func: Any, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The tensor arguments the op's schema marks as written (`Tensor(a!)`), in schema order."""
    written: list[torch.Tensor] = []
    for i, arg in enumerate(func._schema.arguments):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        value = args[i] if i < len(args) else kwargs.get(arg.name)
        written += [t for t in _out_tensors(value) if not any(t is w for w in written)]
    return written


def _out_tensors(out: Any) -> list[torch.Tensor]:
    """The tensors of an aten op's result (a tensor, or a tuple or list of them and None)."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for item in out for t in _out_tensors(item)]
    return []


def _plain(v: Any) -> Any:
    if isinstance(v, torch.dtype):
        return dtype_name(v)
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (int, float, bool, str)) or v is None:
        return v
    return str(v)


def _storage_key(t: torch.Tensor, storage: torch.UntypedStorage, nbytes: int, vid: int) -> int:
    """What tells t's storage apart: its data pointer; a meta tensor's storage object (all
    meta storages have a null pointer); an empty storage is its own (`vid`)."""
    if not nbytes:
        return -vid - 1
    return storage._cdata if t.is_meta else storage.data_ptr()


def _view_key(t: torch.Tensor, storage_key: int) -> tuple:
    return (storage_key, t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)


def _is_tensor_list(a: Any) -> bool:
    return isinstance(a, (list, tuple)) and bool(a) and all(isinstance(x, torch.Tensor) or x is None for x in a)


_OP_FACTS: dict[Any, tuple[str, str, bool]] = {}


def _op_facts(func: Any) -> tuple[str, str, bool]:
    """An aten overload's name, overload name and whether it launches nothing, looked up once
    per overload (the recorder asks for every dispatched call)."""
    facts = _OP_FACTS.get(func)
    if facts is None:
        name = func.overloadpacket.__name__
        facts = _OP_FACTS[func] = (name, func._overloadname, bool(func.is_view) or is_free(name))
    return facts


@lru_cache(maxsize=None)             # asked on every decomposed-mode call of such an op
def _composite_body(func):
    """torch's own decomposition of an aten op the registry cannot lower: inside another
    op's dispatch (a stand-in's body runs there) autograd keys are excluded, so
    CompositeImplicitAutograd ops (matmul, einsum, isfinite, where.ScalarOther, to) reach a
    mode whole; at the top level autograd would have decomposed them the same way."""
    if func.namespace == "aten" and func.has_kernel_for_dispatch_key(torch._C.DispatchKey.CompositeImplicitAutograd):
        return func.decompose
    return None


class _Recorder(TorchDispatchMode):
    """Records every dispatched call; with a `graph`, also numbers the tensor values."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ in dynamo's disable() unless told not to,
        # and the first call of that wrapper imports torch._dynamo (1.2 s per process) and
        # then costs a frame-hook swap per aten call. Nothing here is ever compiled.
        return False

    def __init__(self, origins: dict[int, str], graph: Graph | None = None, decompose: bool = False,
                 max_launches: int | None = None) -> None:
        super().__init__()
        self.decompose = decompose
        self.max_launches = max_launches
        self.launches = 0
        self.calls: list[AtenCall] = []
        self.origins = origins
        self.graph = graph
        self.ids: dict[int, int] = {}
        self.alive: list[torch.Tensor] = []   # keeps id(t) and storages from being reused while values are numbered
        self.storages: dict[int, int] = {}    # storage data pointer -> storage number
        # (storage pointer, offset, shape, stride, dtype) -> the latest value seen with that view
        self.views: dict[tuple, int] = {}
        self.metas: dict[tuple, TensorMeta] | None = {}   # _meta's: one TensorMeta per distinct content

    def fresh(self, t: torch.Tensor) -> int:
        assert self.graph is not None
        vid = len(self.alive)
        self.alive.append(t)
        self.ids[id(t)] = vid
        self.graph.shapes[vid] = tuple(t.shape)
        self.graph.dtypes[vid] = dtype_name(t.dtype)
        self.graph.strides[vid] = tuple(t.stride())
        self.graph.offsets[vid] = t.storage_offset()
        storage = t.untyped_storage()
        nbytes = storage.nbytes()
        # Empty storages may share a null pointer: each is its own. Meta tensors (a reference
        # timed on sized inputs) all have a null pointer: their storage object tells them apart.
        key = _storage_key(t, storage, nbytes, vid)
        self.graph.storage[vid] = self.storages.setdefault(key, len(self.storages))
        self.graph.storage_numel[vid] = nbytes // max(t.element_size(), 1)
        self.views[_view_key(t, key)] = vid
        return vid

    def value_id(self, t: torch.Tensor) -> int:
        if id(t) in self.ids:
            return self.ids[id(t)]
        # Another Python object over a value we saw, made without a dispatched call
        # (nn.Parameter(t), a `.data` rebinding): that value.
        storage = t.untyped_storage()
        same = self.views.get(_view_key(t, _storage_key(t, storage, storage.nbytes(), -1)))
        if same is not None:
            self.alive.append(t)
            self.ids[id(t)] = same
            return same
        # A tensor no call we saw produced (a constant captured by the module): a fresh leaf.
        vid = self.fresh(t)
        if self.graph is not None:
            data = t.detach().reshape(-1).clone()
            raw = data.view(torch.uint8) if data.element_size() > 0 and data.numel() else data
            self.graph.captured[vid] = hashlib.sha1(raw.numpy().tobytes()).hexdigest()
            if data.numel() * data.element_size() <= CAPTURED_BYTES:
                self.graph.captured_data[vid] = data.reshape(t.shape)
        return vid

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name, overload, free = _op_facts(func)
        if self.decompose:
            out = self._decomposed(func, name, args, kwargs)
            if out is not NotImplemented:
                return out
        # Tensor operands in AtenCall.inputs order: positional (lists flattened), then kwargs.
        # Their metadata is taken before the call runs, so an in-place op shows what it read.
        operands: list[torch.Tensor] = []
        scalars: list[Any] = []
        kinds: list[str] = []
        for a in args:
            if isinstance(a, torch.Tensor):
                operands.append(a)
                kinds.append("tensor")
            elif _is_tensor_list(a):
                operands += [x for x in a if x is not None]
                kinds.append("tensors")
            else:
                scalars.append(_plain(a))
                kinds.append("scalar")
        operands += [v for v in kwargs.values() if isinstance(v, torch.Tensor)]
        inputs = [_meta(t, self.origins, self.metas) for t in operands]
        in_ids = [self.value_id(t) for t in operands] if self.graph is not None else []
        if self.graph is not None and name.endswith("_") and args and isinstance(args[0], torch.Tensor) \
                and args[0]._is_view():
            self.graph.writes_through_view = True
        out = func(*args, **kwargs)
        tensors = _out_tensors(out)
        if not tensors:
            # An op that returns nothing and writes into its arguments (a custom op declared with
            # mutates_args, such as a torch_npu stand-in's in-place update): what it wrote is its
            # result, else the graph would hold the inputs unchanged and drop the op as dead.
            tensors = _written_arguments(func, args, kwargs)
        outputs = [_meta(t, None, self.metas) for t in tensors]
        call = AtenCall(name=name, overload=overload, inputs=inputs, outputs=outputs,
                        scalars=scalars, kwargs={k: _plain(v) for k, v in kwargs.items() if not isinstance(v, torch.Tensor)},
                        arg_kinds=kinds, free=free)
        self.calls.append(call)
        if not free and self.max_launches is not None:
            self.launches += 1
            if self.launches > self.max_launches:
                raise TooManyLaunches(self.max_launches)
        if self.graph is not None:
            # Every output is a new value, even when the op wrote in place into an input.
            node = Node(call=call, args=in_ids, outs=[self.fresh(t) for t in tensors])
            self.graph.nodes.append(node)
            for vid in node.outs:
                self.graph.producer[vid] = node
        return out


    def _decomposed(self, func, name: str, args, kwargs):
        """The op's registry decomposition, run under this recorder (its ops are recorded
        instead of the op), or NotImplemented when it has none for these arguments."""
        entry = op_def(name) if func.namespace == "aten" else None
        inplace = name.endswith("_") and base_name(name) != name
        if entry is not None:
            fn = entry.decompose_inplace if inplace else entry.decompose
        else:
            fn = extension_decomposition(f"{func.namespace}::{name}")
        if fn is None and (entry is None or not entry.lowers) and (composite := _composite_body(func)) is not None:
            with self:                   # torch's own: the op's dtypes by construction
                return composite(*args, **kwargs)
        if fn is None:
            return NotImplemented
        with self:
            out = fn(*args, **kwargs)
        if out is NotImplemented or inplace or func._schema.is_mutable:
            return out                   # an in-place result has its operand's dtype by definition
        return self._as_the_op_returns(func, name, args, kwargs, out)

    def _as_the_op_returns(self, func, name: str, args, kwargs, out):
        """The decomposition's results in the dtypes the op itself returns for these
        arguments. Its dtype rule is the op's own (mish_backward's CPU kernel returns its
        input's dtype, not the promoted one; meta kernels disagree with CPU on some), so the
        op is run once, unrecorded (the mode is off inside dispatch), and a result that
        differs is cast, the cast recorded. A shape or count that differs is a registry bug.

        The dtypes depend on the arguments' dtypes and kinds, not their sizes or values, so
        they are kept per such signature (`_result_dtypes`): a task's 50 cases of one dtype
        run the op once, not 100 times (each case is traced twice; level1/16_repeat's
        4-GB repeats spent 8.5 s of a 34 s compile running the op again)."""
        flat, spec = tree_flatten(out)
        got = [t for t in flat if isinstance(t, torch.Tensor)]
        key = _dtype_key(func, args, kwargs)
        dtypes_of = _result_dtypes.get(key) if key is not None else None
        if dtypes_of is None or len(dtypes_of) != len(got):
            truth, _ = tree_flatten(func(*args, **kwargs))
            want = [t for t in truth if isinstance(t, torch.Tensor)]
            if [tuple(t.shape) for t in got] != [tuple(t.shape) for t in want]:
                raise RuntimeError(f"the registry's decomposition of aten.{name} returns shapes "
                                   f"{[tuple(t.shape) for t in got]}, the op {[tuple(t.shape) for t in want]}")
            dtypes_of = tuple(t.dtype for t in want)
            if key is not None:
                _result_dtypes[key] = dtypes_of
        dtypes = iter(dtypes_of)
        with self:
            flat = [t.to(next(dtypes)) if isinstance(t, torch.Tensor) else t for t in flat]
        return tree_unflatten(flat, spec)


# func, argument signature (_dtype_key) -> the dtypes the op returns (_as_the_op_returns)
_result_dtypes: dict[tuple, tuple] = {}


def _dtype_key(func, args, kwargs) -> tuple | None:
    """What an op's result dtypes can depend on: each tensor's dtype and whether it is 0-dim
    (a wrapped number promotes differently), each other argument's type, and the value of
    those whose value can set a dtype (a dtype, a string mode, a bool, None). None when an
    argument is something else (not cached)."""
    def part(a):
        if isinstance(a, torch.Tensor):
            return ("T", a.dtype, a.dim() == 0)
        if a is None or isinstance(a, (bool, str, torch.dtype, torch.layout, torch.memory_format)):
            return ("V", a)
        if isinstance(a, (int, float, complex)):
            return ("N", type(a))
        if isinstance(a, (list, tuple)):
            inner = tuple(part(x) for x in a)
            return None if None in inner else ("L", inner)
        return None
    parts = tuple(part(a) for a in args) + tuple((k, part(v)) for k, v in sorted(kwargs.items()))
    if None in parts or any(p[1] is None for p in parts[len(args):]):
        return None
    return (func, parts)


def flat_args(args: list) -> list:
    """The forward's arguments with each list (or tuple) of tensors spliced in, one position
    per tensor (torch.cat's argument): the positions of the traced graph's inputs."""
    flat: list = []
    for a in args:
        if is_tensor_list(a):
            flat.extend(a)
        else:
            flat.append(a)
    return flat


def is_tensor_list(a: Any) -> bool:
    return isinstance(a, (list, tuple)) and bool(a) and all(isinstance(x, torch.Tensor) for x in a)


def _origins(model: torch.nn.Module, args: list) -> dict[int, str]:
    origins = {id(a): f"arg:{i}" for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
    for name, p in list(model.named_parameters()) + list(model.named_buffers()):
        origins[id(p)] = "param:" + name.replace(".", "_")
    return origins


class TooManyLaunches(Exception):
    """record_forward(max_launches=N) stopped the forward at its (N + 1)-th launching call."""


def record_forward(model: torch.nn.Module, args: list, *,
                   max_launches: int | None = None) -> tuple[list[AtenCall], list[TensorMeta]]:
    """Runs `model(*args)` once on the CPU: the aten calls it dispatched (views and
    allocations marked `free`) and the metadata of its outputs. Operands that are forward
    arguments or model parameters carry their `origin` ("arg:0", "param:weight").
    `max_launches`: raise TooManyLaunches as soon as more calls than this launch a kernel
    (a caller that only wants forwards of one op need not record a long one to the end)."""
    rec = _Recorder(_origins(model, args), max_launches=max_launches)
    with torch.no_grad(), rec:
        out = model(*args)
    if max_launches is not None and rec.launches > max_launches:
        raise TooManyLaunches(max_launches)     # the forward caught the first one itself
    flat, _ = tree_flatten(out)
    return rec.calls, [_meta(t) for t in flat if isinstance(t, torch.Tensor)]


def record_aten(model: torch.nn.Module, args: list, *, include_free: bool = True) -> list[AtenCall]:
    """The aten calls of `model(*args)`; `include_free=False` drops views and allocations."""
    calls, _ = record_forward(model, args)
    return calls if include_free else [c for c in calls if not c.free]


def trace_graph(model: torch.nn.Module, args: list, *, decompose: bool = False) -> Graph:
    """The forward as a dataflow graph over numbered tensor values; with `decompose`, ops
    the registry decomposes are recorded as their decompositions."""
    graph = Graph()
    flat = flat_args(args)
    recorder = _Recorder(_origins(model, flat), graph, decompose)
    for position, a in enumerate(flat):
        if isinstance(a, torch.Tensor):
            graph.inputs[recorder.fresh(a)] = position
        else:
            graph.scalar_args[position] = a
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        graph.params[recorder.fresh(t)] = name.replace(".", "_")
    with torch.no_grad(), recorder, host_numpy_twins():
        out = model(*args)
    flat, _ = tree_flatten(out)
    graph.outputs = [recorder.value_id(t) for t in flat if isinstance(t, torch.Tensor)]
    return graph
