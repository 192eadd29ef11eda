"""What a kernel's functional run leaves behind, and its wire format.

A `RunTrace` is everything the timing needs: the GM allocations forward() made (sizes, in
order) and, per launch, each block's instruction records (layout in ``opcodes.py``). The
sandboxed child sends it to the parent as bytes; `decode` treats those bytes as hostile:
every field is range-checked against the allocations, the opcode table (which pipe, kind
and core type each op runs on), the preset's vector cost table and the record's own
position (a record may only wait for earlier records of its block, at most
`MAX_DEPS_PER_RECORD` of them), so a malformed
or forged trace is refused with a `TraceError` and can never crash or mislead the replay
into indexing outside what it was given.

Wire format: a JSON header (names, allocations, launches with their block record counts)
then, per block, a packed array of fixed-width records and a flat array of dependency
indices. No pickle: nothing the child writes is ever executed.
"""

from __future__ import annotations

import functools
import itertools
import json
from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np

from sage.npu.sim.core import PIPE_CORE, FIX, M, MTE1, MTE2, MTE3, S, V
from sage.npu.sim.opcodes import (AIC, AIV, BARRIER, CROSS_SET, CROSS_WAIT, FLAG, GM_COPY, GM_PATHS, KERNEL_TYPES,
                                  LOCAL_COPY, MAD, MARK, NORMAL, OPS, PATHS, SCALAR_GM, SCALAR_LOCAL, SYNC, SYNC_ALL,
                                  VEC)

RECORD = np.dtype([("pipe", "<i1"), ("kind", "<i1"), ("op", "<i1"), ("name", "<i4"), ("line", "<i4"),
                   ("a", "<i8"), ("b", "<i8"), ("c", "<i8"), ("d", "<i8"),
                   ("gbuf", "<i4"), ("glo", "<i8"), ("ghi", "<i8"), ("ndeps", "<i4")])
_FIELDS = ("pipe", "kind", "op", "a", "b", "c", "d", "gbuf", "glo", "ghi")   # record tuple order, before deps
MAX_HEADER_BYTES = 1 << 20
MAX_DEPS_PER_RECORD = 64       # a real instruction waits for at most a few per buffer it touches
_SIZE_LIMIT = 1 << 46          # no count or byte size in a record is larger than this

# Which pipe, record kind and core type each op runs on, as the DSL issues it. The replay takes
# all three from the record, so a trace that moved vector work onto idle MTE pipes, called its
# instructions barriers (no issue slot), or put its Mmads in AIV blocks (48 cores, not 24)
# would time itself faster than any real run.
_OP_PIPE = {VEC: V, MAD: M, SCALAR_LOCAL: S, SCALAR_GM: S, CROSS_WAIT: S, SYNC_ALL: S}  # others: any pipe
_OP_KIND = {FLAG: SYNC, CROSS_SET: SYNC, CROSS_WAIT: SYNC, SYNC_ALL: SYNC, MARK: BARRIER}  # others: NORMAL
_PATH_PIPE = {"GM->UB": MTE2, "GM->L1": MTE2, "UB->GM": MTE3, "L0C->GM": FIX,
              "UB->UB": V, "UB->L1": MTE3, "L1->L0A": MTE1, "L1->L0B": MTE1}
_PATH_CORE = {"GM->UB": AIV, "UB->GM": AIV, "UB->UB": AIV, "UB->L1": AIV,
              "GM->L1": AIC, "L0C->GM": AIC, "L1->L0A": AIC, "L1->L0B": AIC}


class TraceError(ValueError):
    """The bytes are not a trace a kernel run could have produced."""


@dataclass
class BlockTrace:
    """One core's instruction stream in a launch: logical block `block` (0..block_dim-1); in a
    mix launch each block is one AIC and its AIVs (`sub` 0, 1), which sync through CROSS_* records."""

    records: list[tuple]
    uses_cube: bool = False
    core_type: str = AIV
    block: int = 0
    sub: int = 0


@dataclass
class LaunchTrace:
    name: str
    block_dim: int
    blocks: list[BlockTrace] = field(default_factory=list)
    kernel_type: str = "AIV_ONLY"


@dataclass
class RunTrace:
    allocations: list[tuple[int, bool]] = field(default_factory=list)   # (bytes, is an input), in order
    launches: list[LaunchTrace] = field(default_factory=list)

    @property
    def instructions(self) -> int:
        return sum(1 for lt in self.launches for b in lt.blocks for r in b.records if r[1] == NORMAL)


def encode(trace: RunTrace) -> bytes:
    # Field by field into one preallocated array: a block of millions of records must not
    # need a second Python tuple per record on top of the ones the run already holds (the
    # child ran out of memory here, as an internal error, on 7 M barrier records).
    names: dict[str, int] = {}
    parts: list[bytes] = []
    launches = []
    for lt in trace.launches:
        blocks = []
        for block in lt.blocks:
            recs = block.records
            n = len(recs)
            arr = np.zeros(n, dtype=RECORD)
            deps = np.zeros(0, dtype="<i4")
            if n:
                for i, f in enumerate(_FIELDS):
                    arr[f] = np.fromiter(map(itemgetter(i), recs), dtype=np.int64, count=n)
                arr["name"] = np.fromiter((names.setdefault(nm, len(names)) for nm in map(itemgetter(11), recs)),
                                          dtype=np.int64, count=n)
                arr["line"] = np.fromiter(map(itemgetter(12), recs), dtype=np.int64, count=n)
                arr["ndeps"] = np.fromiter((len(d) if d else 0 for d in map(itemgetter(10), recs)),
                                           dtype=np.int64, count=n)
                deps = np.fromiter(itertools.chain.from_iterable(d for d in map(itemgetter(10), recs) if d),
                                   dtype="<i4")
            parts += [arr.tobytes(), deps.tobytes()]
            blocks.append({"records": n, "deps": len(deps), "cube": block.uses_cube,
                           "core": block.core_type, "block": block.block, "sub": block.sub})
        launches.append({"name": lt.name, "block_dim": lt.block_dim, "blocks": blocks, "type": lt.kernel_type})
    header = json.dumps({"names": list(names), "allocations": [[n, bool(i)] for n, i in trace.allocations],
                         "launches": launches}).encode()
    return len(header).to_bytes(8, "little") + header + b"".join(parts)


def decode(data: bytes | memoryview, max_records: int, vector_ops: int | None = None) -> RunTrace:
    """The trace in `data`, validated; TraceError for anything a real run cannot produce.

    `vector_ops`: how many vector cost keys the replaying preset has (a VEC record's field
    ``a`` indexes them); by default the smallest table of the shipped presets.
    """
    view = memoryview(data)
    if len(view) < 8:
        raise TraceError("trace shorter than its header length")
    hlen = int.from_bytes(view[:8], "little")
    if hlen > MAX_HEADER_BYTES or 8 + hlen > len(view):
        raise TraceError(f"trace header of {hlen} bytes is out of range")
    try:
        header = json.loads(bytes(view[8:8 + hlen]))
        names = [str(n)[:200] for n in _list(header["names"], 1 << 16)]
        allocations = [(_int(n, "allocation size"), bool(i)) for n, i in _list(header["allocations"], 1 << 16)]
        launch_specs = _list(header["launches"], 1 << 16)
    except (KeyError, TypeError, ValueError, RecursionError) as exc:
        raise TraceError(f"trace header is malformed: {exc}") from None
    sizes = np.array([n for n, _ in allocations] or [0], dtype=np.int64)
    pos = 8 + hlen
    total = 0
    launches = []
    blocks_read: list[tuple[BlockTrace, np.ndarray, np.ndarray]] = []
    for spec in launch_specs:
        try:
            lt = LaunchTrace(str(spec["name"])[:200], _int(spec["block_dim"], "block_dim"),
                             kernel_type=str(spec["type"]))
            blocks = _list(spec["blocks"], 1 << 16)
        except (KeyError, TypeError, ValueError) as exc:
            raise TraceError(f"launch entry is malformed: {exc}") from None
        if lt.kernel_type not in KERNEL_TYPES:
            raise TraceError(f"unknown kernel type {lt.kernel_type[:40]!r}")
        for b in blocks:
            try:
                n, ndeps, cube = _int(b["records"], "records"), _int(b["deps"], "deps"), bool(b["cube"])
                core, block_idx, sub = str(b["core"]), _int(b["block"], "block"), _int(b["sub"], "sub")
            except (KeyError, TypeError, ValueError) as exc:
                raise TraceError(f"block entry is malformed: {exc}") from None
            if core not in (AIV, AIC) or block_idx >= max(lt.block_dim, 1) or sub > 1 or cube != (core == AIC):
                raise TraceError(f"block entry out of range: core {core[:10]!r}, block {block_idx}, sub {sub}, "
                                 f"cube {cube}")
            total += n
            if total > max_records:
                raise TraceError(f"more than {max_records} records")
            if ndeps > n * MAX_DEPS_PER_RECORD:
                raise TraceError(f"{ndeps} dependencies for {n} records (at most {MAX_DEPS_PER_RECORD} each)")
            end = pos + n * RECORD.itemsize + ndeps * 4
            if end > len(view):
                raise TraceError("trace ends inside a block")
            arr = np.frombuffer(view[pos:pos + n * RECORD.itemsize], dtype=RECORD)
            deps = np.frombuffer(view[pos + n * RECORD.itemsize:end], dtype="<i4")
            pos = end
            block = BlockTrace([], cube, core, block_idx, sub)
            lt.blocks.append(block)
            blocks_read.append((block, arr, deps))
        launches.append(lt)
    if pos != len(view):
        raise TraceError(f"{len(view) - pos} bytes after the last block")
    _validate(blocks_read, len(names), sizes, len(allocations),
              _default_vector_ops() if vector_ops is None else vector_ops)
    for block, arr, deps in blocks_read:
        block.records = _records(arr, deps, names)
    return RunTrace(allocations, launches)


_VALID_GM_PATH = np.array([i in GM_PATHS for i in range(len(PATHS))])


def _validate(blocks: list[tuple[BlockTrace, np.ndarray, np.ndarray]], n_names: int, sizes: np.ndarray,
              n_alloc: int, vector_ops: int) -> None:
    """Every record of every block at once: fields in range, deps only on earlier records of its block."""
    if not blocks:
        return
    arr = np.concatenate([a for _, a, _ in blocks])
    if len(arr) == 0:
        if any(len(d) for _, _, d in blocks):
            raise TraceError("dependencies without records")
        return
    kind, op, a, b, d = arr["kind"], arr["op"], arr["a"], arr["b"], arr["d"]
    bad = ((arr["pipe"] < 0) | (arr["pipe"] > 6) | (kind < NORMAL) | (kind > SYNC) | (op < min(OPS)) | (op > max(OPS))
           | (arr["name"] < 0) | (arr["name"] >= n_names) | (arr["line"] < 0) | (arr["ndeps"] < 0)
           | (arr["ndeps"] > MAX_DEPS_PER_RECORD))
    for f in ("a", "b", "c", "d"):
        bad |= (arr[f] < 0) | (arr[f] > _SIZE_LIMIT)
    copies = (op == GM_COPY) | (op == LOCAL_COPY)
    bad |= copies & (a >= len(PATHS))
    bad |= (op == GM_COPY) & ~_VALID_GM_PATH[np.clip(a, 0, len(PATHS) - 1)]
    bad |= (op == VEC) & (~((b > 0) & (b <= 8) & ((b & (b - 1)) == 0)) | (a >= vector_ops))
    bad |= (op == MAD) & ~((d > 0) & (d <= 4) & ((d & (d - 1)) == 0))
    touches = (op == GM_COPY) | (op == SCALAR_GM)
    g = arr["gbuf"]
    bad |= touches & ((g < 0) | (g >= n_alloc))
    safe_g = np.clip(g, 0, max(n_alloc - 1, 0))
    bad |= touches & ((arr["glo"] < 0) | (arr["ghi"] < arr["glo"]) | (arr["ghi"] > sizes[safe_g]))
    bad |= (op == LOCAL_COPY) & _VALID_GM_PATH[np.clip(a, 0, len(PATHS) - 1)]
    bad |= _misplaced(arr, np.concatenate([np.full(len(x), bt.core_type == AIC) for bt, x, _ in blocks]))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise TraceError(f"record {i} has fields out of range: {arr[i]}")
    counts = np.array([len(x) for _, x, _ in blocks])
    ndeps = arr["ndeps"].astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    # (np.add.reduceat raised IndexError when the last blocks were empty: an idle last block
    # of an honest launch crashed the parent's decode)
    running = np.concatenate([[0], np.cumsum(ndeps)])
    per_block = running[starts + counts] - running[starts]
    if not np.array_equal(per_block, [len(x) for _, _, x in blocks]):
        raise TraceError("dependency count does not match the records")
    deps = np.concatenate([x for _, _, x in blocks]).astype(np.int64)
    if len(deps):
        local = np.arange(len(arr)) - np.repeat(starts, counts)
        if ((deps < 0) | (deps >= np.repeat(local, ndeps))).any():
            raise TraceError("a record waits for itself or for a later record")


def _misplaced(arr: np.ndarray, on_aic: np.ndarray) -> np.ndarray:
    """Records whose kind, pipe or core type is not the one the DSL issues their op with."""
    op, pipe, path = arr["op"], arr["pipe"], np.clip(arr["a"], 0, len(PATHS) - 1)
    bad = arr["kind"] != _by_op(op, _OP_KIND, NORMAL)
    bad |= np.isin(op, list(_OP_PIPE)) & (pipe != _by_op(op, _OP_PIPE, -1))
    copies = (op == GM_COPY) | (op == LOCAL_COPY)
    bad |= copies & (pipe != _PATH_PIPE_ARRAY[path])
    # a NORMAL record's pipe must exist on its block's core type; MTE2 (on both) by its path
    core_of = np.where(copies, _PATH_CORE_ARRAY[path], _PIPE_CORE_ARRAY[np.clip(pipe, 0, 6)])
    bad |= (arr["kind"] == NORMAL) & (core_of >= 0) & (core_of != on_aic)
    return bad


_PATH_PIPE_ARRAY = np.array([_PATH_PIPE[p] for p in PATHS])
_PATH_CORE_ARRAY = np.array([int(_PATH_CORE[p] == AIC) for p in PATHS])
_PIPE_CORE_ARRAY = np.array([-1 if c is None else int(c == AIC) for c in PIPE_CORE])


def _by_op(op: np.ndarray, table: dict[int, int], default: int) -> np.ndarray:
    out = np.full(len(op), default, dtype=np.int64)
    for code, value in table.items():
        out[op == code] = value
    return out


def _records(arr: np.ndarray, deps: np.ndarray, names: list[str]) -> list[tuple]:
    """A validated block's records as tuples (the layout of opcodes.py), built from column lists:
    no per-record Python work beyond the tuple (2.8 M records: 27 s -> 6 s)."""
    n = len(arr)
    nd = arr["ndeps"].astype(np.int64)
    dep_col: list = [None] * n
    if len(deps):
        dep_list, counts = deps.tolist(), nd.tolist()
        starts = np.concatenate([[0], np.cumsum(nd)])[:-1].tolist()
        for i in np.flatnonzero(nd).tolist():
            s = starts[i]
            dep_col[i] = tuple(dep_list[s:s + counts[i]])
    name_col = [names[i] for i in arr["name"].tolist()]
    cols = [arr[f].tolist() for f in _FIELDS]
    return list(zip(*cols, dep_col, name_col, arr["line"].tolist()))


@functools.lru_cache(maxsize=1)
def _default_vector_ops() -> int:
    from sage.npu.hardware import list_presets, load_preset
    from sage.npu.sim.opcodes import vector_keys

    return min(len(vector_keys(load_preset(p))) for p in list_presets())


def _list(value, limit: int) -> list:
    if not isinstance(value, list) or len(value) > limit:
        raise TypeError("expected a list of bounded length")
    return value


def _int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _SIZE_LIMIT:
        raise ValueError(f"{what} must be a non-negative int")
    return value
