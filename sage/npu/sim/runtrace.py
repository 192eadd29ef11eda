"""What a kernel's functional run leaves behind, and its wire format.

A `RunTrace` is everything the timing needs: the GM allocations forward() made (sizes, in
order) and, per launch, each block's instruction records (layout in ``opcodes.py``). The
sandboxed child sends it to the parent as bytes; `decode` treats those bytes as hostile:
every field is range-checked against the allocations, the opcode table and the record's
own position (a record may only wait for earlier records of its block), so a malformed
or forged trace is refused with a `TraceError` and can never crash or mislead the replay
into indexing outside what it was given.

Wire format: a JSON header (names, allocations, launches with their block record counts)
then, per block, a packed array of fixed-width records and a flat array of dependency
indices. No pickle: nothing the child writes is ever executed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from sage.npu.sim.opcodes import (AIC, AIV, BARRIER, GM_COPY, GM_PATHS, KERNEL_TYPES, LOCAL_COPY, MAD, NORMAL, OPS, PATHS,
                                  SCALAR_GM, SYNC, VEC)

RECORD = np.dtype([("pipe", "<i1"), ("kind", "<i1"), ("op", "<i1"), ("name", "<i4"), ("line", "<i4"),
                   ("a", "<i8"), ("b", "<i8"), ("c", "<i8"), ("d", "<i8"),
                   ("gbuf", "<i4"), ("glo", "<i8"), ("ghi", "<i8"), ("ndeps", "<i4")])
MAX_HEADER_BYTES = 1 << 20
_SIZE_LIMIT = 1 << 46          # no count or byte size in a record is larger than this


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
    names: dict[str, int] = {}
    parts: list[bytes] = []
    launches = []
    for lt in trace.launches:
        blocks = []
        for block in lt.blocks:
            rows, deps = [], []
            for (pipe, kind, op, a, b, c, d, gbuf, glo, ghi, dep, name, line) in block.records:
                nid = names.setdefault(name, len(names))
                rows.append((pipe, kind, op, nid, line, a, b, c, d, gbuf, glo, ghi, len(dep) if dep else 0))
                if dep:
                    deps.extend(dep)
            arr = np.array(rows, dtype=RECORD) if rows else np.zeros(0, RECORD)
            dep_arr = np.asarray(deps, dtype="<i4")
            parts += [arr.tobytes(), dep_arr.tobytes()]
            blocks.append({"records": len(rows), "deps": len(deps), "cube": block.uses_cube,
                           "core": block.core_type, "block": block.block, "sub": block.sub})
        launches.append({"name": lt.name, "block_dim": lt.block_dim, "blocks": blocks, "type": lt.kernel_type})
    header = json.dumps({"names": list(names), "allocations": [[n, bool(i)] for n, i in trace.allocations],
                         "launches": launches}).encode()
    return len(header).to_bytes(8, "little") + header + b"".join(parts)


def decode(data: bytes | memoryview, max_records: int) -> RunTrace:
    """The trace in `data`, validated; TraceError for anything a real run cannot produce."""
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
            if core not in (AIV, AIC) or block_idx >= max(lt.block_dim, 1) or sub > 1:
                raise TraceError(f"block entry out of range: core {core[:10]!r}, block {block_idx}, sub {sub}")
            total += n
            if total > max_records:
                raise TraceError(f"more than {max_records} records")
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
    _validate(blocks_read, len(names), sizes, len(allocations))
    for block, arr, deps in blocks_read:
        block.records = _records(arr, deps, names)
    return RunTrace(allocations, launches)


_VALID_GM_PATH = np.array([i in GM_PATHS for i in range(len(PATHS))])


def _validate(blocks: list[tuple[BlockTrace, np.ndarray, np.ndarray]], n_names: int, sizes: np.ndarray,
              n_alloc: int) -> None:
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
           | (arr["name"] < 0) | (arr["name"] >= n_names) | (arr["line"] < 0) | (arr["ndeps"] < 0))
    for f in ("a", "b", "c", "d"):
        bad |= (arr[f] < 0) | (arr[f] > _SIZE_LIMIT)
    copies = (op == GM_COPY) | (op == LOCAL_COPY)
    bad |= copies & (a >= len(PATHS))
    bad |= (op == GM_COPY) & ~_VALID_GM_PATH[np.clip(a, 0, len(PATHS) - 1)]
    bad |= (op == VEC) & ~((b > 0) & (b <= 8) & ((b & (b - 1)) == 0))
    bad |= (op == MAD) & ~((d > 0) & (d <= 4) & ((d & (d - 1)) == 0))
    touches = (op == GM_COPY) | (op == SCALAR_GM)
    g = arr["gbuf"]
    bad |= touches & ((g < 0) | (g >= n_alloc))
    safe_g = np.clip(g, 0, max(n_alloc - 1, 0))
    bad |= touches & ((arr["glo"] < 0) | (arr["ghi"] < arr["glo"]) | (arr["ghi"] > sizes[safe_g]))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise TraceError(f"record {i} has fields out of range: {arr[i]}")
    counts = np.array([len(x) for _, x, _ in blocks])
    ndeps = arr["ndeps"].astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    per_block = np.add.reduceat(ndeps, starts) if len(ndeps) else np.zeros(len(counts), np.int64)
    per_block[counts == 0] = 0  # reduceat gives a neighbour's value for an empty block
    if not np.array_equal(per_block, [len(x) for _, _, x in blocks]):
        raise TraceError("dependency count does not match the records")
    deps = np.concatenate([x for _, _, x in blocks]).astype(np.int64)
    if len(deps):
        local = np.arange(len(arr)) - np.repeat(starts, counts)
        if ((deps < 0) | (deps >= np.repeat(local, ndeps))).any():
            raise TraceError("a record waits for itself or for a later record")


def _records(arr: np.ndarray, deps: np.ndarray, names: list[str]) -> list[tuple]:
    """A validated block's records as tuples (the layout of opcodes.py)."""
    ptr = np.concatenate([[0], np.cumsum(arr["ndeps"], dtype=np.int64)]).tolist()
    dep_list = deps.tolist()
    out = []
    for i, row in enumerate(arr.tolist()):
        pipe, kind, op_, name, line, a, b, c, d, gbuf, glo, ghi, nd = row
        dep = tuple(dep_list[ptr[i]:ptr[i] + nd]) if nd else None
        out.append((pipe, kind, op_, a, b, c, d, gbuf, glo, ghi, dep, names[name], line))
    return out


def _list(value, limit: int) -> list:
    if not isinstance(value, list) or len(value) > limit:
        raise TypeError("expected a list of bounded length")
    return value


def _int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _SIZE_LIMIT:
        raise ValueError(f"{what} must be a non-negative int")
    return value
