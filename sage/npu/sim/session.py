"""One forward() run: GM allocations, the L2 state, and the launches made so far."""

from __future__ import annotations

import numpy as np

from sage.npu.errors import LaunchError
from sage.npu.hardware import HardwareSpec
from sage.npu.sim import core as core_mod
from sage.npu.sim.costs import CostModel
from sage.npu.sim.l2 import L2Cache
from sage.npu.sim.multicore import BlockRun, LaunchTiming, time_launch

GM_ALIGN = 512  # allocations start on a 512 B GM line, as device allocators do


class GmBuffer:
    """One GM allocation: a flat typed numpy array and its device address."""

    __slots__ = ("id", "data", "dtype", "addr", "nbytes", "is_input")

    def __init__(self, id: int, data: np.ndarray, addr: int, is_input: bool):
        self.id, self.data, self.dtype, self.addr = id, data, data.dtype, addr
        self.nbytes = data.nbytes
        self.is_input = is_input


class Session:
    def __init__(self, spec: HardwareSpec, *, keep_trace: bool = False, instruction_budget: int = 20_000_000):
        self.spec = spec
        self.costs = CostModel(spec)
        self.l2 = L2Cache(spec.chip.l2_bytes)
        self.keep_trace = keep_trace
        self.instruction_budget = instruction_budget
        self.buffers: list[GmBuffer] = []
        self._next_addr = 0
        self.launches: list[LaunchTiming] = []
        self.blocks_run: list[BlockRun] = []
        self.launch_blocks: list[list[BlockRun]] = []  # kept only for traces
        self._launch_block_dim = 0
        self.instructions = 0  # simulated so far, against instruction_budget

    def allocate(self, data: np.ndarray, is_input: bool) -> GmBuffer:
        flat = np.ascontiguousarray(data).reshape(-1)
        buf = GmBuffer(len(self.buffers), flat, self._next_addr, is_input)
        self._next_addr += -(-max(flat.nbytes, 1) // GM_ALIGN) * GM_ALIGN
        self.buffers.append(buf)
        return buf

    def launch(self, fn, name: str, block_dim, args: tuple, kwargs: dict) -> None:
        limit = self.spec.launch.max_block_dim_vector
        if isinstance(block_dim, bool) or not isinstance(block_dim, (int, np.integer)):
            raise LaunchError(f"block_dim must be an int, got {type(block_dim).__name__}")
        block_dim = int(block_dim)
        if not 1 <= block_dim <= limit:
            raise LaunchError(
                f"block_dim={block_dim} is out of range for {self.spec.name}: a vector kernel may use 1..{limit} "
                f"blocks (one per AIV core), a cube kernel 1..{self.spec.launch.max_block_dim_cube}")
        self._launch_block_dim = block_dim
        blocks = []
        try:
            for b in range(block_dim):
                core = core_mod.CoreState(self, b, block_dim)
                core_mod.set_current(core)
                fn(*args, **kwargs)
                self.instructions += core.instructions
                blocks.append(BlockRun(core.records, core.bytes, core.hbm_bytes, core.macs,
                                       core.vector_cycles, core.instructions, core.uses_cube))
        finally:
            core_mod.set_current(None)
        chip = self.spec.chip
        n_cores = chip.aic_cores if any(b.uses_cube for b in blocks) else chip.aiv_cores
        timing = time_launch(name, blocks, n_cores, self.costs.issue, self.spec.hbm_bytes_per_cycle,
                             self.spec.launch_overhead_cycles, keep=self.keep_trace)
        if not self.keep_trace:
            for b in blocks:
                b.records = []  # timing is done; keep the counters only
        self.launches.append(timing)
        self.blocks_run.extend(blocks)
        self.launch_blocks.append(blocks if self.keep_trace else [])

    def check_cube_launch(self, what: str) -> None:
        limit = self.spec.launch.max_block_dim_cube
        if self._launch_block_dim > limit:
            raise LaunchError(
                f"{what} uses the cube unit, so this kernel runs on AIC cores: block_dim may be at most "
                f"{limit} on {self.spec.name}, it was launched with {self._launch_block_dim}")
