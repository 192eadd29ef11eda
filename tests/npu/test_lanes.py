"""Lane groups (sage/npu/sim/lanes.py): blocks run in lockstep give what each block gives alone.

Every kernel here runs twice, block by block (`lockstep=False`) and in lane groups (the
default), and the two runs must agree bit for bit: outputs, every block's records, errors.
How the launch was split is observed by wrapping LaunchRun, so a test also fails when the
lanes silently stop being used.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from sage.npu.execute import run_functional
from sage.npu.hardware import load_preset
from sage.npu.sim import lanes as L
from tests.npu.conftest import kernel_source

SPEC = load_preset("ascend910b2")


def both(body: str, args: list, **kw):
    """The run block by block and the run in lane groups, checked equal; the latter returned."""
    src = kernel_source(body)
    alone = run_functional(src, args, spec=SPEC, filename="k.py", lockstep=False, **kw)
    grouped = run_functional(src, args, spec=SPEC, filename="k.py", **kw)
    assert (alone.error is None) == (grouped.error is None), (alone.error, grouped.error)
    if alone.error is not None:
        assert (alone.error.type, alone.error.message, alone.error.line) == \
               (grouped.error.type, grouped.error.message, grouped.error.line)
        return grouped
    for x, y in zip(alone.outputs, grouped.outputs):
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)
    assert alone.printed == grouped.printed
    for p, q in zip(alone.trace.launches, grouped.trace.launches, strict=True):
        assert [(t.block, t.core_type, t.records) for t in p.blocks] == \
               [(t.block, t.core_type, t.records) for t in q.blocks]
    return grouped


# Rows of a (rows, d) fp16 tensor split over blocks as the softmax example splits them: the
# last block gets fewer rows, so its lanes diverge in Init. Per row: in, Cast up, a scalar
# from the data (ReduceMax, GetValue), Adds(-max) and Muls(1/max) with that per-lane scalar,
# Exp, Cast down (rint), out.
ROWS = """
class K:
    def Init(self, x, y, rows, d, per_block):
        first = per_block * GetBlockIdx()
        self.rows = max(0, min(per_block, rows - first))
        self.d = d
        self.x = GlobalTensor()
        self.x.SetGlobalBuffer(x, first * d, self.rows * d)
        self.y = GlobalTensor()
        self.y.SetGlobalBuffer(y, first * d, self.rows * d)
        self.pipe = TPipe()
        self.qi = TQue(TPosition.VECIN, 2)
        self.qo = TQue(TPosition.VECOUT, 2)
        self.pipe.InitBuffer(self.qi, 2, d * 2)
        self.pipe.InitBuffer(self.qo, 2, d * 2)
        self.f = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.f, d * 4)
        self.w = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.w, 256)
        self.r = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.r, 32)

    def Process(self):
        for i in range(self.rows):
            xl = self.qi.AllocTensor(float16)
            DataCopy(xl, self.x[i * self.d], self.d)
            self.qi.EnQue(xl)
            xl = self.qi.DeQue(float16)
            f = self.f.Get(float32)
            r = self.r.Get(float32)
            Cast(f, xl, RoundMode.CAST_NONE, self.d)
            ReduceMax(r, f, self.w.Get(float32), self.d)
            SetFlag(HardEvent.V_S, 0)
            WaitFlag(HardEvent.V_S, 0)
            top = r.GetValue(0)
            Adds(f, f, -top, self.d)
            Muls(f, f, 1.0 / (abs(top) + 1.0), self.d)
            Exp(f, f, self.d)
            yl = self.qo.AllocTensor(float16)
            Cast(yl, f, RoundMode.CAST_RINT, self.d)
            self.qo.EnQue(yl)
            self.qi.FreeTensor(xl)
            yl = self.qo.DeQue(float16)
            DataCopy(self.y[i * self.d], yl, self.d)
            self.qo.FreeTensor(yl)
            BRANCH

@kernel
def k(x, y, rows, d, per_block):
    op = K()
    op.Init(x, y, rows, d, per_block)
    op.Process()

def forward(x):
    rows, d = x.shape
    y = empty_like(x)
    per_block = (rows + 7) // 8
    k[(rows + per_block - 1) // per_block](x, y, rows, d, per_block)
    return y
"""


def rows_kernel(branch: str = "pass") -> str:
    return ROWS.replace("BRANCH", branch)


def data(rows: int = 30, d: int = 128, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, d)).astype(np.float16)


def test_blocks_with_one_control_flow_run_as_one_lane_group(partitions):
    both(rows_kernel(), [data(32)])  # 8 blocks of 4 rows
    assert partitions == [None, [8]]  # (the block-by-block run, then one try: one group of 8)


def test_lanes_that_diverge_in_setup_are_split_by_the_value_and_rerun(partitions):
    both(rows_kernel(), [data(30)])  # 8 blocks: 7 of 4 rows, one of 2
    assert partitions == [None, [8], [1, 7]]


def test_a_branch_on_data_splits_the_lanes_by_its_outcome(partitions):
    # a data-dependent branch: lanes whose row maximum is positive take another path
    x = data(32)
    x[:8] = -np.abs(x[:8])                   # blocks 0 and 1: every maximum negative
    run = both(rows_kernel("if top > 0:\n                PipeBarrier(PIPE_V)"), [x])
    assert run.error is None
    # the group had written GM when it diverged: those bytes are put back and the launch is tried again
    assert partitions[1:] == [[8], [2, 6]]


def test_a_blocks_own_scalar_math_keeps_the_group(partitions):
    # per-block values through math.sqrt, min and max: each lane computes what it computes alone
    body = rows_kernel().replace(
        "            top = r.GetValue(0)\n",
        "            top = r.GetValue(0)\n"
        "            b = GetBlockIdx()\n"
        "            top = top * math.sqrt(b + 1) / max(2.0, min(b + 0.5, 3.0)) + min([b, 5, top])\n"
        "            top = top + max(b + 1, 1)\n")
    run = both(body, [data(32)])
    assert run.error is None and partitions[-1] == [8]


def test_an_int_min_that_clamps_in_some_lanes_splits_where_it_is_made(partitions):
    # min(b, 3): blocks 0-3 take b, blocks 4-7 take 3, a size that soon must be one value: the
    # group splits by which argument each lane took, at the min, not later
    body = rows_kernel().replace(
        "            top = r.GetValue(0)\n",
        "            top = r.GetValue(0)\n"
        "            top = top + min(GetBlockIdx(), 3)\n")
    run = both(body, [data(32)])
    assert run.error is None and partitions[1:] == [[8], [4, 4]]


def test_lanes_that_part_on_data_twice_run_block_by_block(partitions):
    # every row maximum negative, then row 0 positive in blocks 0-3 and row 1 in blocks 0, 1, 4, 5:
    # the group splits on row 0 into 0-3 and 4-7, and 0-3 parts again on row 1. A second split on
    # data runs the launch block by block, not a retry per row (the storm the issue measured)
    x = -np.abs(data(32))
    for block in range(8):
        x[block * 4 + 0, 0] = 1.0 if block < 4 else -1.0
        x[block * 4 + 1, 0] = 1.0 if block in (0, 1, 4, 5) else -1.0
    assert both(rows_kernel("if top > 0:\n                PipeBarrier(PIPE_V)"), [x]).error is None
    assert partitions[1:] == [[8], [4, 4], None]


def test_a_late_split_of_a_kernel_that_updates_gm_in_place_puts_gm_back_first(partitions):
    x = data(32)
    x[:8] = -np.abs(x[:8])
    body = rows_kernel("if top > 0:\n                PipeBarrier(PIPE_V)").replace(
        "    k[(rows + per_block - 1) // per_block](x, y, rows, d, per_block)",
        "    k[(rows + per_block - 1) // per_block](x, x, rows, d, per_block)   # in place\n"
        "    k[(rows + per_block - 1) // per_block](x, y, rows, d, per_block)")
    assert both(body, [x]).error is None
    # launch 1 rewrote bytes it had read when its lanes split: they are put back (sim/tries.py), so
    # the split try reads what the launch started with, as each block alone would; launch 2 of the
    # same kernel starts from the partition launch 1 ended with
    assert partitions[2:] == [[8], [2, 6], [2, 6]]


def test_a_kernel_launched_again_starts_from_its_last_partition(partitions):
    # 30 rows: the last block has 2 of 4 rows and parts from the group in every launch; the
    # second and third launches start split and make one try each
    body = rows_kernel().replace(
        "    k[(rows + per_block - 1) // per_block](x, y, rows, d, per_block)",
        "    for again in range(3):\n"
        "        k[(rows + per_block - 1) // per_block](x, y, rows, d, per_block)")
    assert both(body, [data(30)]).error is None
    assert partitions[3:] == [[8], [1, 7], [1, 7], [1, 7]]


def test_a_dsl_call_not_written_for_lanes_runs_the_launch_block_by_block(partitions):
    body = rows_kernel().replace("        for i in range(self.rows):\n",
                                 "        for i in range(self.rows):\n            self.x.GetValue(i * self.d)\n")
    both(body, [data(32)])
    assert partitions == [None, [8], None]


def test_print_in_a_lane_group_prints_once_per_block(partitions):
    run = both(rows_kernel().replace("    def Process(self):", "    def Process(self):\n        print('rows', self.rows)"),
               [data(32)])
    assert run.printed.count("rows 4") == 8
    assert partitions[-1] is None


def test_errors_are_the_block_by_block_errors():
    # a race inside each block (the scalar read without V_S sync) and an instruction budget
    # blown in a lane group: the error, its message and its line are those of a lone block
    both(rows_kernel().replace("            SetFlag(HardEvent.V_S, 0)\n            WaitFlag(HardEvent.V_S, 0)\n", ""),
         [data(32)])
    run = both(rows_kernel(), [data(32)], instruction_budget=200)
    assert run.error.type == "KernelTimeout"


def test_blocks_that_write_the_same_gm_bytes_race_in_lanes_too():
    body = rows_kernel().replace("DataCopy(self.y[i * self.d], yl, self.d)", "DataCopy(self.y[0], yl, self.d)")
    body = body.replace("self.y.SetGlobalBuffer(y, first * d, self.rows * d)", "self.y.SetGlobalBuffer(y, 0, d)")
    run = run_functional(kernel_source(body), [data(32)], spec=SPEC, filename="k.py")
    assert run.error is not None and run.error.type == "RaceError"
    assert "no sync between the two cores" in run.error.message


def test_isinstance_of_a_value_per_lane_answers_as_each_lane_would(partitions):
    body = rows_kernel().replace("        self.rows = max", "        assert isinstance(first, int)\n        self.rows = max")
    assert both(body, [data(32)]).error is None
    assert partitions[-1] == [8]


# -- LaneValue: Python's scalar arithmetic lane by lane; one Python value only where all agree --

def test_a_value_the_lanes_share_is_a_plain_python_value():
    assert L.lanes([3, 3, 3]) == 3 and type(L.lanes([3, 3, 3])) is int
    for mixed in ([1, 2], [1, 1.0], [0.0, -0.0], [True, 1]):
        assert type(L.lanes(mixed)) is L.LaneValue
    nan = float("nan")
    assert math.isnan(L.lanes([nan, nan]))  # one NaN bit pattern is one value


def test_arithmetic_is_each_lanes_python_arithmetic():
    a, b = [7, -3, 12], [2, 5, -4]
    x, y = L.lanes(a), L.lanes(b)
    cases = [(lambda p, q: p + q), (lambda p, q: p - q * 3), (lambda p, q: p / q), (lambda p, q: p // q),
             (lambda p, q: p % q), (lambda p, q: p ** 2 + q), (lambda p, q: -p), (lambda p, q: abs(q)),
             (lambda p, q: 2.5 * p), (lambda p, q: 1 - p), (lambda p, q: p << 1), (lambda p, q: p & q),
             (lambda p, q: round(p / 3, 2)), (lambda p, q: divmod(p, 4)), (lambda p, q: p < q)]
    for f in cases:
        got = f(x, y)
        want = [f(p, q) for p, q in zip(a, b)]
        assert L.per_lane(got, 3) == tuple(want)
        assert [type(v) for v in L.per_lane(got, 3)] == [type(v) for v in want]


@pytest.mark.parametrize("coerce", [bool, int, float, str, repr, hash, range, lambda v: f"{v}", lambda v: [0, 1][v]])
def test_turning_differing_lanes_into_one_value_diverges(coerce):
    with pytest.raises(L.Divergence) as caught:
        coerce(L.lanes([0, 1]))
    assert caught.value.values == (0, 1)


def test_a_split_groups_blocks_by_their_lanes_value():
    assert L.groups((1, 2, 1, 2, 3), (10, 11, 12, 13, 14)) == [(10, 12), (11, 13), (14,)]
    assert L.groups((0.0, -0.0), (0, 1)) == [(0,), (1,)]


def test_a_scalar_operand_is_rounded_to_the_dtype_lane_by_lane():
    col = L.as_array(L.lanes([1 / 3, 2049.0]), np.dtype(np.float16))
    assert col.shape == (2, 1)
    assert col[0, 0] == np.float16(1 / 3) and col[1, 0] == np.float16(2049.0)


FILL = """
SEEN = []

@kernel
def fill(y, value, n):
    SEEN.append(GetBlockIdx())   # Python state the blocks share: on the chip there is none
    gm = GlobalTensor()
    gm.SetGlobalBuffer(y, GetBlockIdx() * n, n)
    pipe = TPipe()
    q = TQue(TPosition.VECOUT, 1)
    pipe.InitBuffer(q, 1, n * 4)
    t = q.AllocTensor(float32)
    Duplicate(t, value + 0.0, n)
    q.EnQue(t)
    t = q.DeQue(float32)
    DataCopy(gm, t, n)
    q.FreeTensor(t)

def forward(x):
    y = empty((4, 64), float32)
    fill[4](y, 1.0, 64)
    total = sum(SEEN)            # a lane group's block index, used on the host after its launch
    fill[4](y, total, 64)
    return y
"""


def test_a_value_of_a_lane_group_used_after_its_launch_reruns_block_by_block(partitions):
    run = both(FILL, [data(4)])
    assert np.all(run.outputs[0] == 6.0)          # 0 + 1 + 2 + 3, the blocks' indices
    assert [4] in partitions and partitions[-1] is None


FORMS = """
@kernel
def forms(x, y, n):
    gx = GlobalTensor()
    gx.SetGlobalBuffer(x, GetBlockIdx() * n, n)
    gy = GlobalTensor()
    gy.SetGlobalBuffer(y, GetBlockIdx() * n, n)
    pipe = TPipe()
    qi = TQue(TPosition.VECIN, 1)
    qo = TQue(TPosition.VECOUT, 1)
    pipe.InitBuffer(qi, 1, 1024)
    pipe.InitBuffer(qo, 1, 1024)
    tmp = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(tmp, 4096)
    f = qi.AllocTensor(float32)
    DataCopyPad(f, gx, DataCopyExtParams(1, n * 4, 0, 0, 0), DataCopyPadExtParams(True, 0, 256 - n, 0.5))
    qi.EnQue(f)
    f = qi.DeQue(float32)
    a = tmp.Get(float32)
    sums = a[256]
    blocks = a[320]
    wide = a[384]
    m = tmp.Get(uint8)[2048]
    SetFlag(HardEvent.V_S, 0)
    WaitFlag(HardEvent.V_S, 0)
    s = f.GetValue(3)
    SetFlag(HardEvent.S_V, 0)
    WaitFlag(HardEvent.S_V, 0)
    Adds(a, f, s, 64, 4, UnaryRepeatParams())                 # mask form, a scalar per lane
    PipeBarrier(PIPE_V)
    Mul(a, a, f, 64, 4, BinaryRepeatParams())
    PipeBarrier(PIPE_V)
    WholeReduceSum(sums, a, 64, 4, 1, 1, 8)
    BlockReduceMax(blocks, a, 4, 64, 1, 1, 8)
    PipeBarrier(PIPE_V)
    Brcb(wide, blocks, 1, BrcbRepeatParams(1, 8))
    CompareScalar(m, f, s, CMPMODE.GT, 256)
    o = qo.AllocTensor(float32)
    PipeBarrier(PIPE_V)
    Select(o, m, f, a, SELMODE.VSEL_TENSOR_TENSOR_MODE, 256)
    PipeBarrier(PIPE_V)
    Axpy(o, wide, s, 64)
    PipeBarrier(PIPE_V)
    Add(o, o, sums, 8)
    qo.EnQue(o)
    qi.FreeTensor(f)
    o = qo.DeQue(float32)
    DataCopyPad(gy, o, DataCopyExtParams(1, n * 4, 0, 0, 0))
    qo.FreeTensor(o)

def forward(x):
    y = empty_like(x)
    forms[x.shape[0]](x, y, x.shape[1])
    return y
"""


def test_mask_forms_reductions_selects_and_padded_copies_run_in_lanes(partitions):
    x = np.random.default_rng(3).standard_normal((6, 250)).astype(np.float32)
    run = both(FORMS, [x])
    assert run.error is None
    assert partitions[-1] == [6]


SHARE = """
class Box:
    pass

@kernel
def k(x, z, box):
    pipe = TPipe()
    b = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(b, 1024)
    if box.ts:                       # block by block: the block that runs second uses the first's buffer
        box.ts[0].SetValue(0, 1.0)
    else:
        box.ts.append(b.Get(float32))

def forward(x):
    z = empty_like(x)
    box = Box()
    box.ts = []
    k[2](x, z, box)
    return z
"""


def test_blocks_of_a_lane_group_cannot_hand_each_other_buffers(partitions):
    # block by block the second block is refused the first's buffer. A lane group may not change
    # the list made before the launch (sim/tries.py: a thrown-away try would leave it changed),
    # so the launch runs block by block and ends the same way
    src = kernel_source(SHARE)
    alone = run_functional(src, [data(4)], spec=SPEC, filename="k.py", lockstep=False)
    grouped = run_functional(src, [data(4)], spec=SPEC, filename="k.py")
    assert alone.error is not None and alone.error.type == "LaunchError"
    assert grouped.error == alone.error and partitions[-2:] == [[2], None]


TILES = """
@kernel
def tiles(x, y, tiles_per_block, total_tiles):
    gx = GlobalTensor()
    gx.SetGlobalBuffer(x)
    gy = GlobalTensor()
    gy.SetGlobalBuffer(y)
    pipe = TPipe()
    qi = TQue(TPosition.VECIN, 1)
    qo = TQue(TPosition.VECOUT, 1)
    pipe.InitBuffer(qi, 1, 256)
    pipe.InitBuffer(qo, 1, 256)
    t0 = GetBlockIdx() * tiles_per_block
    for t in range(t0, min(total_tiles, t0 + tiles_per_block)):   # global tile indices, per lane
        a = qi.AllocTensor(float32)
        DataCopy(a, gx[t * 64], 64)
        qi.EnQue(a)
        a = qi.DeQue(float32)
        b = qo.AllocTensor(float32)
        Adds(b, a, t * 1.0, 64)
        qo.EnQue(b)
        qi.FreeTensor(a)
        b = qo.DeQue(float32)
        DataCopy(gy[t * 64], b, 64)
        qo.FreeTensor(b)

def forward(x):
    y = empty_like(x)
    total = x.numel() // 64
    tiles[(total + 2) // 3](x, y, 3, total)
    return y
"""


def test_a_loop_over_tile_indices_that_differ_per_lane_runs_in_lanes(partitions):
    x = np.random.default_rng(5).standard_normal((14, 64)).astype(np.float32)  # 14 tiles: 4 blocks of 3, one of 2
    run = both(TILES, [x])
    assert np.array_equal(run.outputs[0], x + np.arange(14, dtype=np.float32)[:, None])
    assert partitions[1:] == [[5], [1, 4]]


def test_the_row_clip_benchmark_kernel_runs_in_one_lane_group(partitions):
    """benchmarks/kernels/row_clip.py branches on every row's maximum (Mins or Adds): its lanes
    run both arms under lane masks (sim/masks.py), so the launch is one try in one group of 48
    (it split on row 0, again on row 1, and ran block by block before: the retry storm
    simulator_speed.py's row clip workload measured). Its output is the clip numpy computes,
    and outputs and records are the same in both modes."""
    from pathlib import Path

    src = (Path(__file__).resolve().parents[2] / "benchmarks" / "kernels" / "row_clip.py").read_text()
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((96, 64)) * 0.3).clip(-0.9, 0.9).astype(np.float32)   # 2 rows per block, 48 blocks
    for block in range(48):
        x[2 * block, 3] = 2.0 if block % 2 else 0.5             # row 0 passes 1.0 in odd blocks
        x[2 * block + 1, 7] = 3.0 if block % 4 < 2 else 0.25    # row 1 in blocks 0, 1 (mod 4): both groups part
    alone = run_functional(src, [x], spec=SPEC, filename="row_clip.py", lockstep=False)
    grouped = run_functional(src, [x], spec=SPEC, filename="row_clip.py")
    want = np.where(x.max(axis=1, keepdims=True) > 1.0, np.minimum(x, 1.0), x)
    assert alone.error is None and grouped.error is None
    assert np.array_equal(alone.outputs[0], want) and np.array_equal(grouped.outputs[0], want)
    assert [b.records for b in alone.trace.launches[0].blocks] == [b.records for b in grouped.trace.launches[0].blocks]
    assert partitions[1:] == [[48]]
