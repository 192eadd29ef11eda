"""One forward() run: GM allocations and the launches made so far (their instruction records).

The session only runs kernels functionally and records what they did; timing is the
replay's job (``sage.npu.replay``), which may run in another process.
"""

from __future__ import annotations

import os
import random
import numpy as np

from sage.npu.errors import KernelResourceError, LaunchError
from sage.npu.hardware import HardwareSpec
from sage.npu.sim.caps import RunCaps
from sage.npu.sim.opcodes import AIC, vector_keys
from sage.npu.sim.runtrace import RunTrace
from sage.npu.sim import core as core_mod
from sage.npu.sim import tries
from sage.npu.sim.lanes import Divergence, NotLaneable, groups
from sage.npu.sim.tries import GmUndo
from sage.npu.sim.streams import LaunchRun

GM_ALIGN = 512  # allocations start on a 512 B GM line, as device allocators do
BLOCK_DIM_MAX = 65535  # CANN: blockDim is a logical count in [1, 65535] (atlas_ascendc_10_0014, kernel launch)
# A launch whose lane groups diverge is split and run again; after this many splits it runs block by
# block (each split reruns the launch, so a kernel whose blocks keep diverging must not pay for each)
MAX_LANE_SPLITS = 4
MAX_DATA_SPLITS = 1  # of those, splits on values read from tensor data (Divergence.data)
MAX_PEELS = 1        # of those, splits that leave a lone block beside a group


class GmBuffer:
    """One GM allocation: a flat typed numpy array and its device address."""

    __slots__ = ("id", "data", "dtype", "addr", "nbytes", "is_input", "label")

    def __init__(self, id: int, data: np.ndarray, addr: int, is_input: bool):
        self.id, self.data, self.dtype, self.addr = id, data, data.dtype, addr
        self.nbytes = data.nbytes
        self.is_input = is_input
        self.label = f"GM tensor #{id} ({data.dtype.name}[{data.size}])"  # for race messages (dtype.name is slow)


def gm_addresses(sizes: list[int]) -> list[int]:
    """Device addresses of allocations of these sizes made in this order (512 B lines)."""
    out, nxt = [], 0
    for n in sizes:
        out.append(nxt)
        nxt += -(-max(n, 1) // GM_ALIGN) * GM_ALIGN
    return out


class Session:
    def __init__(self, spec: HardwareSpec, *, kernel_file: str = "kernel.py", instruction_budget: int = 20_000_000,
                 lockstep: bool = True):
        self.spec = spec
        self.lockstep = lockstep  # run blocks with one control flow as lane groups (sage.npu.sim.lanes)
        self.undo: GmUndo | None = None  # while a try that may be thrown away runs: the GM bytes it overwrote
        self.learned: dict[tuple, list | None] = {}  # (kernel, block_dim) -> the partition its last launch ran
        # The Python objects that exist when a launch starts, reached from its kernel, arguments and
        # the kernel file's namespace (tries.preexisting; None: some cannot be watched). execute.py
        # sets it for a kernel file's run; alone, a session watches the launch's own arguments.
        self.state_roots = lambda roots: tries.preexisting(roots, {}, set(), (), set())
        self.kernel_file = kernel_file
        self.repeat_bytes = spec.vector.repeat_bytes
        self.vec_index = {k: i for i, k in enumerate(vector_keys(spec))}
        self.instruction_budget = instruction_budget
        self.buffers: list[GmBuffer] = []
        self._next_addr = 0
        self.trace = RunTrace()
        self.instructions = 0  # simulated so far, against instruction_budget
        self.caps = RunCaps(instruction_budget)  # records, blocks, launches, allocations (sim/caps.py)
        self.lines: dict[tuple, int] = {}  # (id(code), instruction offset) -> kernel line (CoreState.kernel_line)
        self.line_codes: dict[int, object] = {}  # id -> the code object, alive for the run (so ids stay unique)
        # The order blocks run in, per launch: random, so a result carried from block to block
        # in Python state (which the chip's separate cores could never share) comes out wrong.
        self.block_order = random.Random(int.from_bytes(os.urandom(8), "little"))
        self.phase = 0   # +1 when a launch starts and when it ends: orders printed text (print_order)

    def allocate(self, data: np.ndarray, is_input: bool) -> GmBuffer:
        flat = np.ascontiguousarray(data).reshape(-1)
        self.caps.allocation(len(self.buffers) + 1)
        buf = GmBuffer(len(self.buffers), flat, self._next_addr, is_input)
        self._next_addr += -(-max(flat.nbytes, 1) // GM_ALIGN) * GM_ALIGN
        self.buffers.append(buf)
        self.trace.allocations.append((flat.nbytes, is_input))
        return buf

    def launch(self, fn, name: str, block_dim, args: tuple, kwargs: dict, on_block_end=None) -> None:
        if isinstance(block_dim, bool) or not isinstance(block_dim, (int, np.integer)):
            raise LaunchError(f"block_dim must be an int, got {type(block_dim).__name__}")
        block_dim = int(block_dim)
        if not 1 <= block_dim <= BLOCK_DIM_MAX:
            raise LaunchError(f"block_dim={block_dim} is out of range: a launch has 1..{BLOCK_DIM_MAX} logical "
                              f"blocks (more blocks than the {self.spec.chip.aiv_cores} AIV / "
                              f"{self.spec.chip.aic_cores} AIC cores run in waves)")
        self.caps.launch_start(self.instructions, block_dim, len(self.trace.launches))
        self.phase += 1
        try:
            self.trace.launches.append(self._run_launch(fn, name, block_dim, args, kwargs, on_block_end))
        finally:
            self.phase += 1
        self.caps.launch_end(self.trace.launches[-1].blocks)

    def _run_launch(self, fn, name: str, block_dim: int, args: tuple, kwargs: dict, on_block_end):
        """Run a launch in lane groups where it can be (all blocks in one group first; a group
        that diverges is split by the value its lanes disagreed on), else block by block.

        A try that fails is thrown away whole before the launch runs again (sage.npu.sim.tries):
        the GM bytes it wrote are put back, and it could not change a Python object that existed
        before the launch. So the run that is judged and timed is one uninterrupted execution of
        the launch, whatever a thrown-away try computed or left behind."""
        partition = [tuple(range(block_dim))] if self.lockstep and block_dim > 1 else None
        # A kernel launched again with as many blocks starts from the partition its last launch
        # ended with (a loop of launches pays its splits once): any partition gives the same
        # run, so this only saves the tries that would find it again
        learned_key = (fn, block_dim)
        if partition is not None and learned_key in self.learned:
            partition = self.learned[learned_key]
        frozen = self.state_roots((fn, args, kwargs)) if partition is not None else None
        if frozen is None:  # state the guards cannot watch: no try may be thrown away, so none in lanes
            partition = None
        splits = data_splits = peeled = 0
        while True:
            count = self.instructions
            undo = self.undo = GmUndo() if partition is not None else None
            tries.freeze(frozen if partition is not None else None)
            try:
                done = LaunchRun(self, fn, name, block_dim, args, kwargs, on_block_end, partition).run()
                if self.lockstep and block_dim > 1:
                    self.learned[learned_key] = partition
                return done
            except KernelResourceError:
                raise  # block by block the launch makes the same records: no retry (it would take 48x longer)
            except (Divergence, NotLaneable, Exception) as failed:
                if undo is None:
                    raise
                undo.restore()
                self.instructions = count
                splits += 1
                diverged = isinstance(failed, Divergence) and failed.group is not None
                data_splits += diverged and failed.data
                # (lanes that part on data once tend to part again on every row: a second split on
                # data runs the launch block by block instead of a retry per row)
                split = (groups(failed.values, failed.group) if diverged and splits <= MAX_LANE_SPLITS
                         and data_splits <= MAX_DATA_SPLITS else None)
                if split is not None and len(failed.group) > 2 and any(len(g) == 1 for g in split):
                    # a lone block split off a group (a tail block) once is common; a second time,
                    # the blocks' work differs block by block (work items dealt unevenly), and a
                    # retry per block would cost more than the lanes save
                    peeled += 1
                    if peeled > MAX_PEELS:
                        split = None
                if split is not None:
                    partition = [g for g in partition if g != failed.group] + split
                    if all(len(g) == 1 for g in partition):
                        partition = None
                else:  # not lane-ready, an error (it comes again, as it comes block by block), or too many splits
                    partition = None
            finally:
                tries.freeze(None)
                self.undo = None

    def print_order(self) -> tuple:
        """Where text printed now belongs: host code between launches, or a block of a launch."""
        core = core_mod._current
        if core is None:
            return (self.phase, -1, 0, 0)
        if core.lanes is not None:  # text printed once for a group would stand for each of its blocks
            raise NotLaneable("print in a lane group")
        return (self.phase, core.block_idx, core.core_type != AIC, core.sub)
