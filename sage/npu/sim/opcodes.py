"""What an instruction record says: which kind of work it is and its size, never its cost.

A kernel's functional run (in the sandboxed child) records each instruction as

    (pipe, kind, op, a, b, c, d, gbuf, glo, ghi, deps, name, line)

where ``op`` says how the instruction is costed and ``a..d`` are its sizes (the table
below). The cycles are computed afterwards, in the trusted parent, by ``replay.py`` from
these fields and the preset: a kernel cannot set its own timing, only the work it asked
for. ``gbuf, glo, ghi`` name the GM bytes touched (allocation id and byte range; -1 when
none), ``deps`` the record indices this one waits for, ``line`` the kernel file line.
"""

from __future__ import annotations

# record kinds: only NORMAL records count as instructions
NORMAL, BARRIER, SYNC = 0, 1, 2

# op codes and the meaning of (a, b, c, d)
VEC = 1          # vector instruction: a = cost key index, b = operand width in bytes, c = repeats, d = extra heads
GM_COPY = 2      # MTE/FIX transfer touching GM: a = path index, b = bytes, c = bursts, d = GM pitch in bytes
LOCAL_COPY = 3   # on-chip transfer: a = path index, b = bytes, c = bursts
MAD = 4          # cube Mmad: a = m, b = n, c = k, d = input itemsize
SCALAR_LOCAL = 5  # GetValue/SetValue on a local buffer
SCALAR_GM = 6     # GetValue/SetValue on GM
FLAG = 7          # SetFlag / WaitFlag / the scalar part of PipeBarrier(PIPE_ALL)
MARK = 8          # a pipe barrier marker: no cost of its own
# Synchronisation between cores (kind SYNC), resolved by the multi-core schedule of a launch:
CROSS_SET = 9     # CrossCoreSetFlag<mode, pipe>(flag): a = flag id (0..10), b = mode (0, 1, 2)
CROSS_WAIT = 10   # CrossCoreWaitFlag<mode, pipe>(flag): a = flag id, b = mode; blocks its pipe until a set arrives
SYNC_ALL = 11     # SyncAll<isAIVOnly>(): a = 1 when only the AIV cores take part; every taking part waits for all
OPS = (VEC, GM_COPY, LOCAL_COPY, MAD, SCALAR_LOCAL, SCALAR_GM, FLAG, MARK, CROSS_SET, CROSS_WAIT, SYNC_ALL)

# core types of a block's stream, and kernel types of a launch (KERNEL_TASK_TYPE_DEFAULT)
AIV, AIC = "AIV", "AIC"
KERNEL_TYPES = ("AIV_ONLY", "AIC_ONLY", "MIX_AIC_1_2", "MIX_AIV_1_0", "MIX_AIC_1_0")

# transfer paths, indexed by GM_COPY / LOCAL_COPY records
PATHS = ("GM->UB", "UB->GM", "GM->L1", "L1->L0A", "L1->L0B", "L0C->GM", "UB->UB", "UB->L1")
PATH_INDEX = {p: i for i, p in enumerate(PATHS)}
GM_READ_PATHS = frozenset({PATH_INDEX["GM->UB"], PATH_INDEX["GM->L1"]})
GM_PATHS = frozenset({PATH_INDEX[p] for p in ("GM->UB", "UB->GM", "GM->L1", "L0C->GM")})


def vector_keys(spec) -> tuple[str, ...]:
    """The vector cost keys of a preset in a fixed order: record field ``a`` of VEC indexes it."""
    return tuple(sorted(spec.vector.costs))


def replay_key(rec: tuple) -> tuple:
    """The record as the replay sees it: a GM address matters only to a GM copy (the L2 model
    costs it), so a scalar GM access's is cleared. Records equal here cost the same; a scalar
    loop over GM then repeats a few records instead of making one per address (the offline
    agent's gather kernel, level1/20 case 1: 267,663 distinct records, 439 this way)."""
    if rec[7] < 0 or rec[2] == GM_COPY:
        return rec
    return rec[:7] + (-1, 0, 0) + rec[10:]
