"""Recording the aten operators a reference `forward` dispatches.

Eager PyTorch (and torch_npu) launches one device kernel per non-view aten operator, so
the recorded list is exactly the sequence of vendor kernels the reference would run.
View operators only change metadata and cost nothing; so do allocations (`empty*`) and the
wrapping of Python scalars into 0-d tensors, which torch_npu passes to kernels as
attributes rather than launching anything.
"""

from __future__ import annotations

from typing import Any

import torch
from pydantic import BaseModel
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

# Operators that are free even when their schema does not say "view": metadata-only or
# allocation-only.
FREE_OPS = {
    "view", "_unsafe_view", "reshape", "_reshape_alias", "expand", "expand_as", "permute",
    "transpose", "t", "slice", "select", "alias", "unsqueeze", "squeeze", "as_strided",
    "detach", "lift_fresh", "split", "split_with_sizes", "unbind", "chunk", "narrow",
    "diagonal", "unfold", "view_as", "view_as_real", "view_as_complex", "real", "imag",
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "_to_dense",
    "movedim", "swapaxes", "unflatten", "flatten", "numpy_T", "mT", "mH", "adjoint",
    "resolve_conj", "resolve_neg", "set_", "_local_scalar_dense", "item", "is_nonzero",
    "sym_size", "sym_stride", "sym_numel", "size", "stride", "dim", "lift_fresh_copy",
    "scalar_tensor",
}


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


def dtype_name(dt: torch.dtype) -> str:
    return str(dt).removeprefix("torch.")


def dtype_size(name: str) -> int:
    return {"float64": 8, "int64": 8, "complex64": 8, "float32": 4, "int32": 4, "uint32": 4,
            "float16": 2, "bfloat16": 2, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1,
            "bool": 1, "complex128": 16, "float8_e4m3fn": 1, "float8_e5m2": 1}.get(name, 4)


def _meta(t: torch.Tensor, origins: dict[int, str] | None = None) -> TensorMeta:
    value = None
    if t.numel() == 1 and t.device.type == "cpu" and not t.is_complex():
        value = float(t.detach().reshape(()).item())
    return TensorMeta(shape=tuple(t.shape), dtype=dtype_name(t.dtype), contiguous=t.is_contiguous(), value=value,
                      origin=(origins or {}).get(id(t)))


def _plain(v: Any) -> Any:
    if isinstance(v, torch.dtype):
        return dtype_name(v)
    if isinstance(v, (torch.device, torch.layout, torch.memory_format)):
        return str(v)
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (int, float, bool, str)) or v is None:
        return v
    return str(v)


class _Recorder(TorchDispatchMode):
    def __init__(self, origins: dict[int, str]) -> None:
        super().__init__()
        self.calls: list[AtenCall] = []
        self.origins = origins

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        inputs, scalars, kinds = [], [], []
        for a in args:
            if isinstance(a, torch.Tensor):
                inputs.append(_meta(a, self.origins))
                kinds.append("tensor")
            elif isinstance(a, (list, tuple)) and a and all(isinstance(x, torch.Tensor) or x is None for x in a):
                inputs += [_meta(x, self.origins) for x in a if x is not None]
                kinds.append("tensors")
            else:
                scalars.append(_plain(a))
                kinds.append("scalar")
        kw = {k: _plain(v) for k, v in kwargs.items() if not isinstance(v, torch.Tensor)}
        inputs += [_meta(v, self.origins) for v in kwargs.values() if isinstance(v, torch.Tensor)]
        flat_out, _ = tree_flatten(out)
        outputs = [_meta(t) for t in flat_out if isinstance(t, torch.Tensor)]
        free = bool(func.is_view) or name in FREE_OPS or (name.endswith("_") and name[:-1] in FREE_OPS)
        self.calls.append(AtenCall(name=name, overload=func._overloadname, inputs=inputs, outputs=outputs,
                                   scalars=scalars, kwargs=kw, arg_kinds=kinds, free=free))
        return out


def record_aten(model: torch.nn.Module, args: list, *, include_free: bool = True) -> list[AtenCall]:
    """Runs `model(*args)` once on the CPU and returns the aten operators it dispatched,
    views and allocations marked `free` (dropped when `include_free` is False)."""
    calls, _ = record_forward(model, args)
    return calls if include_free else [c for c in calls if not c.free]


def record_forward(model: torch.nn.Module, args: list) -> tuple[list[AtenCall], list[TensorMeta]]:
    """The aten calls and the metadata of the forward's outputs. Operands that are forward
    arguments or model parameters carry their `origin` ("arg:0", "param:weight")."""
    origins = {id(a): f"arg:{i}" for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
    for name, p in list(model.named_parameters()) + list(model.named_buffers()):
        origins[id(p)] = "param:" + name.replace(".", "_")
    rec = _Recorder(origins)
    with torch.no_grad(), rec:
        out = model(*args)
    flat, _ = tree_flatten(out)
    return rec.calls, [_meta(t) for t in flat if isinstance(t, torch.Tensor)]
