"""GM hazards between the cores of one launch: byte-precise, ordered only by SyncAll and cross-core flags."""

import numpy as np

# Block b copies its 64-element tile of x to y, then reads back block (b+1)'s tile of y: the
# neighbour may not have written it yet (blocks run at the same time).
NEIGHBOUR = """
@kernel
def k(x, y, z, n):
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0)
    b = GetBlockIdx()
    pipe = TPipe(); q = TQueBind(TPosition.VECIN, TPosition.VECOUT, 1); pipe.InitBuffer(q, 1, 64 * 4)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x); yg = GlobalTensor(); yg.SetGlobalBuffer(y)
    zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    t = q.AllocTensor(float32)
    DataCopy(t, xg[b * 64], 64)
    q.EnQue(t); t = q.DeQue(float32)
    DataCopy(yg[b * 64], t, 64)  # @write
    SYNC
    SetFlag(HardEvent.MTE3_MTE2, 0); WaitFlag(HardEvent.MTE3_MTE2, 0)
    DataCopy(t, yg[((b + 1) % n) * 64], 64)  # @read
    SetFlag(HardEvent.MTE2_MTE3, 0); WaitFlag(HardEvent.MTE2_MTE3, 0)
    DataCopy(zg[b * 64], t, 64)
    q.FreeTensor(t)

def forward(x, blocks=4):
    y = empty_like(x); z = empty_like(x)
    k[blocks](x, y, z, blocks)
    return z
"""


def _line(src: str, marker: str) -> int:
    return next(i for i, text in enumerate(src.splitlines(), 1) if marker in text)


def test_reading_a_neighbour_block_s_output_without_sync_is_a_race_naming_both_lines(run):
    src, result = run(NEIGHBOUR.replace("SYNC", "pass"), [np.arange(256, dtype=np.float32)])
    assert result.error is not None and result.error.type == "RaceError"
    assert "no sync between the two cores" in result.error.message
    # whichever of the two runs second is the error's line; the message names the other one
    lines = {_line(src, "# @read"), _line(src, "# @write")}
    assert result.error.line in lines
    (other,) = lines - {result.error.line}
    assert f"(kernel line {other})" in result.error.message


def test_sync_all_between_write_and_read_makes_it_legal_and_correct(run):
    x = np.arange(256, dtype=np.float32)
    _, result = run(NEIGHBOUR.replace("SYNC", "SyncAll()"), [x])
    assert result.error is None, result.error
    np.testing.assert_array_equal(result.outputs[0], np.roll(x, -64))


# Block b writes rows [b*R, (b+1)*R) of x's column stripe b: 32-column stripes of the same 64-column
# rows, one strided DataCopyPad per block. The blocks' byte ranges interleave but share no byte.
STRIPES = """
@kernel
def k(x, y, rows):
    b = GetBlockIdx()
    pipe = TPipe(); q = TQueBind(TPosition.VECIN, TPosition.VECOUT, 1); pipe.InitBuffer(q, 1, rows * 32 * 4)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x); yg = GlobalTensor(); yg.SetGlobalBuffer(y)
    t = q.AllocTensor(float32)
    DataCopyPad(t, xg[b * 32], DataCopyExtParams(rows, 32 * 4, 32 * 4, 0, 0), DataCopyPadExtParams(False, 0, 0, 0))
    q.EnQue(t); t = q.DeQue(float32)
    DataCopyPad(yg[b * OFFSET], t, DataCopyExtParams(rows, 32 * 4, 0, 32 * 4, 0))  # @store
    q.FreeTensor(t)

def forward(x):
    y = empty_like(x)
    k[2](x, y, x.shape[0])
    return y
"""


def test_disjoint_interleaved_stripes_of_the_same_rows_are_legal(run):
    x = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
    _, result = run(STRIPES.replace("OFFSET", "32"), [x])
    assert result.error is None, result.error
    np.testing.assert_array_equal(result.outputs[0], x)


def test_overlapping_stripes_race(run, check_error):
    # block 1 starts 16 columns in: its stripe shares 16 columns of every row with block 0's
    src, result = run(STRIPES.replace("OFFSET", "16"), [np.zeros((16, 64), np.float32)])
    check_error(result, src, "RaceError", "@store", "writes bytes")


# The AIC writes a GM workspace with Fixpipe and raises a cross-core flag; the AIVs wait for it and
# read the workspace. The flag must follow the pipe that wrote (PIPE_FIX): one raised on MTE2
# does not wait for the Fixpipe, and the AIVs may read before the data is there.
HANDOVER = """
@kernel
def k(a, work, y):
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)
    pipe = TPipe()
    wg = GlobalTensor(); wg.SetGlobalBuffer(work)
    if ASCEND_IS_AIC:
        ag = GlobalTensor(); ag.SetGlobalBuffer(a)
        mm = Matmul(pipe, float16, 16, 16, 16)
        mm.SetTensorA(ag, 16, 16)
        mm.SetTensorB(ag, 16, 16)
        mm.IterateAll(wg)
        CrossCoreSetFlag(2, PIPE_X, 1)
    else:
        yg = GlobalTensor(); yg.SetGlobalBuffer(y)
        q = TQueBind(TPosition.VECIN, TPosition.VECOUT, 1); pipe.InitBuffer(q, 1, 128 * 4)
        CrossCoreWaitFlag(1)
        t = q.AllocTensor(float32)
        DataCopy(t, wg[GetSubBlockIdx() * 128], 128)  # @read
        q.EnQue(t); t = q.DeQue(float32)
        DataCopy(yg[GetSubBlockIdx() * 128], t, 128)
        q.FreeTensor(t)

def forward(a):
    work = empty((16, 16), float32); y = empty((16, 16), float32)
    k[1](a, work, y)
    return y
"""


def test_a_cross_core_flag_on_the_writing_pipe_orders_the_hand_over(run):
    a = np.eye(16, dtype=np.float16) * 2
    _, result = run(HANDOVER.replace("PIPE_X", "PIPE_FIX"), [a])
    assert result.error is None, result.error
    np.testing.assert_array_equal(result.outputs[0], np.eye(16, dtype=np.float32) * 4)


def test_a_cross_core_flag_on_another_pipe_does_not(run, check_error):
    src, result = run(HANDOVER.replace("PIPE_X", "PIPE_MTE2"), [np.eye(16, dtype=np.float16)])
    check_error(result, src, "RaceError", "@read", "no sync between the two cores")


def test_the_burst_overlap_of_two_strided_transfers_is_the_byte_sets_intersection():
    """overlap() (with its constant-time test for one pitch) against the bytes each transfer
    touches, listed one by one, on random layouts of equal and unequal pitches."""
    import random

    from sage.npu.sim.gmhazards import Access, overlap

    def access(lo, length, pitch, count):
        return Access(0, 0, 0, True, False, lo, length, pitch, count, (), {}, 0, "", "")

    def touched(a):
        return {a.lo + i * a.pitch + k for i in range(a.count) for k in range(a.length)}

    rng = random.Random(3)
    for _ in range(3000):
        pitch = rng.randint(1, 48)
        a = access(rng.randint(0, 160), rng.randint(1, 40), pitch, rng.randint(1, 6))
        other_pitch = pitch if rng.random() < 0.7 else rng.randint(1, 48)
        b = access(rng.randint(0, 160), rng.randint(1, 40), other_pitch, rng.randint(1, 6))
        common = touched(a) & touched(b)
        found = overlap(a, b)
        if not common:
            assert found is None
        else:
            lo, hi = found
            assert lo < hi and set(range(lo, hi)) <= common


# One core's scalar unit writes a GM value, then MTE2 reads the page back, N times in order
# (PipeBarrier between them); then one last write with no barrier after a read. Only the last
# pair races: the ordered history before it (checked against only what each pipe does not
# know of the other) must not hide it, nor be reported.
SCALAR_LOOP = """
@kernel
def k(y, z, n):
    pipe = TPipe(); q = TQue(TPosition.VECIN, 1); pipe.InitBuffer(q, 1, 256)
    yg = GlobalTensor(); yg.SetGlobalBuffer(y); zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    for i in range(n):
        yg.SetValue(i % 64, float(i))
        PipeBarrier(PIPE_ALL)
        t = q.AllocTensor(float32)
        DataCopy(t, yg[0], 64)  # @read
        q.EnQue(t); t = q.DeQue(float32)
        q.FreeTensor(t)
        BARRIER
    yg.SetValue(0, 1.0)  # @write
    PipeBarrier(PIPE_ALL)
    t = q.AllocTensor(float32)
    DataCopy(t, yg[0], 64)
    q.EnQue(t); t = q.DeQue(float32)
    PipeBarrier(PIPE_ALL)
    DataCopy(zg[0], t, 64)
    q.FreeTensor(t)

def forward(y, n):
    z = empty_like(y)
    k[1](y, z, n)
    return z
"""


def test_a_long_ordered_history_on_one_page_is_legal(run):
    y = np.zeros(64, dtype=np.float32)
    _, result = run(SCALAR_LOOP.replace("BARRIER", "PipeBarrier(PIPE_ALL)"), [y, 300])
    assert result.error is None, result.error
    want = np.zeros(64, dtype=np.float32)
    for i in range(300):
        want[i % 64] = i
    want[0] = 1.0
    np.testing.assert_array_equal(result.outputs[0], want)


def test_the_one_unordered_pair_after_a_long_ordered_history_is_a_race(run):
    src, result = run(SCALAR_LOOP.replace("BARRIER", "if i < n - 1: PipeBarrier(PIPE_ALL)"),
                      [np.zeros(64, dtype=np.float32), 300])
    assert result.error is not None and result.error.type == "RaceError"
    assert result.error.line == _line(src, "# @write") and f"(kernel line {_line(src, '# @read')})" in result.error.message
    assert "MTE2" in result.error.message and " S " in result.error.message


def _core_write(stream, seq, lo, length, pitch, count):
    from sage.npu.sim.gmhazards import Access

    return Access(stream, 0, seq, True, False, lo, length, pitch if count > 1 else length, count, (seq,), {}, 0,
                  "DataCopyPad", f"AIV block {stream}")


def test_unordered_writes_race_exactly_when_their_byte_sets_meet():
    """GmHazards' verdict on a launch of unordered cores' strided writes (page index, envelopes,
    wide list) against the bytes each write touches, listed one by one: layouts with pitches
    under, at and over a page, spans under and over the wide limit, in every arrival order."""
    import random

    from sage.npu.errors import RaceError
    from sage.npu.sim.gmhazards import _MAX_PAGES, PAGE, GmHazards

    def touched(a):
        return {a.lo + i * a.pitch + k for i in range(a.count) for k in range(a.length)}

    rng = random.Random(7)
    pitches = [96, PAGE - 32, PAGE, PAGE + 64, 2 * PAGE, 3 * PAGE + 8]
    races = 0
    for _ in range(300):
        writes = []
        for stream in range(rng.randint(2, 4)):
            pitch = rng.choice(pitches)
            count = rng.choice([1, 2, 7, 40, _MAX_PAGES + 5]) if pitch >= PAGE else rng.randint(1, 60)
            length = rng.randint(1, min(pitch, 300))
            writes.append(_core_write(stream, 1, rng.randint(0, 4 * PAGE), length, pitch, count))
        expected = any(touched(a) & touched(b) for i, a in enumerate(writes) for b in writes[i + 1:])
        hazards = GmHazards()
        try:
            for w in writes:
                hazards.access(0, "y", w)
            found = False
        except RaceError:
            found = True
        races += found
        assert found == expected, [(w.lo, w.length, w.pitch, w.count) for w in writes]
    assert 30 < races < 270   # both verdicts were exercised


# Block SMALL writes 16 floats in the middle of y; the other block writes one 64-byte burst on
# each of BURSTS pages (one every 4 KB), among them the small write's bytes. Spanning 100 or 600
# pages, the strided write is a wide access: it must still meet the small write whichever comes first.
WIDE = """
@kernel
def k(x, y):
    b = GetBlockIdx()
    pipe = TPipe(); q = TQueBind(TPosition.VECIN, TPosition.VECOUT, 1); pipe.InitBuffer(q, 1, BURSTS * 64)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x); yg = GlobalTensor(); yg.SetGlobalBuffer(y)
    t = q.AllocTensor(float32)
    DataCopy(t, xg[0], 16 * BURSTS)
    q.EnQue(t); t = q.DeQue(float32)
    if b == SMALL:
        DataCopy(yg[(BURSTS // 2) * 1024], t, 16)  # @small
    else:
        DataCopyPad(yg[0], t, DataCopyExtParams(BURSTS, 64, 0, 4096 - 64, 0))  # @wide
    q.FreeTensor(t)

def forward(x):
    y = empty_like(x)
    k[2](x, y)
    return y
"""


def test_a_strided_write_over_many_pages_races_with_a_small_write_in_its_middle(run):
    for bursts in (100, 600):
        for small in (0, 1):
            src = WIDE.replace("BURSTS", str(bursts)).replace("SMALL", str(small))
            _, result = run(src, [np.zeros((bursts + 1) * 1024, dtype=np.float32)])
            assert result.error is not None and result.error.type == "RaceError", (bursts, small, result.error)
            assert "no sync between the two cores" in result.error.message


def _wide(stream: int, lo: int, length: int, pitch: int, count: int, write: bool = True):
    from sage.npu.sim.gmhazards import Access

    return Access(stream, 4, 1, write, False, lo, length, pitch, count, (0,) * 8, {}, 1, "DataCopyPad", f"block {stream}")


def test_wide_strided_writes_race_only_where_their_stripes_share_bytes():
    # column stripes of 2048 rows of 73,728 bytes (level1/8_sort's transposed write): over 512 pages
    # each, so kept in the phase-bucketed wide index (sage/npu/sim/gmstripes.py)
    import pytest

    from sage.npu.errors import RaceError
    from sage.npu.sim.gmhazards import GmHazards

    pitch, rows = 73_728, 2048
    hazards = GmHazards()
    for block in range(40):                       # disjoint 256-byte stripes: no race
        hazards.access(7, "values", _wide(block, block * 256, 256, pitch, rows))
    hazards.access(7, "values", _wide(41, 40 * 256 + pitch * 3, 64, 0, 1, write=False))   # an untouched byte range
    with pytest.raises(RaceError):                # one byte of block 5's stripe, another pitch
        hazards.access(7, "values", _wide(50, 5 * 256 + 255 + pitch * 9, 16, 2 * pitch, 4))
    with pytest.raises(RaceError):                # a stripe wrapping past the row end onto block 0's
        hazards.access(7, "values", _wide(51, pitch - 8, 16, pitch, rows - 1))
    with pytest.raises(RaceError):                # one contiguous read across a whole row
        hazards.access(7, "values", _wide(52, pitch * 100, pitch, 0, 1, write=False))
