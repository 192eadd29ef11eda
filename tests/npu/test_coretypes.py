"""Split cores (AIC cube, AIV vector), kernel types, and sync between cores (CANN, Atlas A2)."""

import numpy as np

# Each block of a MIX_AIC_1_2 launch writes what its cores see into GM: the AIC at row 3*b, its
# two AIVs at rows 3*b + 1 + GetSubBlockIdx().
WHO = """
@kernel
def who(out):
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)
    g = GlobalTensor(); g.SetGlobalBuffer(out)
    row = 3 * GetBlockNum() * 0
    if ASCEND_IS_AIC:
        row = 3 * GetBlockIdx()
    else:
        row = 3 * (GetBlockIdx() // 2) + 1 + GetSubBlockIdx()
    g.SetValue(row * 4 + 0, 1 if ASCEND_IS_AIC else 2)
    g.SetValue(row * 4 + 1, GetBlockIdx())
    g.SetValue(row * 4 + 2, GetSubBlockIdx())
    g.SetValue(row * 4 + 3, GetTaskRation())

def forward(out):
    o = empty((3 * 4, 4), int32)
    who[4](o)
    return o
"""


def test_a_mix_launch_runs_one_aic_and_two_aivs_per_block_with_cann_indices(run):
    _, result = run(WHO, [np.zeros(1, np.int32)])
    assert result.error is None, result.error
    rows = result.outputs[0]
    for b in range(4):
        assert list(rows[3 * b]) == [1, b, 0, 1]                 # AIC: block index b, ratio 1
        assert list(rows[3 * b + 1]) == [2, 2 * b, 0, 2]         # AIV 0: index 2b, ratio 2
        assert list(rows[3 * b + 2]) == [2, 2 * b + 1, 1, 2]     # AIV 1: index 2b + 1
    assert result.profile.cores_used == 3 * 4


UB_THEN_CUBE = """
@kernel
def k(x):
    pipe = TPipe()
    q = TQue(TPosition.VECIN, 1); pipe.InitBuffer(q, 1, 1024)
    a1 = TQue(TPosition.A1, 1); pipe.InitBuffer(a1, 1, 1024)  # @l1

def forward(x):
    k[1](x)
    return empty_like(x)
"""


def test_an_undeclared_kernel_using_ub_and_the_cube_is_a_core_type_error(run, check_error):
    src, result = run(UB_THEN_CUBE, [np.zeros(8, np.float32)])
    check_error(result, src, "CoreTypeError", "@l1", "KERNEL_TYPE_MIX_AIC_1_2")


VECTOR_ON_AIC = """
@kernel
def k(x):
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)
    pipe = TPipe()
    b = TBuf(TPosition.VECCALC); pipe.InitBuffer(b, 1024)  # @ub

def forward(x):
    k[1](x)
    return empty_like(x)
"""


def test_vector_work_on_the_aic_of_a_mix_kernel_names_the_guard(run, check_error):
    src, result = run(VECTOR_ON_AIC, [np.zeros(8, np.float32)])
    check_error(result, src, "CoreTypeError", "@ub", "ASCEND_IS_AIV")


def test_the_kernel_type_must_be_declared_first(run, check_error):
    body = VECTOR_ON_AIC.replace("    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)\n    pipe = TPipe()\n",
                                 "    pipe = TPipe()\n    b0 = TBuf(TPosition.VECCALC); pipe.InitBuffer(b0, 64)\n"
                                 "    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)  # @late\n")
    src, result = run(body, [np.zeros(8, np.float32)])
    check_error(result, src, "LaunchError", "@late", "must come first")


WAIT_FOREVER = """
@kernel
def k(x):
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)
    if ASCEND_IS_AIV:
        CrossCoreWaitFlag(3)  # @wait

def forward(x):
    k[2](x)
    return empty_like(x)
"""


def test_waiting_for_a_flag_no_core_sets_is_a_deadlock_with_its_line(run, check_error):
    src, result = run(WAIT_FOREVER, [np.zeros(8, np.float32)])
    check_error(result, src, "KernelTimeout", "@wait", "deadlock")


# Block b writes x[b] * 2 to a GM workspace; after SyncAll it reads its neighbour's value: only
# the all-core sync makes that value exist (the neighbour may run later).
RING = """
@kernel
def ring(x, work, y, n):
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0)
    b = GetBlockIdx()
    xg = GlobalTensor(); xg.SetGlobalBuffer(x); wg = GlobalTensor(); wg.SetGlobalBuffer(work)
    yg = GlobalTensor(); yg.SetGlobalBuffer(y)
    wg.SetValue(b, xg.GetValue(b) * 2)
    SyncAll()
    yg.SetValue(b, wg.GetValue((b + 1) % n))

def forward(x, blocks=4):
    work = empty_like(x); y = empty_like(x)
    ring[blocks](x, work, y, blocks)
    return y
"""


def test_sync_all_orders_the_blocks_of_a_launch(run):
    x = np.arange(1, 5, dtype=np.float32)
    _, result = run(RING, [x])
    assert result.error is None, result.error
    np.testing.assert_array_equal(result.outputs[0], np.roll(x, -1) * 2)


def test_sync_all_needs_a_mix_kernel_type(run, check_error):
    src, result = run(RING.replace("    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0)\n", "")
                      .replace("    SyncAll()\n", "    SyncAll()  # @sync\n"), [np.ones(4, np.float32)])
    check_error(result, src, "LaunchError", "@sync", "MIX_AIV_1_0")


def test_sync_all_with_more_blocks_than_cores_would_hang(run, check_error):
    x = np.ones(49, np.float32)
    src, result = run(RING.replace("    SyncAll()\n", "    SyncAll()  # @sync\n"), [x], kwargs={"blocks": 49})
    check_error(result, src, "LaunchError", "@sync", "hangs")


def test_more_vector_blocks_than_cores_run_in_waves(run):
    x = np.arange(96, dtype=np.float32)
    body = RING.replace("    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0)\n", "").replace("    SyncAll()\n", "")
    body = body.replace("wg.GetValue((b + 1) % n)", "xg.GetValue(b) + 1")
    _, result = run(body, [x], kwargs={"blocks": 96})
    assert result.error is None, result.error
    np.testing.assert_array_equal(result.outputs[0], x + 1)
    assert result.profile.cores_used == 48
