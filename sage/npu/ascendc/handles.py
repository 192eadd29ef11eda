"""Capability handles: what a kernel holds instead of simulator objects.

Every object a kernel can reach through the DSL (GM tensors on the host, GlobalTensor,
LocalTensor, TQue, TBuf, TPipe, Matmul, a kernel and its launcher) is a `Handle`: a
frozen object with one slot, an integer id, no ``__dict__``, that cannot be subclassed
outside this package. The simulator object it stands for (with its numpy arrays, its
core, its queues) lives in `_OBJECTS`, a table of this module that kernel code cannot
name. Every DSL call translates handles to their objects on the way in and objects to new
handles on the way out, so no reference to simulator state ever reaches the kernel's
namespace, whatever attribute a kernel manages to read.

The table is per run (`reset`); a handle made inside one block and used in another, one
made on the host (in ``forward``) and used inside a block, or one kept from an earlier
run, is refused: on the chip a block cannot touch another core's buffers, and a queue or
buffer made outside every block would otherwise carry one block's local memory into the
next. GM tensors and kernels are the exception: they belong to the whole run.

What goes *into* a DSL call is checked too: handles, plain numbers and strings, dtypes,
DSL enums, parameter structs and (for ``kernel``) functions, nothing else. An object of a
class the kernel defined would otherwise reach DSL code, which reads attributes of its
arguments (``params.srcStride``) without asking their type.
"""

from __future__ import annotations

import enum
import functools
import itertools
import sys
import types
from typing import Any, Callable

import numpy as np

from sage.npu.errors import LaunchError
from sage.npu.sim import core as core_mod
from sage.npu.sim import lanes
from sage.npu.sim.lanes import LANE_READY, LaneValue, NotLaneable
from sage.npu.sim.masks import CALLS, MASKABLE

# handle id -> (simulator object, the core it belongs to or None: valid anywhere in the run); one
# table, so translating a handle is one lookup
_OBJECTS: dict[int, tuple[Any, Any]] = {}
_BY_CORE: dict[int, list[int]] = {}
_IDS = itertools.count(1)
_PUBLIC: dict[type, type] = {}    # simulator class -> its handle class
_HANDLE_TYPES: set[type] = set()
_SESSION_LEVEL: set[type] = set()  # classes whose objects live for the whole run (GM tensors, kernels)
_PLAIN = {type(None), bool, int, float, complex, str, LaneValue}  # (a LaneValue: one value per lane)
_PLAIN_BASES: tuple[type, ...] = (enum.Enum, np.dtype)
_HOST = object()                   # the owner of block-level handles made outside every block
_ARGUMENT_TYPES: set[type] = {types.FunctionType}  # besides _PLAIN and handles; params added on first use
_MAX_ARGUMENT_DEPTH = 8            # lists of lists of ... of DSL values (masks, shapes) are shallow
# The argument classes `api` passes as they are without asking unwrap(): _PLAIN but LaneValue (whose
# group unwrap() checks), then each enum, dtype, numpy scalar and parameter class unwrap() has
# accepted once (_accept); a set that only grows, shared by reference with every `api` wrapper.
_PASSING: set[type] = _PLAIN - {LaneValue} | {types.FunctionType}


class Handle:
    """Base of every DSL handle: one integer slot, immutable, not subclassable by kernels."""

    __slots__ = ("_hid",)

    def __init_subclass__(cls, **kwargs):
        if not cls.__module__.startswith(__name__.rsplit(".", 1)[0]):
            raise TypeError(f"{cls.__bases__[0].__name__} cannot be subclassed outside the DSL")
        super().__init_subclass__(**kwargs)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} handles are immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} handles are immutable")

    def __repr__(self) -> str:
        return repr(unwrap(self))

    def __reduce__(self):
        raise TypeError("DSL handles cannot be pickled")


# Handle's `_hid` slot set directly through its descriptor (Handle.__setattr__ refuses every write;
# object.__setattr__ would look the slot up again on every handle a DSL call returns)
_set_hid = Handle._hid.__set__


def reset() -> None:
    """Forget every object: called at the start and end of each run."""
    _OBJECTS.clear()
    _BY_CORE.clear()


def end_block(core: Any) -> None:
    """The block on `core` is done: its handles die with it."""
    for hid in _BY_CORE.pop(id(core), ()):
        _OBJECTS.pop(hid, None)


def wrap(obj: Any) -> Any:
    """A new handle for simulator object `obj`; plain values pass through, anything else is a
    bug in the DSL (it would hand the kernel a reference to simulator state) and raises."""
    if obj is None:
        return None
    cls = _PUBLIC.get(obj.__class__)
    if cls is None:
        if obj.__class__ in _PLAIN or isinstance(obj, _PLAIN_BASES):
            return obj
        if obj.__class__ is tuple or obj.__class__ is list:
            return obj.__class__(wrap(o) for o in obj)
        raise TypeError(f"internal: a DSL call returned a {type(obj).__name__} to kernel code")
    hid = next(_IDS)
    handle = object.__new__(cls)
    _set_hid(handle, hid)
    if obj.__class__ in _SESSION_LEVEL:
        _OBJECTS[hid] = (obj, None)
        return handle
    core = core_mod._current
    if core is None:
        _OBJECTS[hid] = (obj, _HOST)
    else:
        _OBJECTS[hid] = (obj, core)
        owned = _BY_CORE.get(id(core))
        if owned is None:
            owned = _BY_CORE[id(core)] = []
        owned.append(hid)
    return handle


def unwrap(handle: Any, depth: int = 0) -> Any:
    """The simulator object behind `handle`; DSL values pass through, anything else raises."""
    cls = handle.__class__
    if cls not in _HANDLE_TYPES:
        if cls is LaneValue and handle.g is not lanes._group:
            lanes.foreign(handle)  # a lane group's value kept from another group or launch
        if cls in _PLAIN or cls in _ARGUMENT_TYPES:
            return handle
        if isinstance(handle, _PLAIN_BASES):
            _accept(cls)  # an enum or dtype class: every value of it passes (and _plain says so at once)
            return handle
        if _is_param(cls):
            return handle
        if cls is tuple or cls is list:
            if depth >= _MAX_ARGUMENT_DEPTH:
                raise LaunchError(f"a DSL call was given lists nested more than {_MAX_ARGUMENT_DEPTH} deep")
            return cls(unwrap(h, depth + 1) for h in handle)
        raise LaunchError(f"a DSL call takes tensors, queues, numbers, strings, dtypes, DSL enums and parameter "
                          f"structs, not a {getattr(cls, '__name__', 'object')}")
    entry = _OBJECTS.get(handle._hid)
    if entry is None:
        raise LaunchError(f"this {cls.__name__} belongs to another block or an earlier run: a block can "
                          "only use the tensors and queues it created (and GM tensors passed to the kernel)")
    obj, owner = entry
    if owner is not None:
        here = core_mod._current
        if owner is not (_HOST if here is None else here):
            where = "on the host (in forward)" if owner is _HOST else "in another block"
            raise LaunchError(f"this {cls.__name__} was created {where}: a block can only use the local buffers, "
                              "queues and GlobalTensors it created itself (GM tensors come in as kernel arguments)")
    return obj


def _is_param(cls: type) -> bool:
    """A DSL parameter struct (registered on first sight: params.py imports nothing of this module)."""
    if cls in writable_types() or issubclass(cls, (np.number, np.bool_)):  # numpy scalars are values too
        _accept(cls)
        return True
    return False


def _accept(cls: type) -> None:
    """Every value of `cls` is a DSL argument as it is (an enum, dtype, numpy scalar or parameter class)."""
    _ARGUMENT_TYPES.add(cls)
    _PASSING.add(cls)


def api(fn: Callable) -> Callable:
    """The kernel-facing form of DSL function `fn`: handles in, handles out.

    This runs on every DSL call a kernel makes (block by block, 28 per row of the softmax
    example), so its common case, a call inside a block without keywords, is one Python
    frame: the arguments are translated inline (`_plain` for the rest), and the names it
    needs are bound once here, not looked up as globals per call."""
    getframe, plain, wrap_ = sys._getframe, _plain, wrap
    handle_types, objects, passing = _HANDLE_TYPES, _OBJECTS, _PASSING

    @functools.wraps(fn)
    def call(*args, **kwargs):
        core = core_mod._current
        if core is None or kwargs:
            return _api_slow(fn, core, getframe(1), args, kwargs)
        if core.lanes is not None:
            if fn not in LANE_READY:
                raise NotLaneable(fn.__name__)
            if core.mask is not None and fn not in MASKABLE:  # (an arm under a lane mask: sim/masks.py)
                raise core.mask.diverge()
        # handles of this core (or of the run) to their objects inline; anything else through
        # unwrap(), which explains what is wrong (`_plain`, the same rule)
        out = []
        for a in args:
            cls = a.__class__
            if cls in handle_types:
                entry = objects.get(a._hid)
                if entry is None or (entry[1] is not None and entry[1] is not core):
                    out = plain(args)
                    break
                a = entry[0]
            elif cls not in passing:
                out = plain(args)
                break
            out.append(a)
        outer = core.caller
        core.caller = getframe(1)
        try:
            result = fn(*out)
        finally:
            core.caller = outer
        return None if result is None else wrap_(result)
    if fn in MASKABLE:
        CALLS.add(call)
    return call


def _api_slow(fn: Callable, core: Any, frame: Any, args: tuple, kwargs: dict) -> Any:
    """`api`'s call outside a block (on the host) or with keywords."""
    if core is not None:
        if core.lanes is not None:
            if fn not in LANE_READY:
                raise NotLaneable(fn.__name__)
            if core.mask is not None and fn not in MASKABLE:
                raise core.mask.diverge()
        outer, core.caller = core.caller, frame
    try:
        if kwargs:
            result = fn(*_plain(args), **{k: unwrap(v) for k, v in kwargs.items()})
        else:
            result = fn(*_plain(args))
    finally:
        if core is not None:
            core.caller = outer
    return None if result is None else wrap(result)


def _plain(args: tuple) -> list:
    """`args` with every handle replaced by its object; the common case (a live handle of this
    core) inline, every other case through unwrap(), which explains what is wrong."""
    handle_types, objects, current = _HANDLE_TYPES, _OBJECTS, core_mod._current
    out = []
    for a in args:
        cls = a.__class__
        if cls in handle_types:
            entry = objects.get(a._hid)
            a = entry[0] if entry is not None and (entry[1] is None or entry[1] is current) else unwrap(a)
        elif (cls not in _PLAIN and cls not in _ARGUMENT_TYPES) or cls is LaneValue:
            a = unwrap(a)  # lists and tuples unwrapped, other DSL values checked, anything else refused
        out.append(a)
    return out


def public(impl: type, *, session_level: bool = False, passthrough: tuple[str, ...] = ()) -> type:
    """The handle class of simulator class `impl`: the members it lists in its ``API`` tuple
    (methods, properties, and ``__getitem__``/``__call__``/... where listed), forwarded.

    `passthrough` methods receive their arguments untranslated (a kernel launch hands the
    kernel function the very handles the host passed).
    """
    members: dict[str, Any] = {"__slots__": (), "__doc__": impl.__doc__, "__module__": impl.__module__}
    for name in impl.API:
        attr = getattr(impl, name)
        if isinstance(attr, property):
            members[name] = property(_forward_property(attr.fget), doc=attr.__doc__)
        else:
            members[name] = _forward_method(attr, name in passthrough)
    members["__init__"] = _constructor(impl)
    cls = type(impl.__name__, (Handle,), members)
    _PUBLIC[impl] = cls
    _HANDLE_TYPES.add(cls)
    if session_level:
        _SESSION_LEVEL.add(impl)
    return cls


def _constructor(impl: type) -> Callable:
    def __init__(self, *args, **kwargs):
        core = core_mod._current
        if core is not None:
            if core.lanes is not None and (impl not in LANE_READY or core.mask is not None):
                if impl not in LANE_READY:
                    raise NotLaneable(impl.__name__)
                raise core.mask.diverge()  # (only maskable calls run under a lane mask: sim/masks.py)
            outer, core.caller = core.caller, sys._getframe(1)
        try:
            obj = impl(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})
        finally:
            if core is not None:
                core.caller = outer
        made = wrap(obj)
        _set_hid(self, made._hid)
    __init__.__doc__ = impl.__init__.__doc__
    __init__.__wrapped__ = impl.__init__  # for inspect.signature (the reference card)
    return __init__


def _forward_method(fn: Callable, passthrough: bool) -> Callable:
    if passthrough:
        @functools.wraps(fn)
        def method(self, *args, **kwargs):
            core = core_mod._current
            if core is not None:
                if core.lanes is not None and (fn not in LANE_READY or core.mask is not None):
                    if fn not in LANE_READY:
                        raise NotLaneable(fn.__name__)
                    raise core.mask.diverge()  # (only maskable calls run under a lane mask: sim/masks.py)
                outer, core.caller = core.caller, sys._getframe(1)
            try:
                return wrap(fn(unwrap(self), *args, **kwargs))
            finally:
                if core is not None:
                    core.caller = outer
    else:
        method = api(fn)  # the handle comes in as the first argument, translated like the others
    return method


def _forward_property(fget: Callable) -> Callable:
    def get(self):
        core = core_mod._current
        if core is not None:
            if core.lanes is not None and (fget not in LANE_READY or core.mask is not None):
                if fget not in LANE_READY:
                    raise NotLaneable(fget.__name__)
                raise core.mask.diverge()  # (only maskable calls run under a lane mask: sim/masks.py)
            outer, core.caller = core.caller, sys._getframe(1)
        try:
            return wrap(fget(unwrap(self)))
        finally:
            if core is not None:
                core.caller = outer
    return get


def public_attributes() -> dict[type, frozenset[str]]:
    """Per handle class, the attribute names a kernel may read (its public API)."""
    return {cls: frozenset(n for n in dir(cls) if not n.startswith("_")) for cls in _HANDLE_TYPES}


def writable_types() -> tuple[type, ...]:
    """DSL types whose fields a kernel may set: every parameter struct, as in Ascend C (those of
    params.py and of the high-level APIs alike: all are made by params.dataclass)."""
    from sage.npu.ascendc import params

    return tuple(t for t in params._Params.__subclasses__() if "__slots__" in t.__dict__ and
                 "__dataclass_fields__" in t.__dict__)


def subscriptable_types() -> tuple[type, ...]:
    return tuple(cls for cls in _HANDLE_TYPES if "__getitem__" in cls.__dict__)


def handle_types() -> set[type]:
    """Every handle class (immutable to kernel code)."""
    return _HANDLE_TYPES


def is_handle(value: Any) -> bool:
    return value.__class__ in _HANDLE_TYPES
