"""Queue sync, double buffering, flags and race detection."""

import numpy as np

from sage.npu.hardware import load_preset

# The device fixed cost of one launch on ascend910b2, in cycles (profile.cycles counts it per launch).
OVERHEAD = load_preset("ascend910b2").launch_overhead_cycles

ADD = """
@kernel
def add(x, y, z, tile, tiles, nbuf):
    pipe = TPipe()
    qx = TQue(TPosition.VECIN, nbuf); qy = TQue(TPosition.VECIN, nbuf); qz = TQue(TPosition.VECOUT, nbuf)
    for q in (qx, qy, qz):
        pipe.InitBuffer(q, nbuf, tile * 2)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x)
    yg = GlobalTensor(); yg.SetGlobalBuffer(y)
    zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    for i in range(tiles):
        a = qx.AllocTensor(float16); b = qy.AllocTensor(float16)
        DataCopy(a, xg[i * tile], tile); DataCopy(b, yg[i * tile], tile)
        qx.EnQue(a); qy.EnQue(b)
        a = qx.DeQue(float16); b = qy.DeQue(float16)
        c = qz.AllocTensor(float16)
        Add(c, a, b, tile)
        Mul(c, c, b, tile); Add(c, c, a, tile); Mul(c, c, b, tile)
        qz.EnQue(c); qx.FreeTensor(a); qy.FreeTensor(b)
        c = qz.DeQue(float16)
        DataCopy(zg[i * tile], c, tile)
        qz.FreeTensor(c)

def forward(x, y, nbuf=2):
    z = empty_like(x)
    add[1](x, y, z, 2048, x.numel() // 2048, nbuf)
    return z
"""


def _xy(n=2048 * 16):
    rng = np.random.default_rng(0)
    return rng.standard_normal(n).astype(np.float16), rng.standard_normal(n).astype(np.float16)


def test_double_buffering_overlaps_copies_with_compute(run):
    x, y = _xy()
    _, single = run(ADD, [x, y], kwargs={"nbuf": 1})
    _, double = run(ADD, [x, y], kwargs={"nbuf": 2})
    assert single.error is None and double.error is None
    np.testing.assert_array_equal(single.outputs[0], double.outputs[0])
    busy = {p: s.busy_cycles for p, s in single.profile.pipes.items()}
    serial = busy["MTE2"] + busy["V"] + busy["MTE3"]
    t1 = single.profile.cycles - OVERHEAD
    t2 = double.profile.cycles - OVERHEAD
    # one buffer: copy-in of tile i+1 waits until tile i's inputs are read (only copy-out overlaps)
    assert busy["MTE2"] + 0.8 * busy["V"] <= t1 < serial
    # two buffers: copy-in of tile i+1 overlaps the compute of tile i; MTE2 bounds the run
    assert busy["MTE2"] <= t2 < 1.05 * busy["MTE2"]
    assert double.profile.pipes["MTE2"].utilisation > 0.9


TBUF = """
@kernel
def k(x, z, n):
    pipe = TPipe(); buf = TBuf(TPosition.VECCALC); pipe.InitBuffer(buf, n * 4)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x); zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    t = buf.Get(float32)
    DataCopy(t, xg, n)
    SYNC_IN
    Muls(t, t, 2.0, n)  # @vec
    SYNC_OUT
    DataCopy(zg, t, n)  # @out

def forward(x):
    z = empty_like(x)
    k[1](x, z, x.numel())
    return z
"""


def _tbuf(sync_in="", sync_out=""):
    return TBUF.replace("SYNC_IN", sync_in or "pass").replace("SYNC_OUT", sync_out or "pass")


def test_tbuf_shared_by_mte2_and_v_without_flags_is_a_race(run, check_error):
    src, result = run(_tbuf(), [np.ones(256, np.float32)])
    check_error(result, src, "RaceError", "@vec", "MTE2")
    assert "HardEvent.MTE2_V" in result.error.message


def test_v_to_mte3_without_flags_is_a_race(run, check_error):
    src, result = run(_tbuf("SetFlag(HardEvent.MTE2_V, 0); WaitFlag(HardEvent.MTE2_V, 0)"), [np.ones(256, np.float32)])
    check_error(result, src, "RaceError", "@out", "V_MTE3")


def test_flags_order_the_pipes(run):
    src, result = run(_tbuf("SetFlag(HardEvent.MTE2_V, 0); WaitFlag(HardEvent.MTE2_V, 0)",
                            "SetFlag(HardEvent.V_MTE3, 1); WaitFlag(HardEvent.V_MTE3, 1)"),
                      [np.arange(256, dtype=np.float32)])
    assert result.error is None
    np.testing.assert_array_equal(result.outputs[0], np.arange(256, dtype=np.float32) * 2)


def test_a_flag_resolved_before_is_checked_again_against_this_core(run):
    """SetFlag/WaitFlag remember what an (event, id) resolves to (sync._FLAG_CALLS); what that
    memory cannot hold, whether the id is in range on this preset and whether it is an int, is
    asked again: an id 5 that ran on 8 event ids is refused on a preset with 4, and True after 1
    (equal as dictionary keys) is refused as a bool."""
    flags = ("SetFlag(HardEvent.MTE2_V, 5); WaitFlag(HardEvent.MTE2_V, 5)",
             "SetFlag(HardEvent.V_MTE3, 1); WaitFlag(HardEvent.V_MTE3, 1)")
    x = [np.arange(256, dtype=np.float32)]
    assert run(_tbuf(*flags), x)[1].error is None
    spec = load_preset("ascend910b2")
    four = spec.model_copy(update={"scalar": spec.scalar.model_copy(update={"event_ids": 4})})
    _, result = run(_tbuf(*flags), x, preset=four)
    assert result.error is not None and "event_id must be an int in 0..3, got 5" in result.error.message
    _, result = run(_tbuf(flags[0], flags[1].replace("1)", "True)")), x)
    assert result.error is not None and "got True" in result.error.message


def test_wait_flag_delays_the_waiting_pipe(run):
    """With the MTE2->V flag, the vector instruction starts only after the copy finished."""
    _, result = run(_tbuf("SetFlag(HardEvent.MTE2_V, 0); WaitFlag(HardEvent.MTE2_V, 0)",
                          "SetFlag(HardEvent.V_MTE3, 1); WaitFlag(HardEvent.V_MTE3, 1)"),
                    [np.ones(256, np.float32)], trace=True)
    spans = {e["name"]: (e["ts"], e["ts"] + e["dur"]) for e in result.trace if e["ph"] == "X" and e["tid"] in ("MTE2", "V")}
    assert spans["Muls"][0] >= spans["DataCopy"][1]


SCALAR = """
@kernel
def k(x, z, n):
    pipe = TPipe(); buf = TBuf(TPosition.VECCALC); pipe.InitBuffer(buf, n * 4)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x); zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    t = buf.Get(float32)
    DataCopy(t, xg, n)
    SetFlag(HardEvent.MTE2_V, 0); WaitFlag(HardEvent.MTE2_V, 0)
    Adds(t, t, 1.0, n)
    SYNC
    v = t.GetValue(3)  # @get
    z_local = t
    z_local.SetValue(0, v)
    SetFlag(HardEvent.S_MTE3, 0); WaitFlag(HardEvent.S_MTE3, 0)
    SetFlag(HardEvent.V_MTE3, 0); WaitFlag(HardEvent.V_MTE3, 0)
    DataCopy(zg, t, n)

def forward(x):
    z = empty_like(x)
    k[1](x, z, x.numel())
    return z
"""


def test_get_value_of_vector_data_needs_v_s_sync(run, check_error):
    src, result = run(SCALAR.replace("SYNC", "pass"), [np.zeros(64, np.float32)])
    check_error(result, src, "RaceError", "@get", "V_S")


def test_get_value_with_v_s_sync_is_slow_but_correct(run):
    x = np.arange(64, dtype=np.float32)
    _, result = run(SCALAR.replace("SYNC", "SetFlag(HardEvent.V_S, 0); WaitFlag(HardEvent.V_S, 0)"), [x])
    assert result.error is None
    want = x + 1
    want[0] = want[3]
    np.testing.assert_array_equal(result.outputs[0], want)
    assert result.profile.pipes["S"].busy_cycles >= 2 * 20  # GetValue + SetValue, 20 cycles each


def test_queue_sync_is_race_free_and_reuse_waits_for_readers(run):
    x, y = _xy(2048 * 4)
    _, result = run(ADD, [x, y], kwargs={"nbuf": 2}, trace=True)
    assert result.error is None
    ev = [e for e in result.trace if e["ph"] == "X"]
    copies = [e for e in ev if e["tid"] == "MTE2"]
    adds = [e for e in ev if e["tid"] == "V" and e["name"] == "Add"]
    # tile i+2 reuses tile i's input buffer: its copy starts after tile i's last reader
    tile0_last_v = [e for e in ev if e["tid"] == "V"][3]
    tile2_copy = copies[4]
    assert tile2_copy["ts"] >= tile0_last_v["ts"] + tile0_last_v["dur"] - 1e-6
    assert adds[2]["ts"] >= copies[3]["ts"] + copies[3]["dur"] - 1e-6   # tile 1's first Add waits for its copies


WORKSPACE = """
@kernel
def k(x, z, n):
    pipe = TPipe(); q = TQueBind(TPosition.VECIN, TPosition.VECOUT, 2); pipe.InitBuffer(q, 2, n * 4)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x); zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    t = q.AllocTensor(float32); DataCopy(t, xg, n); q.EnQue(t); t = q.DeQue(float32)
    DataCopy(zg, t, n)
    SYNC
    u = q.AllocTensor(float32)
    DataCopy(u, zg, n)  # @readback
    q.EnQue(u); u = q.DeQue(float32)
    q.FreeTensor(u); q.FreeTensor(t)

def forward(x):
    z = empty_like(x)
    k[1](x, z, x.numel())
    return z
"""


def test_reading_back_gm_written_by_mte3_needs_sync(run, check_error):
    src, result = run(WORKSPACE.replace("SYNC", "pass"), [np.ones(64, np.float32)])
    check_error(result, src, "RaceError", "@readback", "MTE3_MTE2")
    _, ok = run(WORKSPACE.replace("SYNC", "SetFlag(HardEvent.MTE3_MTE2, 0); WaitFlag(HardEvent.MTE3_MTE2, 0)"),
                [np.ones(64, np.float32)])
    assert ok.error is None
