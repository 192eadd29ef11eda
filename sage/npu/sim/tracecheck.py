"""The field checks of a decoded trace: every record of the table and every use of it in a block.

``runtrace.decode`` reads the wire's arrays and checks their counts; here, vectorised over
the arrays, before any record becomes a Python object: each distinct record's fields against
the allocations, the opcode table (which pipe, kind and core type each op runs on) and the
preset's vector cost table; then each use of a record in a block, since a record of the table
may appear in several blocks: it must fit its block's core type and may only wait for earlier
records of that block.
"""

from __future__ import annotations

import numpy as np

from sage.npu.sim.core import PIPE_CORE, FIX, M, MTE1, MTE2, MTE3, S, V
from sage.npu.sim.opcodes import (AIC, AIV, BARRIER, CROSS_SET, CROSS_WAIT, FLAG, GM_COPY, GM_PATHS, LOCAL_COPY, MAD,
                                  MARK, NORMAL, OPS, PATHS, SCALAR_GM, SCALAR_LOCAL, SYNC, SYNC_ALL, VEC)

SIZE_LIMIT = 1 << 46          # no count or byte size in a record is larger than this
# PipeBarrier(PIPE_ALL) waits for the last record of each of the 7 pipes, the most any DSL call
# waits for (sim/core.py); honest runs wait for at most 4 (benchmarks/trace_caps.py).
MAX_DEPS_PER_RECORD = 8

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
_VALID_GM_PATH = np.array([i in GM_PATHS for i in range(len(PATHS))])
_PATH_PIPE_ARRAY = np.array([_PATH_PIPE[p] for p in PATHS])
_PATH_CORE_ARRAY = np.array([int(_PATH_CORE[p] == AIC) for p in PATHS])
_PIPE_CORE_ARRAY = np.array([-1 if c is None else int(c == AIC) for c in PIPE_CORE])


class TraceError(ValueError):
    """The bytes are not a trace a kernel run could have produced."""


def check_uses(rows: np.ndarray, deps: np.ndarray, blocks: np.ndarray, index: np.ndarray, n_names: int,
               sizes: np.ndarray, n_alloc: int, vector_ops: int) -> None:
    """TraceError unless every record of `rows` is well formed and every block's use of one
    (`index`, block after block, `blocks["records"]` each) fits its block."""
    core, last_dep = _check_rows(rows, deps, n_names, sizes, n_alloc, vector_ops)
    if len(index) and int(index.max()) >= len(rows):
        raise TraceError("a block uses a record past the end of the table")
    start = 0
    for count, aic in zip(blocks["records"].tolist(), blocks["aic"].tolist()):
        used = index[start:start + count]
        start += count
        need = core[used]
        if ((need >= 0) & (need != aic)).any():
            i = int(used[np.flatnonzero((need >= 0) & (need != aic))[0]])
            raise TraceError(f"record {i} runs on a core type its block does not have: {rows[i]}")
        if (last_dep[used] >= np.arange(count, dtype=np.int64)).any():
            raise TraceError("a record waits for itself or for a later record")


def _check_rows(rows: np.ndarray, deps: np.ndarray, n_names: int, sizes: np.ndarray, n_alloc: int,
                vector_ops: int) -> tuple[np.ndarray, np.ndarray]:
    """Every field of every distinct record in range. Returns per record the core type it needs
    (-1 any, 0 AIV, 1 AIC) and the last record it waits for (-1 none)."""
    if len(rows) == 0:
        if len(deps):
            raise TraceError("dependencies without records")
        return np.zeros(0, dtype=np.int8), np.zeros(0, dtype=np.int64)
    kind, op, a, b, d = rows["kind"], rows["op"], rows["a"], rows["b"], rows["d"]
    bad = ((rows["pipe"] < 0) | (rows["pipe"] > 6) | (kind < NORMAL) | (kind > SYNC) | (op < min(OPS))
           | (op > max(OPS)) | (rows["name"] < 0) | (rows["name"] >= n_names) | (rows["line"] < 0)
           | (rows["ndeps"] < 0))
    for f in ("a", "b", "c", "d"):
        bad |= (rows[f] < 0) | (rows[f] > SIZE_LIMIT)
    copies = (op == GM_COPY) | (op == LOCAL_COPY)
    path = np.clip(a, 0, len(PATHS) - 1)
    bad |= copies & (a >= len(PATHS))
    bad |= (op == GM_COPY) & ~_VALID_GM_PATH[path]
    bad |= (op == VEC) & (~((b > 0) & (b <= 8) & ((b & (b - 1)) == 0)) | (a >= vector_ops))
    bad |= (op == MAD) & ~((d > 0) & (d <= 4) & ((d & (d - 1)) == 0))
    g = rows["gbuf"]
    touches = (op == GM_COPY) | ((op == SCALAR_GM) & (g >= 0))   # (encode clears a scalar access's address)
    bad |= touches & ((g < 0) | (g >= n_alloc))
    safe_g = np.clip(g, 0, max(n_alloc - 1, 0))
    bad |= touches & ((rows["glo"] < 0) | (rows["ghi"] < rows["glo"]) | (rows["ghi"] > sizes[safe_g]))
    bad |= (op == LOCAL_COPY) & _VALID_GM_PATH[path]
    bad |= rows["kind"] != _by_op(op, _OP_KIND, NORMAL)
    bad |= np.isin(op, list(_OP_PIPE)) & (rows["pipe"] != _by_op(op, _OP_PIPE, -1))
    bad |= copies & (rows["pipe"] != _PATH_PIPE_ARRAY[path])
    bad |= rows["ndeps"] > MAX_DEPS_PER_RECORD
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise TraceError(f"record {i} has fields out of range: {rows[i]}")
    # a NORMAL record's pipe must exist on its block's core type; MTE2 (on both) by its path
    core = np.where(copies, _PATH_CORE_ARRAY[path], _PIPE_CORE_ARRAY[np.clip(rows["pipe"], 0, 6)])
    core = np.where(kind == NORMAL, core, -1).astype(np.int8)
    ndeps = rows["ndeps"].astype(np.int64)
    if int(ndeps.sum()) != len(deps):
        raise TraceError("dependency count does not match the records")
    last_dep = np.full(len(rows), -1, dtype=np.int64)
    if len(deps):
        if (deps < 0).any():
            raise TraceError("a record waits for a record before the first")
        with_deps = np.flatnonzero(ndeps)
        starts = (np.cumsum(ndeps) - ndeps)[with_deps]
        # (each segment runs to the next record with dependencies: the ones between have none)
        last_dep[with_deps] = np.maximum.reduceat(deps, starts)
    return core, last_dep


def _by_op(op: np.ndarray, table: dict[int, int], default: int) -> np.ndarray:
    out = np.full(len(op), default, dtype=np.int64)
    for code, value in table.items():
        out[op == code] = value
    return out
