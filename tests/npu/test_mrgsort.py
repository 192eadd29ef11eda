"""MrgSort: up to four sorted (value, index) queues merged into one, checked against merges
worked out by hand: ties leave in queue order, isExhaustedSuspension stops when a queue is
used up and sortedNum says how much of each was taken; the hardware's limits (validBit,
4095 structures a queue, sorted queues) are refused."""

import numpy as np

MERGE = """
@kernel
def k(a, b, c, v, i, n, suspend, counts, valid):
    pipe = TPipe()
    bq = TBuf(TPosition.VECCALC); bi = TBuf(TPosition.VECCALC); bo = TBuf(TPosition.VECCALC)
    bx = TBuf(TPosition.VECCALC); bn = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(bq, 3 * 64 * 4); pipe.InitBuffer(bi, 3 * 64 * 4); pipe.InitBuffer(bo, 3 * 64 * 4)
    pipe.InitBuffer(bx, 3 * 64 * 4); pipe.InitBuffer(bn, 32)
    q = bq.Get(float32); qi = bi.Get(int32); o = bo.Get(float32); oi = bx.Get(int32); sn = bn.Get(int32)
    ga = GlobalTensor(); ga.SetGlobalBuffer(a); gb = GlobalTensor(); gb.SetGlobalBuffer(b)
    gc = GlobalTensor(); gc.SetGlobalBuffer(c)
    gv = GlobalTensor(); gv.SetGlobalBuffer(v); gi = GlobalTensor(); gi.SetGlobalBuffer(i)
    DataCopy(q, ga, 64); DataCopy(q[64], gb, 64); DataCopy(q[128], gc, 64)
    Duplicate(qi, 0, 64); Duplicate(qi[64], 1, 64); Duplicate(qi[128], 2, 64)
    Duplicate(o, -7.0, 192); Duplicate(oi, -1, 192)
    PipeBarrier(PipeType.PIPE_ALL)
    MrgSort(o, oi, [q, q[64], q[128]], [qi, qi[64], qi[128]], counts, valid, sn, suspend, True)
    PipeBarrier(PipeType.PIPE_ALL)
    DataCopy(gv, o, 192); DataCopy(gi, oi, 192); DataCopy(gi[192], sn, 8)

def forward(a, b, c, suspend=False, counts=(3, 2, 4), valid=0b111):
    v = empty((192,), float32); i = empty((200,), int32)
    k[1](a, b, c, v, i, 64, suspend, list(counts), valid)
    return v, i
"""


def _queues():
    a = np.zeros(64, np.float32)
    b = np.zeros(64, np.float32)
    c = np.zeros(64, np.float32)
    a[:3] = [9, 5, 5]
    b[:2] = [7, 5]
    c[:4] = [8, 5, 1, 0]
    return a, b, c


def test_a_merge_of_three_queues_keeps_queue_order_among_ties(run):
    src, result = run(MERGE, list(_queues()))
    assert result.error is None, result.error
    v, i = result.outputs
    # descending: 9(a) 8(c) 7(b) then the 5s of a, a, b, c in queue order, 1(c) 0(c)
    assert v[:9].tolist() == [9, 8, 7, 5, 5, 5, 5, 1, 0] and (v[9:] == -7).all()
    assert i[:9].tolist() == [0, 2, 1, 0, 0, 1, 2, 2, 2]
    assert i[192:196].tolist() == [3, 2, 4, 0]          # sortedNum: everything of each queue


def test_exhausted_suspension_stops_when_a_queue_is_used_up(run):
    a, b, c = _queues()
    src = MERGE.replace("def forward(a, b, c, suspend=False", "def forward(a, b, c, suspend=True")
    _, result = run(src, [a, b, c])
    assert result.error is None, result.error
    v, i = result.outputs
    # a (9, 5, 5) is used up when its second 5 leaves, before the tied 5s of b and c: 9 8 7 5 5
    assert v[:5].tolist() == [9, 8, 7, 5, 5] and (v[5:] == -7).all()
    assert i[:5].tolist() == [0, 2, 1, 0, 0] and i[192:196].tolist() == [3, 1, 1, 0]


def test_nan_ranks_above_every_number(run):
    a, b, c = _queues()
    a[:3] = [np.nan, 5, 5]
    _, result = run(MERGE, [a, b, c])
    assert result.error is None, result.error
    v = result.outputs[0]
    assert np.isnan(v[0]) and v[1:9].tolist() == [8, 7, 5, 5, 5, 5, 1, 0]


def test_the_hardware_limits_are_refused(run):
    a, b, c = _queues()
    for change, text in (("valid=0b111)", "valid=0b101)"), ("counts=(3, 2, 4)", "counts=(4096, 2, 4)")):
        _, result = run(MERGE.replace(change, text), [a, b, c])
        assert result.error is not None and result.error.type == "UnsupportedError", result.error
    unsorted = a.copy()
    unsorted[:3] = [5, 9, 5]
    _, result = run(MERGE, [unsorted, b, c])
    assert result.error is not None and "not sorted" in result.error.message
