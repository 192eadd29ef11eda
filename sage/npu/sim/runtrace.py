"""What a kernel's functional run leaves behind, and its wire format.

A `RunTrace` is everything the timing needs: the GM allocations forward() made (sizes, in
order) and, per launch, each block's instruction records (layout in ``opcodes.py``). The
sandboxed child sends it to the parent as bytes; `decode` treats those bytes as hostile:
every field is range-checked against the allocations, the opcode table (which pipe, kind
and core type each op runs on), the preset's vector cost table and the record's own
position (a record may only wait for earlier records of its block, at most
`MAX_DEPS_PER_RECORD` of them), and every count against the caps of ``caps.py``, so a
malformed or forged trace is refused with a `TraceError` and can never crash or mislead the
replay into indexing outside what it was given, nor make the parent hold more than the caps
allow.

Wire format: a JSON header (names, allocations, launches with their block counts, the sizes
below), then the table of the run's distinct records (each once, packed fixed-width), their
dependency indices, one fixed-width entry per block (its index, sub, core type and record
count), and per block the table index of each of its records (4 bytes). Blocks repeat each
other's records (a lane group's blocks, a loop's body), so the table is small: the scatter
kernel's 926,160 records are 403 distinct ones (62 MB as one packed record each, 3.7 MB this way,
and seconds less to encode and decode); the largest honest trace is 8.3 MB
(benchmarks/trace_caps.py). No pickle: nothing the child writes is ever executed.
"""

from __future__ import annotations

import functools
import itertools
import json
from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np

from sage.npu.sim import caps
from sage.npu.sim.opcodes import AIC, AIV, KERNEL_TYPES, NORMAL, replay_key
from sage.npu.sim.tracecheck import MAX_DEPS_PER_RECORD, SIZE_LIMIT, TraceError, check_uses

__all__ = ["BLOCK", "INDEX", "MAX_DEPS_PER_RECORD", "MAX_TRACE_BYTES", "RECORD", "BlockTrace", "LaunchTrace",
           "RunTrace", "TraceError", "decode", "encode"]

RECORD = np.dtype([("pipe", "<i1"), ("kind", "<i1"), ("op", "<i1"), ("name", "<i4"), ("line", "<i4"),
                   ("a", "<i8"), ("b", "<i8"), ("c", "<i8"), ("d", "<i8"),
                   ("gbuf", "<i4"), ("glo", "<i8"), ("ghi", "<i8"), ("ndeps", "<i4")])
BLOCK = np.dtype([("block", "<u4"), ("records", "<u4"), ("sub", "u1"), ("aic", "u1")])
INDEX = np.dtype("<u4")
_FIELDS = ("pipe", "kind", "op", "a", "b", "c", "d", "gbuf", "glo", "ghi")   # record tuple order, before deps
MAX_HEADER_BYTES = 1 << 20
MAX_NAME = 200                 # characters of a record's or a launch's name that travel
MAX_SYNCS = 8                  # host read-backs per forward (ascendc.host.MAX_READ_BACK_SCALARS)
# The largest trace the caps allow (35 MiB with those of caps.py): what the parent reads at most.
MAX_TRACE_BYTES = (8 + MAX_HEADER_BYTES + caps.MAX_DISTINCT_RECORDS * (RECORD.itemsize + 4 * MAX_DEPS_PER_RECORD)
                   + caps.MAX_BLOCKS * BLOCK.itemsize + caps.MAX_RECORDS * INDEX.itemsize)


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
    # Host read-backs (`read_back()`): per sync, how many launches came before it, and the
    # scalars it read. The replay charges each as a sync step of the eager timeline.
    syncs: list[int] = field(default_factory=list)
    read_backs: list[int] = field(default_factory=list)

    @property
    def instructions(self) -> int:
        return sum(1 for lt in self.launches for b in lt.blocks for r in b.records if r[1] == NORMAL)


def encode(trace: RunTrace) -> bytes:
    """The wire bytes of `trace`: each distinct record once in a table (as the replay sees it,
    `opcodes.replay_key`), each block as table indices."""
    table: dict[tuple, int] = {}
    blocks = np.zeros(sum(len(lt.blocks) for lt in trace.launches), dtype=BLOCK)
    indices: list[bytes] = []
    launches = []
    k = 0
    for lt in trace.launches:
        for block in lt.blocks:
            recs = block.records
            where = {}                             # the block's distinct records -> their table row
            for r in dict.fromkeys(recs):
                where[r] = table.setdefault(replay_key(r), len(table))
            indices.append(np.fromiter(map(where.__getitem__, recs), dtype=INDEX, count=len(recs)).tobytes())
            blocks[k] = (block.block, len(recs), block.sub, block.core_type == AIC)
            k += 1
        launches.append({"name": lt.name[:MAX_NAME], "block_dim": lt.block_dim, "blocks": len(lt.blocks),
                         "type": lt.kernel_type})
    rows, deps, names = _pack(list(table))
    header = json.dumps({"names": names, "allocations": [[n, bool(i)] for n, i in trace.allocations],
                         "launches": launches, "syncs": trace.syncs, "table": len(rows),
                         "deps": len(deps)}).encode()
    return b"".join([len(header).to_bytes(8, "little"), header, rows.tobytes(), deps.tobytes(), blocks.tobytes(),
                     *indices])


def _pack(recs: list[tuple]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Records as one packed array (field by field: no second Python tuple per record; the child
    once ran out of memory on 7 M barrier records), their dependencies as one flat array, and
    the names they index."""
    n = len(recs)
    names: dict[str, int] = {}
    arr = np.zeros(n, dtype=RECORD)
    if not n:
        return arr, np.zeros(0, dtype="<i4"), []
    for i, f in enumerate(_FIELDS):
        arr[f] = np.fromiter(map(itemgetter(i), recs), dtype=np.int64, count=n)
    arr["name"] = np.fromiter((names.setdefault(nm[:MAX_NAME], len(names)) for nm in map(itemgetter(11), recs)),
                              dtype=np.int64, count=n)
    arr["line"] = np.fromiter(map(itemgetter(12), recs), dtype=np.int64, count=n)
    arr["ndeps"] = np.fromiter((len(d) if d else 0 for d in map(itemgetter(10), recs)), dtype=np.int64, count=n)
    deps = np.fromiter(itertools.chain.from_iterable(d for d in map(itemgetter(10), recs) if d), dtype="<i4")
    return arr, deps, list(names)


def decode(data: bytes | memoryview, vector_ops: int | None = None) -> RunTrace:
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
        names = [str(n)[:MAX_NAME] for n in _list(header["names"], caps.MAX_DISTINCT_RECORDS)]
        allocations = [(_int(n, "allocation size"), bool(i))
                       for n, i in _list(header["allocations"], caps.MAX_ALLOCATIONS)]
        specs = _list(header["launches"], caps.MAX_LAUNCHES)
        syncs = [_int(n, "sync position") for n in _list(header.get("syncs", []), MAX_SYNCS)]
        n_rows, n_deps = _int(header["table"], "table size"), _int(header["deps"], "dependency count")
        launches = [LaunchTrace(str(s["name"])[:MAX_NAME], _int(s["block_dim"], "block_dim"), kernel_type=str(s["type"]))
                    for s in specs]
        per_launch = [_int(s["blocks"], "block count") for s in specs]
    except (KeyError, TypeError, ValueError, RecursionError) as exc:
        raise TraceError(f"trace header is malformed: {exc}") from None
    unknown = [lt.kernel_type for lt in launches if lt.kernel_type not in KERNEL_TYPES]
    if unknown:
        raise TraceError(f"unknown kernel type {unknown[0][:40]!r}")
    _at_most(n_rows, caps.MAX_DISTINCT_RECORDS, "distinct records")
    _at_most(n_deps, n_rows * MAX_DEPS_PER_RECORD, "dependencies")
    _at_most(sum(per_launch), caps.MAX_BLOCKS, "block streams")
    reader = _Reader(view, 8 + hlen)
    rows = reader.array(RECORD, n_rows)
    deps = reader.array(np.dtype("<i4"), n_deps)
    blocks = reader.array(BLOCK, sum(per_launch))
    counts = blocks["records"].astype(np.int64)
    firsts = [0, *itertools.accumulate(per_launch)]
    for lo, hi in zip(firsts, firsts[1:]):
        _at_most(int(counts[lo:hi].sum()), caps.MAX_RECORDS_PER_LAUNCH, "records in one launch")
    _at_most(int(counts.sum()), caps.MAX_RECORDS, "records")
    index = reader.array(INDEX, int(counts.sum()))
    if reader.pos != len(view):
        raise TraceError(f"{len(view) - reader.pos} bytes after the last block")
    if syncs != sorted(syncs) or any(n > len(launches) for n in syncs):
        raise TraceError(f"sync positions {syncs[:8]} are not in launch order within {len(launches)} launches")
    dims = np.repeat([max(lt.block_dim, 1) for lt in launches], per_launch)
    if ((blocks["block"] >= dims) | (blocks["sub"] > 1) | (blocks["aic"] > 1)).any():
        raise TraceError("a block entry is out of range (its index past block_dim, or its sub or core type)")
    sizes = np.array([n for n, _ in allocations] or [0], dtype=np.int64)
    check_uses(rows, deps, blocks, index, len(names), sizes, len(allocations),
               _default_vector_ops() if vector_ops is None else vector_ops)
    table = np.empty(n_rows, dtype=object)
    for i, rec in enumerate(_records(rows, deps, names)):
        table[i] = rec      # an object array: a block's records are then one gather, no int per record
    start = 0
    for lt, lo, hi in zip(launches, firsts, firsts[1:]):
        for block, count, sub, aic in blocks[lo:hi].tolist():
            lt.blocks.append(BlockTrace(table[index[start:start + count]].tolist(), bool(aic), AIC if aic else AIV,
                                        block, sub))
            start += count
    return RunTrace(allocations, launches, syncs)


class _Reader:
    """Fixed-width arrays read one after another from the trace's bytes, each checked to fit."""

    def __init__(self, view: memoryview, pos: int):
        self.view, self.pos = view, pos

    def array(self, dtype: np.dtype, count: int) -> np.ndarray:
        end = self.pos + count * dtype.itemsize
        if end > len(self.view):
            raise TraceError("the trace ends before its last array")
        out = np.frombuffer(self.view[self.pos:end], dtype=dtype)
        self.pos = end
        return out


def _at_most(count: int, cap: int, what: str) -> None:
    if count > cap:
        raise TraceError(f"{count} {what}, more than the {cap} a run may make (sim/caps.py)")


def _records(arr: np.ndarray, deps: np.ndarray, names: list[str]) -> list[tuple]:
    """Validated records as tuples (the layout of opcodes.py), built from column lists: no
    per-record Python work beyond the tuple (2.8 M records: 27 s -> 6 s)."""
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
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= SIZE_LIMIT:
        raise ValueError(f"{what} must be a non-negative int")
    return value
