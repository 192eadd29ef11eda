"""What one forward() run may make: the caps that keep the judging process bounded.

The child sends its instruction records to the parent, which decodes and replays every one
(docs/security.md §5), so what a run makes is what the parent must hold: a kernel that makes
millions of cheap records, blocks, launches or allocations would otherwise grow the parent by
gigabytes (a 48-lane kernel of 5 M records: +1.06 GB) or end, after a minute, in a reply the
parent cannot read (a million `empty()` calls: a 12 MB trace header). Each cap is checked where
the count grows, in the child, so the kernel gets a `KernelResourceError` naming the cap as soon
as it passes it; `runtrace.decode` checks them again on whatever bytes arrive.

The caps sit above the largest honest run and low enough that the parent replaying the
largest trace they allow, every cap at once, grows by 261 MB, under the 300 MB it may
(`benchmarks/trace_caps.py` measures both over 439 honest runs: the examples, the library's and
the offline agent's kernels, every case; the figures are in docs/security.md §5):

- records: every instruction, flag and barrier record of every block (a lane group's record
  counts once per lane, as the block-by-block run makes it). Largest honest launch and run:
  926,160 (the agent's scatter kernel, level1/21, scalar GetValue/SetValue in loops); the
  vector-unit matmul example at 1024^3 (tests/npu/test_timing.py) makes 2.18 M in one launch.
- distinct records, as the replay sees them (`opcodes.replay_key`): the wire and the parent
  hold each once, about 1 KB each at worst. Largest honest run: 87,381 (the agent's
  level4/07_sparse_flash_attention, case 2).
- blocks: every block stream of every launch (a MIX_AIC_1_2 block is three). Largest: 389.
- launches and GM allocations (inputs and every `empty()`): largest 12 and 22.
"""

from __future__ import annotations

from sage.npu.errors import KernelResourceError, KernelTimeout
from sage.npu.sim.opcodes import replay_key

MAX_RECORDS_PER_LAUNCH = 2_500_000
MAX_RECORDS = 4_000_000            # per forward() run
MAX_DISTINCT_RECORDS = 200_000     # per run
MAX_BLOCKS = 16_384                # block streams per run
MAX_LAUNCHES = 1_024               # per run
MAX_ALLOCATIONS = 4_096            # GM allocations per run: the inputs and every empty()

ADVICE = {
    "records": "fewer, larger instructions: bigger tiles, vector instructions instead of scalar "
               "GetValue/SetValue loops",
    "distinct": "fewer, larger instructions: bigger tiles, fewer distinct copies",
    "blocks": "block_dim up to the cores, one block per core looping over its share",
    "launches": "one launch doing the work of many",
    "allocations": "allocate each output or workspace once and reuse it",
}


def over(what: str, reached: int, cap: int, advice: str) -> KernelResourceError:
    """The one-line error: which cap, the number reached, what to do."""
    return KernelResourceError(f"{what}: {reached:,} reached, over the cap of {cap:,} ({ADVICE[advice]})")


class RunCaps:
    """Counts what one forward() run makes against the caps (one per `Session`).

    `record_limit` is what `CoreState.instr` compares the session's record count with on every
    record: the lowest of the instruction budget, the run's record cap and the current launch's."""

    def __init__(self, instruction_budget: int):
        self.budget = instruction_budget
        self.record_limit = min(instruction_budget, MAX_RECORDS)
        self.launch_base = 0            # the session's record count when the current launch started
        self.blocks = 0
        self.distinct: set[tuple] = set()

    def allocation(self, count: int) -> None:
        if count > MAX_ALLOCATIONS:
            raise over("GM allocations in one run (the inputs and every empty())", count, MAX_ALLOCATIONS,
                       "allocations")

    def launch_start(self, records: int, block_dim: int, launches: int) -> None:
        """Before a launch runs: its number and blocks against the caps, and its record limit."""
        if launches + 1 > MAX_LAUNCHES:
            raise over("launches in one run", launches + 1, MAX_LAUNCHES, "launches")
        if self.blocks + block_dim > MAX_BLOCKS:
            raise over("blocks in one run (every launch's block_dim)", self.blocks + block_dim, MAX_BLOCKS,
                       "blocks")
        self.launch_base = records
        self.record_limit = min(self.budget, MAX_RECORDS, records + MAX_RECORDS_PER_LAUNCH)

    def over_records(self, records: int) -> KernelTimeout | KernelResourceError:
        """The error for a record count past `record_limit`."""
        if records > self.budget:
            return KernelTimeout(
                f"more than {self.budget} simulated instructions and sync records: the kernel "
                "would run far too long (an unbounded loop, or tiles far too small?)")
        if records > MAX_RECORDS:
            return over("instruction records in one run", records, MAX_RECORDS, "records")
        return over("instruction records in one launch", records - self.launch_base, MAX_RECORDS_PER_LAUNCH,
                    "records")

    def launch_end(self, blocks: list) -> None:
        """After a launch ran: its block streams and the run's distinct records against the caps.
        (Distinct records are counted here, once per launch, and not per record: a launch has at
        most MAX_RECORDS_PER_LAUNCH of them, so the count cannot run away before it is checked.)"""
        self.blocks += len(blocks)
        if self.blocks > MAX_BLOCKS:
            raise over("block streams in one run (a MIX_AIC_1_2 block is three)", self.blocks, MAX_BLOCKS, "blocks")
        distinct = self.distinct
        for block in blocks:
            distinct.update(map(replay_key, dict.fromkeys(block.records)))
        if len(distinct) > MAX_DISTINCT_RECORDS:
            raise over("distinct instruction records in one run", len(distinct), MAX_DISTINCT_RECORDS, "distinct")
