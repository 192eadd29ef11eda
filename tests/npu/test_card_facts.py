"""The DSL card's MIX rules, each checked against the simulator (issue 27): what GetBlockNum()
returns on each core type, that SyncAll(False) spans AIC and AIV while SyncAll() is the AIVs'
alone, that CrossCoreSetFlag refuses PIPE_S, and that AllocTensor's wait sits where it is
called in program order."""

import numpy as np
import pytest

# Each core writes GetBlockNum() and GetBlockNum() * GetTaskRation() (the AIC at row 3*b, its AIVs after it).
COUNTS = """
@kernel
def counts(out):
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)
    g = GlobalTensor(); g.SetGlobalBuffer(out)
    row = 0
    if ASCEND_IS_AIC:
        row = 3 * GetBlockIdx()
    else:
        row = 3 * (GetBlockIdx() // 2) + 1 + GetSubBlockIdx()
    g.SetValue(row * 2, GetBlockNum())
    g.SetValue(row * 2 + 1, GetBlockNum() * GetTaskRation())

def forward(out):
    o = empty((3 * 5, 2), int32)
    counts[5](o)
    return o
"""


def test_get_block_num_is_the_launchs_block_dim_on_both_core_types(run):
    _, result = run(COUNTS, [np.zeros(1, np.int32)])
    assert result.error is None, result.error
    rows = result.outputs[0]
    aic = rows[0::3]
    aiv = np.concatenate([rows[1::3], rows[2::3]])
    assert (aic == [5, 5]).all()           # 5 groups; times 1 on a cube core
    assert (aiv == [5, 10]).all()          # the same 5 on a vector core; times 2: the launch's 10 AIVs


# The AIVs write into a GM workspace; after a SyncAll the AIC of group 0 sums what they wrote.
HANDOFF = """
@kernel
def handoff(work, out):
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)
    wg = GlobalTensor(); wg.SetGlobalBuffer(work); og = GlobalTensor(); og.SetGlobalBuffer(out)
    if ASCEND_IS_AIV:
        wg.SetValue(GetBlockIdx(), GetBlockIdx() + 1)
    SyncAll(False)  # @sync
    if ASCEND_IS_AIC:
        if GetBlockIdx() == 0:
            total = 0
            for i in range(2 * GetBlockNum()):
                total = total + wg.GetValue(i)
            og.SetValue(0, total)

def forward(out):
    work = empty((8,), int32); o = empty((1,), int32)
    handoff[4](work, o)
    return o
"""


def test_sync_all_false_spans_the_cube_and_vector_cores(run):
    _, result = run(HANDOFF, [np.zeros(1, np.int32)])
    assert result.error is None, result.error
    assert int(result.outputs[0][0]) == sum(range(1, 9))    # the AIC saw all 8 AIVs' values


def test_sync_all_default_is_for_vector_cores_only(run, check_error):
    src, result = run(HANDOFF.replace("SyncAll(False)", "SyncAll()"), [np.zeros(1, np.int32)])
    check_error(result, src, "LaunchError", "@sync", "SyncAll(False) on a cube core")


def test_without_the_sync_the_cube_core_races_the_vector_cores(run):
    _, result = run(HANDOFF.replace("    SyncAll(False)  # @sync\n", ""), [np.zeros(1, np.int32)])
    assert result.error is not None and result.error.type == "RaceError", result.error


SET_ON_S = """
@kernel
def flag_on_s(out):
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)
    if ASCEND_IS_AIC:
        CrossCoreSetFlag(2, PIPE_S, 0)  # @set
    else:
        CrossCoreWaitFlag(0)

def forward(out):
    o = empty((1,), int32)
    flag_on_s[1](o)
    return o
"""


def test_cross_core_set_flag_refuses_pipe_s(run, check_error):
    src, result = run(SET_ON_S, [np.zeros(1, np.int32)])
    check_error(result, src, "KernelRuntimeError", "@set", "not PIPE_S or PIPE_ALL")


# One tile: load a into the single VECIN buffer, a long V pass over it, free it; then load b.
# EARLY takes the VECIN buffer again before b's load: that AllocTensor's wait on MTE2 (until V
# freed the buffer) is in program order before b's copy, so the copy waits for the V pass too.
ORDER = """
@kernel
def order(a, b, y, n):
    ag = GlobalTensor(); ag.SetGlobalBuffer(a); bg = GlobalTensor(); bg.SetGlobalBuffer(b)
    yg = GlobalTensor(); yg.SetGlobalBuffer(y)
    pipe = TPipe(); qa = TQue(TPosition.VECIN, 1); qb = TQue(TPosition.VECIN, 1); qo = TQue(TPosition.VECOUT, 1)
    pipe.InitBuffer(qa, 1, n * 4); pipe.InitBuffer(qb, 1, n * 4); pipe.InitBuffer(qo, 1, n * 4)
    xa = qa.AllocTensor(float32); DataCopy(xa, ag, n); qa.EnQue(xa)
    xa = qa.DeQue(float32); o = qo.AllocTensor(float32)
    for k in range(8):
        Exp(o, xa, n)
    qa.FreeTensor(xa)
    if EARLY:
        again = qa.AllocTensor(float32)
    xb = qb.AllocTensor(float32); DataCopy(xb, bg, n); qb.EnQue(xb)
    if not EARLY:
        again = qa.AllocTensor(float32)
    xb = qb.DeQue(float32)
    Add(o, o, xb, n)
    qb.FreeTensor(xb); qa.FreeTensor(again)
    qo.EnQue(o); o = qo.DeQue(float32); DataCopy(yg, o, n); qo.FreeTensor(o)

def forward(a, b):
    y = empty_like(a)
    order[1](a, b, y, a.numel())
    return y
"""


def test_alloc_tensor_waits_where_it_is_called(run):
    a = np.linspace(-1, 1, 4096, dtype=np.float32)
    b = np.ones(4096, np.float32)
    _, late = run("EARLY = False\n" + ORDER, [a, b])
    _, early = run("EARLY = True\n" + ORDER, [a, b])
    assert late.error is None and early.error is None, (late.error, early.error)
    np.testing.assert_allclose(early.outputs[0], np.exp(a) + 1, rtol=1e-5)
    np.testing.assert_array_equal(early.outputs[0], late.outputs[0])
    # early: b's load waits behind the 8 Exp passes; late: it overlaps them. The two loads are the
    # same size, so the run grows by one load's MTE2 time (half the MTE2 busy cycles).
    one_load = early.profile.pipes["MTE2"].busy_cycles / 2
    assert early.profile.cycles - late.profile.cycles == pytest.approx(one_load, rel=0.05)
