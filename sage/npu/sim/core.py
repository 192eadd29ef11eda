"""One simulated AI Core running one block: pipes, sync edges, race checks, instruction records.

Every DSL call runs its numpy work right away and appends one compact record here (its
layout is in ``opcodes.py``): what the instruction is and how big, never what it costs.
Timing is computed afterwards from the records by ``sage.npu.replay``, in the trusted
parent process, so nothing a kernel does in its own process can set its time.

Sync is tracked twice, for two purposes: ``deps`` (record indices an instruction waits
for) drive timing; vector clocks (``vc[pipe][other]`` = how many instructions of
``other`` are known finished by ``pipe``) drive race detection.
"""

from __future__ import annotations

import sys

import numpy as np

from sage.npu.errors import CapacityError, CoreTypeError, KernelTimeout, LaunchError, RaceError
from sage.npu.results import PIPES
from sage.npu.sim.opcodes import AIC, AIV, BARRIER, FLAG, MARK, NORMAL, SYNC
from sage.npu.sim.gmhazards import Access
from sage.npu.sim.lanes import LaneValue, per_lane
from sage.npu.sim.races import RangeTracker

S, V, M, MTE1, MTE2, MTE3, FIX = range(7)
PIPE_INDEX = {name: i for i, name in enumerate(PIPES)}
# The core type each pipe exists on (None: both). Atlas A2 splits the AI Core: an AIV has the
# vector unit and UB (GM <-> UB on MTE2/MTE3), an AIC the cube, L1, L0A/B/C (GM -> L1 on MTE2,
# L1 -> L0 on MTE1, L0C -> GM on FIX); they exchange data through GM.
PIPE_CORE = (None, AIV, AIC, AIC, None, AIV, AIC)
SPACE_CORE = {"UB": AIV, "L1": AIC, "L0A": AIC, "L0B": AIC, "L0C": AIC}

_UNINITIALISED = 0xFF  # fresh local memory reads as NaN / -1, as garbage would, so missing writes show
# A lane group's memory has one row per lane; rows a multiple of 4 KB apart (UB is 192 KB) map
# the same offsets of every lane to the same CPU cache sets, and an instruction over 47 lanes
# then ran 1.3-1.5x slower (a cast, an Exp and a max over 47 rows of 4096: 1.14 against 0.74 ms).
# 4 KB + 256 B between rows keeps every row 32 B aligned and staggers them across the sets.
_LANE_ROW_PAD = 4096 + 256


class Gate:
    """A raised flag: the record(s) a waiting pipe depends on, the vector clock they carry, and
    what the raising pipe knew of other cores (for GM hazards between cores)."""

    __slots__ = ("deps", "vc", "gen", "knows")

    def __init__(self, deps: tuple, vc: list[int], gen: int, knows: dict | None = None):
        self.deps, self.vc, self.gen = deps, vc, gen
        self.knows = knows if knows is not None else NOTHING


NOTHING: dict = {}  # shared and never changed: knowledge dicts are replaced, not updated


def merge(a: dict, b: dict) -> dict:
    """What both know: `a` itself when `b` adds nothing (so unchanged knowledge stays shared)."""
    if not b or b is a:
        return a
    out = None
    for k, v in b.items():
        if a.get(k, 0) < v:
            if out is None:
                out = dict(a)
            out[k] = v
    return a if out is None else out


class MemSpace:
    """One on-chip memory of the core (UB, L1, L0A, L0B, L0C), allocated by InitBuffer."""

    def __init__(self, name: str, capacity: int, rows: int | None = None):
        self.name, self.capacity, self.used = name, capacity, 0
        self.rows = rows  # a lane group's memory: one row per lane (sage.npu.sim.lanes)
        self._data: np.ndarray | None = None
        self.released = False

    @property
    def data(self) -> np.ndarray:
        if self._data is None:  # allocated lazily: most kernels touch UB only
            if self.released:
                raise AssertionError(f"internal: {self.name} of a block that has ended was read")
            if self.rows is None:
                self._data = np.full(self.capacity, _UNINITIALISED, dtype=np.uint8)
            else:  # (rows padded apart: see _LANE_ROW_PAD)
                padded = np.full((self.rows, self.capacity + _LANE_ROW_PAD), _UNINITIALISED, dtype=np.uint8)
                self._data = padded[:, :self.capacity]
        return self._data

    def allocate(self, nbytes: int, what: str) -> int:
        addr = self.used
        end = addr + (-(-nbytes // 32) * 32)
        if end > self.capacity:
            raise CapacityError(
                f"{what}: {nbytes} B does not fit in {self.name}: {addr} B already used of "
                f"{self.capacity} B (InitBuffer sizes of all buffers in {self.name} add up to {addr + nbytes} B)")
        self.used = end
        return addr


class Slot:
    """One buffer of a queue or TBuf: the unit of race tracking and queue state."""

    __slots__ = ("space", "addr", "nbytes", "label", "tracker", "allocated", "alloc_gen", "enqueued", "views", "freed",
                 "nd")

    def __init__(self, space: MemSpace, addr: int, nbytes: int, label: str):
        self.space, self.addr, self.nbytes, self.label = space, addr, nbytes, label
        self.tracker = RangeTracker()
        self.freed: Gate | None = None  # the consumer's FreeTensor flag the next AllocTensor waits for
        self.allocated = False
        self.alloc_gen = 0
        self.enqueued = False
        self.views: dict = {}  # dtype -> typed numpy view of the whole buffer
        # L1 byte ranges [lo, hi) a plain DataCopy from GM filled: ND rows, not the NZ fractals
        # LoadData reads (sage.npu.ascendc.cube.LoadData refuses them)
        self.nd: list[tuple[int, int]] = []


class CoreState:
    """The state of one block while its kernel code runs."""

    def __init__(self, session, block_idx: int, block_num: int, *, core_type: str | None = None, sub: int = 0,
                 launch=None, lanes: tuple[int, ...] | None = None):
        self.session = session
        self.spec = session.spec
        self.kernel_file = session.kernel_file
        self.block_idx, self.block_num = block_idx, block_num
        # A lane group (sage.npu.sim.lanes) runs blocks `lanes` at once: its block index is a
        # LaneValue, its memories have one row per lane, each record stands for one per lane.
        self.lanes = lanes
        self.weight = 1
        self.lane_ids: tuple[int, ...] = ()  # the stream id of each lane, for GM hazards
        self._varying: list[int] | None = None  # which records differ between lanes (lane_records)
        self._lane_names: tuple | None = None   # (core type, each lane's name in GM hazard messages)
        self._knows_cache: tuple | None = None  # (a knowledge dict, what each lane knows of it: _lane_knows)
        self.mask = None  # while an arm of an `if` the lanes disagree on runs: its sim.masks.Mask
        self.masked_records: list[int] = []  # records merged from two arms, fields per lane (sim/masks.py)
        rows = None
        if lanes is not None:
            self.block_idx, self.weight, rows = LaneValue(tuple(lanes), self), len(lanes), len(lanes)
        self.core_type, self.sub, self.launch = core_type, sub, launch
        self.last_line = 0
        # The frame that made the DSL call in progress (set by the handle wrappers, sage.npu.ascendc.handles):
        # when it is in the kernel file it is the innermost kernel frame, found without walking the stack.
        self.caller = None
        self.lines: dict[tuple, int] = session.lines  # (id(code), instruction offset) -> kernel line, per run
        self._where: tuple = (0, "")  # (core type, "AIV block 3"): what gm_access names this core in messages
        b = self.spec.buffers
        self.spaces = {name: MemSpace(name, cap, rows) for name, cap in
                       (("UB", b.ub_bytes), ("L1", b.l1_bytes), ("L0A", b.l0a_bytes),
                        ("L0B", b.l0b_bytes), ("L0C", b.l0c_bytes))}
        self.records: list[tuple] = []
        self.vc = [[0] * 7 for _ in range(7)]
        self.pipe_recs: list[list[int]] = [[] for _ in range(7)]
        self.flags: dict[tuple[int, int, int], list[Gate]] = {}
        self.knows: list[dict] = [NOTHING] * 7   # per pipe: (stream, pipe) -> seq known of other cores
        self.stream_id = 0
        self.instructions = 0
        self.atomic = None  # SetAtomicAdd/Max/Min: the ufunc GM stores combine with

    def release_memory(self) -> None:
        """The block has ended (Launch._body): its local memories go. Nothing reads them after
        (records name byte ranges, not bytes; cores exchange data through GM only), and the
        launch keeps every core until it ends, for its records: kept, each block's UB stayed
        allocated, so the next block's np.full faulted in fresh pages (about 2,200 page faults
        per 48-block launch, each some microseconds on this project's VM) where, released,
        it reuses the pages the last block freed."""
        for space in self.spaces.values():
            space._data = None
            space.released = True

    def kernel_line(self) -> int:
        """The kernel file line that issued the instruction being recorded (0 if none)."""
        kfile = self.kernel_file
        f = self.caller
        if f is not None:
            code = f.f_code
            if code.co_filename == kfile:
                line = self.lines.get((id(code), f.f_lasti))
                if line is None:
                    line = self._new_site(f)
                self.last_line = line
                return line
        f = sys._getframe(2)
        while f is not None:
            if f.f_code.co_filename == kfile:
                line = self.last_line = f.f_lineno  # f_lineno decodes the line table: read it once
                return line
            f = f.f_back
        return 0

    def _new_site(self, f) -> int:
        """The line of a kernel call site seen for the first time, remembered for the run.

        f_lineno scans the code's line table from its start, so each site's line is read once.
        Sites are keyed by the code object's id, not the object: hashing a code object hashes
        its constants and names again every time. The session keeps every such code object
        alive for the run, so an id cannot be reused by another code object meanwhile.
        """
        code = f.f_code
        line = self.lines[(id(code), f.f_lasti)] = f.f_lineno
        self.session.line_codes[id(code)] = code
        return line

    # -- instructions -----------------------------------------------------------------------
    def instr(self, pipe: int, name: str, op: int, a: int = 0, b: int = 0, c: int = 0, d: int = 0,
              gm: tuple | None = None, reads=(), writes=(), deps: tuple | None = None, kind: int = NORMAL,
              line=None) -> int:
        """Check sync and races for the byte ranges ``(slot, lo, hi)`` touched, then record.

        ``op, a..d`` describe the work (``opcodes.py``); ``gm`` is ``(allocation id, byte lo,
        byte hi)`` of the GM bytes a transfer touches. The common case, one access covering a
        buffer's single tracked segment, is handled inline; everything else goes through
        RangeTracker. ``line``: given for a record merged from two masked arms (sim/masks.py),
        whose line may differ per lane; otherwise the calling kernel line.
        """
        if self.mask is not None:  # an arm under a lane mask: held back, recorded when both arms are done
            return self.mask.hold((pipe, name, op, a, b, c, d, gm, tuple(reads), tuple(writes), deps, kind,
                                   self.kernel_line()))
        if kind == NORMAL:
            need = PIPE_CORE[pipe]
            if need is not None and need is not self.core_type:
                self.claim(need, name)
        vcp = self.vc[pipe]
        for slot, lo, hi in reads:
            tr = slot.tracker
            starts = tr.starts
            if not starts:
                continue
            if len(starts) == 1 and starts[0] <= lo and tr.ends[0] >= hi:
                w = tr.writers[0]
                if w is not None and w[0] != pipe and vcp[w[0]] < w[1]:
                    self._race(pipe, name, slot, lo, hi, w, "reads")
                continue
            hit = tr.conflict(lo, hi, pipe, vcp, False)
            if hit is not None:
                self._race(pipe, name, slot, lo, hi, hit, "reads")
        for slot, lo, hi in writes:
            tr = slot.tracker
            starts = tr.starts
            if not starts:
                continue
            if len(starts) == 1 and starts[0] <= lo and tr.ends[0] >= hi:
                w = tr.writers[0]
                if w is not None and w[0] != pipe and vcp[w[0]] < w[1]:
                    self._race(pipe, name, slot, lo, hi, w, "writes")
                for p, sq in tr.readers[0].items():
                    if p != pipe and vcp[p] < sq:
                        self._race(pipe, name, slot, lo, hi, (p, sq), "writes")
                continue
            hit = tr.conflict(lo, hi, pipe, vcp, True)
            if hit is not None:
                self._race(pipe, name, slot, lo, hi, hit, "writes")
        # every range checked against the state before this instruction; now they are recorded
        seq = vcp[pipe] + 1
        for slot, lo, hi in reads:
            tr = slot.tracker
            starts = tr.starts
            if len(starts) == 1 and starts[0] == lo and tr.ends[0] == hi:
                tr.readers[0][pipe] = seq
            else:
                tr.record_read(lo, hi, pipe, seq)
        for slot, lo, hi in writes:
            tr = slot.tracker
            starts = tr.starts
            if len(starts) == 1 and starts[0] == lo and tr.ends[0] == hi:
                tr.writers[0] = (pipe, seq)
                tr.readers[0].clear()  # (no one else holds a segment's reader dict)
            else:
                tr.record_write(lo, hi, pipe, seq)
        records = self.records
        idx = len(records)
        # The kernel line (kernel_line(), its common case inline: this runs once per record)
        f = self.caller
        if line is not None:
            self.last_line = line
        elif f is not None and f.f_code.co_filename == self.kernel_file:
            line = self.lines.get((id(f.f_code), f.f_lasti))
            if line is None:
                line = self._new_site(f)
            self.last_line = line
        else:
            line = self.kernel_line()
        if gm is None:
            records.append((pipe, kind, op, a, b, c, d, -1, 0, 0, deps or None, name, line))
        else:
            records.append((pipe, kind, op, a, b, c, d, gm[0], gm[1], gm[2], deps or None, name, line))
        vcp[pipe] = seq
        self.pipe_recs[pipe].append(idx)
        if kind == NORMAL:
            self.instructions += 1
        # Every record counts against the budget, flags and barriers too: the parent decodes and
        # replays each one, so free records would let a kernel make it do unbounded work.
        session = self.session
        session.instructions += self.weight
        if session.instructions > session.caps.record_limit:  # the budget, or a cap of sim/caps.py
            raise session.caps.over_records(session.instructions)
        return idx

    def _race(self, pipe, name, slot, lo, hi, hit, verb) -> None:
        other, seq = hit
        other_name = self.records[self.pipe_recs[other][seq - 1]][11]
        a, b = PIPES[other], PIPES[pipe]
        raise RaceError(
            f"{name} on pipe {b} {verb} bytes [{lo}, {hi}) of {slot.label} that {other_name} on "
            f"pipe {a} also touches, with no sync between {a} and {b}: order them with "
            f"SetFlag/WaitFlag(HardEvent.{a}_{b}, id) or pass the tensor through a queue between these two pipes (TQue, or TQueBind for a copy that never touches V)")

    # -- sync primitives --------------------------------------------------------------------
    def _flag_record(self, pipe: int, name: str, deps: tuple | None) -> int:
        """instr(pipe, name, FLAG, deps=deps, kind=SYNC), the record of every queue call, SetFlag and
        WaitFlag, without instr's general path: a flag touches no bytes (no race check), needs no
        core type and counts no instruction; its line, record and budget are instr's."""
        records = self.records
        idx = len(records)
        f = self.caller  # (kernel_line(), its common case inline, as in instr: one flag per queue call)
        if f is not None and f.f_code.co_filename == self.kernel_file:
            line = self.lines.get((id(f.f_code), f.f_lasti))
            if line is None:
                line = self._new_site(f)
            self.last_line = line
        else:
            line = self.kernel_line()
        records.append((pipe, SYNC, FLAG, 0, 0, 0, 0, -1, 0, 0, deps or None, name, line))
        vcp = self.vc[pipe]
        vcp[pipe] += 1
        self.pipe_recs[pipe].append(idx)
        session = self.session
        session.instructions += self.weight
        if session.instructions > session.caps.record_limit:
            raise session.caps.over_records(session.instructions)
        return idx

    def signal(self, pipe: int, name: str) -> Gate:
        """A flag raised on ``pipe`` once all its earlier work is done (SetFlag, EnQue, FreeTensor)."""
        idx = self._flag_record(pipe, name, None)
        return Gate((idx,), list(self.vc[pipe]), 0, self.knows[pipe])

    def wait(self, pipe: int, gate: Gate, name: str) -> None:
        """``pipe`` blocks until ``gate``'s flag is up (WaitFlag, DeQue, AllocTensor of a freed buffer):
        every later instruction of ``pipe`` is ordered after the work the flag covers."""
        vcd = self.vc[pipe]
        vcd[:] = map(max, vcd, gate.vc)
        if gate.knows:  # (nothing known of other cores, the usual case, changes nothing)
            self.knows[pipe] = merge(self.knows[pipe], gate.knows)
        self._flag_record(pipe, name, gate.deps)

    def set_flag(self, src: int, dst: int, event_id: int, name: str) -> None:
        self.flags.setdefault((src, dst, event_id), []).append(self.signal(src, name))

    def wait_flag(self, src: int, dst: int, event_id: int, name: str) -> None:
        pending = self.flags.get((src, dst, event_id))
        if not pending:
            raise KernelTimeout(
                f"{name}: no SetFlag(HardEvent.{PIPES[src]}_{PIPES[dst]}, {event_id}) is pending, "
                f"so pipe {PIPES[dst]} would wait forever (deadlock); every WaitFlag needs an earlier SetFlag")
        self.wait(dst, pending.pop(0), name)

    def barrier(self, pipe: int | None, name: str) -> None:
        """PipeBarrier: pipe X drains (its next instruction pays its head); PIPE_ALL syncs all pipes."""
        if pipe is not None:
            self.instr(pipe, name, MARK, kind=BARRIER)
            return
        deps = tuple(recs[-1] for recs in self.pipe_recs if recs)
        joined = [max(col) for col in zip(*self.vc)]
        for p in range(7):
            self.vc[p] = list(joined)
        known = NOTHING
        for k in self.knows:
            known = merge(known, k)
        self.knows = [known] * 7
        self.instr(S, name, FLAG, deps=deps, kind=SYNC)
        for p in range(1, 7):
            if PIPE_CORE[p] is None or self.core_type in (None, PIPE_CORE[p]):  # only the pipes this core has
                self.instr(p, name, MARK, deps=deps, kind=BARRIER)

    def scalar_read_done(self) -> None:
        """The scalar unit waits for its load before it issues anything else: every later
        instruction of every pipe is ordered after the read just recorded."""
        seq = self.vc[S][S]
        for row in self.vc:
            if row[S] < seq:
                row[S] = seq
        known = self.knows[S]
        if known:  # (nothing known of other cores, the usual case, changes nothing)
            self.knows = [merge(k, known) for k in self.knows]

    # -- GM and other cores ------------------------------------------------------------------
    def gm_access(self, pipe: int, buf, lo: int, length: int, pitch: int, count: int, write: bool, name: str) -> None:
        """Record the GM bytes the instruction just recorded on `pipe` touched (`count` bursts of
        `length` bytes, `pitch` apart, from byte `lo` of allocation `buf`) and check them for
        hazards with every other pipe of every core of the launch."""
        if self.launch is None or count <= 0 or length <= 0:
            return
        vcp = self.vc[pipe]
        if self.lanes is not None:
            self._lane_gm_access(pipe, buf, lo, length, pitch, count, write, name)
            return
        if write and self.session.undo is not None:  # (a try that may be thrown away: sage.npu.sim.tries)
            self.session.undo.save_bursts(buf, lo, length, pitch, count)
        where = self._where
        if where[0] != self.core_type:  # the core's name in messages, made once per core type it takes
            where = self._where = (self.core_type, f"{self.core_type or 'AIV'} block {self.block_idx}"
                                                   + (f" sub-block {self.sub}" if self.sub else ""))
        self.launch.hazards.access(buf.id, buf.label, Access(
            self.stream_id, pipe, vcp[pipe], write, write and self.atomic is not None, lo, length,
            pitch if count > 1 else length, count, tuple(vcp), self.knows[pipe], self.last_line, name, where[1]))

    def _lane_gm_access(self, pipe: int, buf, lo, length: int, pitch: int, count: int, write: bool,
                        name: str) -> None:
        """gm_access for each lane of a group: its own stream, its own bytes, the shared clocks."""
        vcp = self.vc[pipe]
        vc, seq, atomic = tuple(vcp), vcp[pipe], write and self.atomic is not None
        if count <= 1:
            pitch = length
        access, label, line = self.launch.hazards.access, buf.label, self.last_line
        knowns = self._lane_knows(self.knows[pipe])
        names = self._lane_names
        if names is None or names[0] != self.core_type:
            names = self._lane_names = (self.core_type, [f"{self.core_type or 'AIV'} block {b}" for b in self.lanes])
        undo = self.session.undo if write else None  # (a lane try may be thrown away: sage.npu.sim.tries)
        for sid, where, at, known in zip(self.lane_ids, names[1], per_lane(lo, self.weight), knowns):
            access(buf.id, label, Access(sid, pipe, seq, write, atomic, at, length, pitch, count, vc, known,
                                         line, name, where))
            if undo is not None:
                undo.save_bursts(buf, at, length, pitch, count)

    def lane_records(self, lane: int) -> list[tuple]:
        """Lane `lane`'s records: the group's, with that lane's GM bytes where they differ."""
        records = self.records
        varying = self._varying
        if varying is None:
            varying = self._varying = [i for i, r in enumerate(records)
                                       if r[8].__class__ is LaneValue or r[9].__class__ is LaneValue]
        out = list(records)
        for i in varying:  # (read directly: the group has finished, its values are no longer live)
            r = records[i]
            lo, hi = r[8], r[9]
            out[i] = (*r[:8], lo.v[lane] if lo.__class__ is LaneValue else lo,
                      hi.v[lane] if hi.__class__ is LaneValue else hi, *r[10:])
        for i in self.masked_records:  # (merged arms: instruction, sizes, name, line per lane)
            out[i] = tuple(x.v[lane] if x.__class__ is LaneValue else x for x in out[i])
        return out

    def payload(self, pipe: int) -> dict:
        """What a cross-core flag raised on `pipe` tells the cores it reaches: everything `pipe` knows.

        A lane group speaks of itself with a relative key (`lane_key`): lane i of the group that
        learns it knows lane i of this one, the core of its own block (a flag within one AI Core
        group, modes 1 and 2, pairs cores of one block, and the streams of one block are lanes of
        groups with the same blocks in the same order)."""
        sid = self.stream_id if self.lanes is None else lane_key(self.stream_id)
        own = {(sid, p): s for p, s in enumerate(self.vc[pipe]) if s}
        return merge(dict(self.knows[pipe]), own) if self.knows[pipe] else own

    def payload_to_all(self, pipe: int) -> dict:
        """`payload` for a flag that reaches cores of every block (mode 0, SyncAll): relative keys
        spelt out for each lane, since each of them is now known to every core."""
        told = self.payload(pipe)
        if not any(key[0] < 0 for key in told):
            return told
        out: dict = {}
        for (sid, p), seq in told.items():
            for key in ([(sid, p)] if sid >= 0 else [(~sid + j, p) for j in range(self.weight)]):
                if out.get(key, 0) < seq:
                    out[key] = seq
        return out

    def _lane_knows(self, known: dict) -> list[dict] | tuple:
        """What each lane of this group knows of other cores, with relative keys made absolute
        (lane i: the stream of lane i of that group); cached per knowledge dict, which is
        replaced, never changed, when knowledge grows."""
        cached = self._knows_cache
        if cached is not None and cached[0] is known:
            return cached[1]
        if not any(key[0] < 0 for key in known):
            per: list[dict] | tuple = (known,) * self.weight
        else:
            per = []
            for i in range(self.weight):
                mine: dict = {}
                for (sid, p), seq in known.items():
                    key = (sid, p) if sid >= 0 else (~sid + i, p)
                    if mine.get(key, 0) < seq:
                        mine[key] = seq
                per.append(mine)
        self._knows_cache = (known, per)
        return per

    def learn(self, payload: dict) -> None:
        """After a cross-core wait or SyncAll, every later instruction of every pipe knows `payload`."""
        self.knows = [merge(k, payload) for k in self.knows]

    # -- accounting -------------------------------------------------------------------------
    def claim(self, core_type: str, what: str) -> None:
        """`what` needs a `core_type` core: the core is that type from now on, or this is a CoreTypeError."""
        if self.core_type == core_type:
            return
        if self.core_type is None:
            self.core_type = core_type
            if self.launch is not None:
                self.launch.claimed(self)
            return
        kind = "cube (L1/L0, LoadData, Mmad, Fixpipe)" if core_type == AIC else "vector unit and UB"
        declared = self.launch is not None and self.launch.declared is not None
        hint = ("guard it with `if ASCEND_IS_AIC:` / `if ASCEND_IS_AIV:` so each core type runs its own part"
                if declared else
                "a kernel using both declares KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2), splits the work "
                "with ASCEND_IS_AIC / ASCEND_IS_AIV and passes data through GM with CrossCoreSetFlag/WaitFlag")
        raise CoreTypeError(f"{what} needs the {kind}, which an {self.core_type} core does not have: on a 910B "
                            f"the cube (AIC) and vector (AIV) units are separate cores; {hint}")

    @property
    def uses_cube(self) -> bool:
        return self.core_type == AIC

    def space(self, name: str, what: str) -> MemSpace:
        """A local memory of this core (claiming the core type that has it)."""
        self.claim(SPACE_CORE[name], what)
        return self.spaces[name]


def lane_key(stream_id: int) -> int:
    """The relative key of a lane group whose first lane is stream `stream_id` (CoreState.payload):
    negative, so never a stream id; ~key + i is lane i's stream."""
    return ~stream_id


_current: CoreState | None = None


def current_core(what: str) -> CoreState:
    """The core running kernel code; kernel APIs called from host code are a LaunchError."""
    if _current is None:
        raise LaunchError(f"{what} can only be called inside a kernel launched with kern[block_dim](...)")
    return _current


def set_current(core: CoreState | None) -> None:
    global _current
    _current = core
