"""Row-mode reductions split across blocks: partial accumulators through a GM workspace.

A reduction over rows (`reduce_rows`: the reduced axis is not innermost in memory, as in a
norm's weight gradient, the sum over batch and sequence of a [B, S, H] product) gives each
block whole column chunks. With few columns and many rows, spreading the chunks over every
core makes them narrow: 4096 bf16 columns over 48 cores are chunks of 96 columns, 192 B
bursts per row, where CANN's transfer guidance wants GM addresses 512 B aligned and copies
of 16 KB or more (Ascend C best practices, "Transferring a Large Data Block at a Time" and
"GM address 512 B aligned", https://www.hiascend.com/document/detail/en/canncommercial/800/
opdevg/ascendcbestP/atlas_ascendc_best_practices_10_0012.html).

So instead the rows are split: a unit of work is (column chunk, part of the rows); each
block folds its part into the accumulator as before, writes the accumulator to its row of
a GM workspace, and after `SyncAll` (the all-core barrier; the kernel is MIX_AIV_1_0, all
blocks resident) one block per column chunk adds the chunk's partial rows and finishes it.
This is the standard Ascend C pattern for cross-core reductions (workspace plus SyncAll).
"""

from __future__ import annotations

from sage.kernels.library.source import accumulate, dsl_dtype

# Column chunks whose row burst is shorter than this are worth a split (CANN: GM accesses
# are most efficient 512 B aligned, and copies want 16 KB or more).
MIN_BURST_BYTES = 512
# The column chunk of a split (in compute-dtype bytes): bursts of 1-2 KB per row stream well,
# and a tile of that width still holds many rows, so an operand broadcast along the columns
# (one value per row) costs one repeat-form instruction per 256 B of columns for all rows.
SPLIT_CHUNK_BYTES = 2048
# A part shorter than this spends more on its workspace row and the barrier than it saves.
MIN_PART_ROWS = 8


def row_parts(units: int, rows: int, cores: int) -> int:
    """Parts to split each unit's rows into (1: no split), so that units x parts <= cores."""
    parts = min(cores // max(units, 1), rows // MIN_PART_ROWS)
    if parts < 2:
        return 1
    return -(-rows // -(-rows // parts))      # no empty part: every part starts inside the rows


def narrow_hurts(nc: int, es: int) -> bool:
    """A column chunk of nc elements of es bytes makes bursts too short to stream well."""
    return nc * es < MIN_BURST_BYTES


def constants(parts: int, rows: int, units: int, nc: int, es_c: int) -> list[str]:
    """P parts of RP rows per unit, U units; workspace rows of NCP elements (32 B aligned)."""
    per_block = 32 // es_c
    return [f"P = {parts}", f"RP = {-(-rows // parts)}", f"U = {units}", f"NCP = {-(-nc // per_block) * per_block}"]


def process(decode: list[str], tile: list[str], bases: str) -> list[str]:
    """Process(): the block's (unit, part) items, each spilled; the barrier; then the units
    this block finishes. `decode` sets c0 and the loop indices from `u`."""
    body = ["for t in range(self.t0, self.t1):", "    u = t // P", "    p = t % P"]
    body += ["    " + ln for ln in decode]
    body += ["    nc = min(NC, C - c0)", "    r0 = p * RP", "    r1 = min(DR, r0 + RP)",
             "    for j0 in range(r0, r1, NR):", "        nr = min(NR, r1 - j0)"]
    body += ["        " + ln for ln in tile]
    body += ["    self.Spill(t, nc)", "SyncAll()", "for u in range(self.blk, U, GetBlockNum()):"]
    body += ["    " + ln for ln in decode]
    body += ["    nc = min(NC, C - c0)", "    self.Combine(u, nc)", "    j0 = 0", f"    bs = [{bases}]",
             "    self.Finish(bs, nc)"]
    return body


def init_lines(csz: int) -> list[str]:
    return ["self.blk = blk", "self.g_ws = GlobalTensor()", "self.g_ws.SetGlobalBuffer(ws)",
            "self.qw = TQue(TPosition.VECIN, 2)", f"self.pipe.InitBuffer(self.qw, 2, buf_bytes(S_PAD, {csz}))"]


def spill(accumulators: int, ct: str, csz: int) -> list[str]:
    """Spill(t, nc): each accumulator to row t of its workspace region (the vector unit's
    writes done first; the next item's vector writes wait for the copy)."""
    body = []
    for j in range(accumulators):
        body += [f"acc = self.accb{j}.Get({ct})", "SetFlag(HardEvent.V_MTE3, 0)", "WaitFlag(HardEvent.V_MTE3, 0)",
                 f"DataCopyPad(self.g_ws[{j} * T * NCP + t * NCP], acc, DataCopyExtParams(1, nc * {csz}, 0, 0, 0))",
                 "SetFlag(HardEvent.MTE3_V, 0)", "WaitFlag(HardEvent.MTE3_V, 0)"]
    return body


def combine(kinds: list[str], compute: str) -> list[str]:
    """Combine(u, nc): each accumulator = the fold of unit u's P partial rows, the next row's
    copy in flight while one is added (a float32 sum compensated, as the parts were)."""
    body, ct = [], dsl_dtype(compute)
    for j, kind in enumerate(kinds):
        body += [f"acc = self.accb{j}.Get({ct})", f"self.WsIn({j}, u * P, nc)", "for p in range(P):",
                 "    if p + 1 < P:", f"        self.WsIn({j}, u * P + p + 1, nc)", f"    x = self.qw.DeQue({ct})",
                 *("    " + ln for ln in accumulate(kind, compute, j, "x", "p == 0")), "    self.qw.FreeTensor(x)"]
    return body


def ws_in(ct: str, csz: int) -> list[str]:
    """WsIn(j, row, nc): one partial row of accumulator j's workspace region into the queue."""
    return [f"x = self.qw.AllocTensor({ct})",
            f"DataCopyPad(x, self.g_ws[j * T * NCP + row * NCP], DataCopyExtParams(1, nc * {csz}, 0, 0, 0), "
            "DataCopyPadExtParams(False, 0, 0, 0))", "self.qw.EnQue(x)"]


def kernel_and_launch(name: str, cls: str, args: list[str], reduces: int, ct: str) -> list[str]:
    """The kernel (MIX_AIV_1_0: vector cores with SyncAll) and a launcher that allocates the
    workspace; one item per block at most when the units and parts fill the cores."""
    kargs = ", ".join(args + ["ws", "tpb"])
    return [f"@kernel\ndef {name}_kernel({kargs}):\n    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0)\n"
            f"    op = {cls}()\n    op.Init({kargs}, GetBlockIdx())\n    op.Process()\n\n",
            f"def {name}_launch({', '.join(args)}):\n"
            f"    ws = empty(({reduces} * T * NCP,), {ct})\n"
            "    cores = BLOCK_DIM or CORES\n"
            "    tpb = (T + cores - 1) // cores\n"
            f"    {name}_kernel[(T + tpb - 1) // tpb]({kargs})\n\n"]
