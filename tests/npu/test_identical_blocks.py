"""A launch whose 48 blocks run one instruction stream (the same code on other GM rows, with a
scalar each block reads from its own data): every block gets the outputs numpy computes, the
instruction count a hand count gives, and the vector costs the preset's table gives. The
simulator's speed work (kernel lines by code id, one handle table, leaner records) must keep
all three exactly."""

import math

import numpy as np
import pytest

from sage.npu.execute import run_kernel_source
from sage.npu.hardware import load_preset

SPEC = load_preset("ascend910b2")
ROWS, D, BLOCKS = 4, 256, 48

SHIFT_ROWS = """
from sage.npu.ascendc import *

ROWS = 4

@kernel
def shift_rows(x, y, d):
    xg = GlobalTensor(); xg.SetGlobalBuffer(x, GetBlockIdx() * ROWS * d, ROWS * d)
    yg = GlobalTensor(); yg.SetGlobalBuffer(y, GetBlockIdx() * ROWS * d, ROWS * d)
    pipe = TPipe()
    buf = TBuf(TPosition.VECCALC); pipe.InitBuffer(buf, d * 4)
    work = TBuf(TPosition.VECCALC); pipe.InitBuffer(work, 256)
    red = TBuf(TPosition.VECCALC); pipe.InitBuffer(red, 32)
    t, w, r = buf.Get(float32), work.Get(float32), red.Get(float32)
    for i in range(ROWS):
        DataCopy(t, xg[i * d], d)
        SetFlag(HardEvent.MTE2_V, 0); WaitFlag(HardEvent.MTE2_V, 0)
        ReduceMax(r, t, w, d)
        SetFlag(HardEvent.V_S, 0); WaitFlag(HardEvent.V_S, 0)
        Adds(t, t, -r.GetValue(0), d)
        Muls(t, t, 0.5, d)
        SetFlag(HardEvent.V_MTE3, 0); WaitFlag(HardEvent.V_MTE3, 0)
        DataCopy(yg[i * d], t, d)
        SetFlag(HardEvent.MTE3_MTE2, 0); WaitFlag(HardEvent.MTE3_MTE2, 0)

def forward(x):
    y = empty_like(x)
    shift_rows[x.shape[0] // ROWS](x, y, x.shape[1])
    return y
"""


@pytest.fixture(scope="module")
def run():
    x = np.random.default_rng(0).standard_normal((BLOCKS * ROWS, D)).astype(np.float32)
    result = run_kernel_source(SHIFT_ROWS, [x], trace=True)
    assert result.error is None, result.error
    return x, result


def test_every_block_computes_its_own_rows(run):
    x, result = run
    # float32 subtraction of the row's own maximum, then an exact halving: the same IEEE
    # operations numpy does, so the bits must agree
    expected = (x - x.max(axis=1, keepdims=True)) * np.float32(0.5)
    np.testing.assert_array_equal(result.outputs[0], expected)


def test_the_instruction_count_is_the_hand_count(run):
    _, result = run
    # per row: DataCopy in, ReduceMax, GetValue, Adds, Muls, DataCopy out (flags are not instructions)
    assert result.profile.instructions == BLOCKS * ROWS * 6


def _cost(key: str) -> tuple[float, float]:
    cost = SPEC.vector.costs[key]
    head, slope = cost.b32
    return head, slope * math.ceil(D * 4 / SPEC.vector.repeat_bytes)


def test_every_block_pays_the_table_costs_for_its_vector_work(run):
    _, result = run
    adds_head, adds_body = _cost("vadds")
    _, muls_body = _cost("vmuls")
    for block in range(BLOCKS):
        events = [e for e in result.trace if e.get("ph") == "X" and e["pid"] == block + 1 and e["tid"] == "V"]
        adds = [e["dur"] * SPEC.cycles_per_us for e in events if e["name"] == "Adds"]
        muls = [e["dur"] * SPEC.cycles_per_us for e in events if e["name"] == "Muls"]
        assert len(adds) == len(muls) == ROWS
        # Adds waits for the scalar read, so V is idle and it pays its head; Muls is queued right
        # behind it and pays only slope x repeats (the trace keeps 4 decimals of a microsecond)
        assert adds == pytest.approx([adds_head + adds_body] * ROWS, abs=0.2)
        assert muls == pytest.approx([muls_body] * ROWS, abs=0.2)
