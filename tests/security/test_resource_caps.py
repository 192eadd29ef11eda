"""The caps of sim/caps.py: a kernel over any of them gets a KernelResourceError within seconds,
in the child; a trace over them is refused by the parent unread; and the parent replaying the
largest trace they allow grows by less than 300 MB (the floods and the largest trace are those
of benchmarks/trace_caps.py, which reports the same figures)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from benchmarks.trace_caps import FLOODS, PARENT_LIMIT_MB, TRIP_LIMIT_S, flood_kernel, parent_growth, trip_seconds, \
    worst_trace
from sage.npu.execute import run_functional, run_kernel_source
from sage.npu.hardware import load_preset
from sage.npu.replay import replay
from sage.npu.sim import caps
from sage.npu.sim.opcodes import replay_key
from sage.npu.sim.runtrace import BLOCK, RECORD, TraceError, decode, encode

KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"


@pytest.mark.parametrize("name", sorted(FLOODS))
def test_a_flood_over_each_cap_ends_in_a_resource_error_within_seconds(name):
    seconds, error, message = trip_seconds(name)
    assert error == "KernelResourceError", (name, error, message)
    assert seconds < TRIP_LIMIT_S, f"{name}: {seconds:.1f} s"
    # one line naming the cap and the number reached
    cap = next(getattr(caps, c) for c in ("MAX_RECORDS_PER_LAUNCH", "MAX_RECORDS", "MAX_DISTINCT_RECORDS",
                                          "MAX_BLOCKS", "MAX_LAUNCHES", "MAX_ALLOCATIONS")
               if f"cap of {getattr(caps, c):,}" in message)
    reached = int(message.split(": ", 1)[1].split(" reached")[0].replace(",", ""))
    assert reached > cap and "\n" not in message, message


def test_a_million_empty_calls_end_at_the_allocation_cap_in_process_too():
    start = time.monotonic()
    run = run_kernel_source(flood_kernel("GM allocations"), [np.zeros(64, np.float32)])
    assert run.error is not None and run.error.type == "KernelResourceError", run.error
    assert f"{caps.MAX_ALLOCATIONS + 1:,} reached" in run.error.message
    assert time.monotonic() - start < 5


def _trace(header: dict, rows: int = 0, blocks: list[tuple] = ()) -> bytes:
    head = {"names": ["x"], "allocations": [[1024, True]], "syncs": [], "table": rows, "deps": 0,
            "launches": [{"name": "k", "block_dim": 1, "blocks": len(blocks), "type": "AIV_ONLY"}]} | header
    text = json.dumps(head).encode()
    return (len(text).to_bytes(8, "little") + text + bytes(RECORD.itemsize * rows)
            + np.array(list(blocks), dtype=BLOCK).tobytes())


OVER = {
    "distinct records": {"table": caps.MAX_DISTINCT_RECORDS + 1},
    "launches": {"launches": [{"name": "k", "block_dim": 1, "blocks": 0, "type": "AIV_ONLY"}] * (caps.MAX_LAUNCHES + 1)},
    "allocations": {"allocations": [[64, False]] * (caps.MAX_ALLOCATIONS + 1)},
    "blocks": {"launches": [{"name": "k", "block_dim": 1, "blocks": caps.MAX_BLOCKS + 1, "type": "AIV_ONLY"}]},
}


@pytest.mark.parametrize("name", sorted(OVER))
def test_a_trace_over_a_cap_is_refused_before_its_arrays_are_read(name):
    with pytest.raises(TraceError, match="more than|bounded length"):
        decode(_trace(OVER[name]))


@pytest.mark.parametrize("per_block", [caps.MAX_RECORDS_PER_LAUNCH + 1, caps.MAX_RECORDS // 2 + 1])
def test_records_over_a_cap_are_refused_before_the_index_is_read(per_block):
    """Two blocks of one launch announcing these counts: the launch's (or the run's) cap."""
    data = _trace({"launches": [{"name": "k", "block_dim": 2, "blocks": 2, "type": "AIV_ONLY"}]}, rows=1,
                  blocks=[(0, per_block, 0, 0), (1, per_block, 0, 0)])
    with pytest.raises(TraceError, match="records"):
        decode(data)


def test_the_wire_keeps_every_record_as_the_replay_sees_it_and_the_timing():
    """An example run through encode and decode: each block's records as `replay_key` makes them,
    and the replay of the decoded trace takes the same cycles as the run's own trace."""
    spec = load_preset("ascend910b2")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((96, 256)).astype(np.float16), rng.standard_normal((256, 128)).astype(np.float16)
    run = run_functional((KERNELS / "matmul_vector.py").read_text(), [a, b], spec=spec)
    assert run.error is None, run.error
    back = decode(encode(run.trace))
    for sent, got in zip(run.trace.launches, back.launches, strict=True):
        assert [list(map(replay_key, x.records)) for x in sent.blocks] == [x.records for x in got.blocks]
        assert [(x.block, x.sub, x.core_type) for x in sent.blocks] == [(x.block, x.sub, x.core_type)
                                                                         for x in got.blocks]
    assert replay(back, spec).cycles == replay(run.trace, spec).cycles


def test_a_lane_group_over_the_record_cap_is_not_run_again_block_by_block():
    """Block by block the launch makes the same records: the error comes from the lane group,
    at once (48 records per DSL call), not after a rerun 48 times slower."""
    source = flood_kernel("records per launch")
    start = time.process_time()
    run = run_kernel_source(source, [np.zeros(1 << 22, np.float32)])
    assert run.error.type == "KernelResourceError", run.error
    assert time.process_time() - start < 5


@pytest.mark.slow
def test_the_parent_replaying_the_largest_trace_the_caps_allow_grows_by_less_than_300_mb():
    trace = worst_trace()
    header = json.loads(trace[8:8 + int.from_bytes(trace[:8], "little")])
    assert header["table"] > 0.99 * caps.MAX_DISTINCT_RECORDS and len(header["launches"]) == caps.MAX_LAUNCHES
    mb, _ = parent_growth(trace)
    assert mb < PARENT_LIMIT_MB, f"the parent grew by {mb:.0f} MB"
