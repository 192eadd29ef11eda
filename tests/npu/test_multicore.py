"""Blocks on cores in waves, HBM bandwidth shared by the running cores, the L2 model."""

import numpy as np

from sage.npu.execute import run_kernel_source
from sage.npu.hardware import load_preset

COPY = """
@kernel
def copy(x, z, per_block, tile):
    pipe = TPipe(); q = TQueBind(TPosition.VECIN, TPosition.VECOUT, 2); pipe.InitBuffer(q, 2, tile * 4)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x, per_block * GetBlockIdx(), per_block)
    zg = GlobalTensor(); zg.SetGlobalBuffer(z, per_block * GetBlockIdx(), per_block)
    for i in range(per_block // tile):
        t = q.AllocTensor(float32)
        DataCopy(t, xg[i * tile], tile)
        q.EnQue(t); t = q.DeQue(float32)
        DataCopy(zg[i * tile], t, tile)
        q.FreeTensor(t)

def forward(x, blocks=48, tile=8192, launches=1):
    z = empty_like(x)
    for _ in range(launches):
        copy[blocks](x, z, x.numel() // blocks, tile)
    return z
"""


def kernel_cycles(result, spec):
    return result.profile.cycles - result.profile.launches * spec.launch_overhead_cycles


def test_more_blocks_than_cores_run_in_waves(run):
    spec = load_preset()
    wide = spec.model_copy(update={"launch": spec.launch.model_copy(update={"max_block_dim_vector": 96})})
    x = np.arange(96 * 8192, dtype=np.float32)
    _, one_wave = run(COPY, [x[: 48 * 8192]], kwargs={"blocks": 48}, preset=wide)
    _, two_waves = run(COPY, [x], kwargs={"blocks": 96}, preset=wide)
    assert two_waves.error is None
    np.testing.assert_array_equal(two_waves.outputs[0], x)
    assert two_waves.profile.cores_used == 48 and two_waves.profile.blocks == 96
    ratio = kernel_cycles(two_waves, wide) / kernel_cycles(one_wave, wide)
    assert 1.95 < ratio < 2.05


def test_hbm_bandwidth_caps_many_cores(run):
    """48 cores x ~100 GB/s would be ~5 TB/s: the run takes as long as HBM needs for its bytes."""
    spec = load_preset()
    x = np.zeros(48 * 8192 * 4, dtype=np.float32)
    _, result = run(COPY, [x])
    hbm_cycles = 2 * x.nbytes / spec.hbm_bytes_per_cycle
    assert hbm_cycles <= kernel_cycles(result, spec) < 1.1 * hbm_cycles
    # one block alone is not capped: its time is the single-core curve's
    _, alone = run(COPY, [x[: 8192 * 4]], kwargs={"blocks": 1})
    assert kernel_cycles(alone, spec) * 48 > 2.5 * kernel_cycles(result, spec)


def test_re_read_gm_hits_l2(run):
    """A second launch over the same data reads it from L2: bandwidth time halves (l2_hit_speedup = 2)."""
    spec = load_preset()
    x = np.zeros(8192 * 8, dtype=np.float32)
    _, once = run(COPY, [x], kwargs={"blocks": 1})
    _, twice = run(COPY, [x], kwargs={"blocks": 1, "launches": 2})
    mte2_once = once.profile.pipes["MTE2"].busy_cycles
    mte2_second = twice.profile.pipes["MTE2"].busy_cycles - mte2_once
    bandwidth_cycles = x.nbytes / spec.bytes_per_cycle(spec.transfer.gm_to_ub.peak_gbps)
    assert abs((mte2_once - mte2_second) - bandwidth_cycles / 2) <= 2


def test_profile_and_trace_shape(run):
    x = np.zeros(4 * 8192, dtype=np.float32)
    _, result = run(COPY, [x], kwargs={"blocks": 4, "launches": 2}, trace=True)
    p = result.profile
    assert (p.launches, p.blocks, p.cores_used) == (2, 8, 4)
    assert p.instructions == 2 * 4 * 2
    assert set(p.pipes) == {"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"}
    assert p.bytes == {"GM->UB": 2 * x.nbytes, "UB->GM": 2 * x.nbytes}
    assert p.bottleneck == max(p.pipes, key=lambda k: p.pipes[k].utilisation)
    assert p.bottleneck in ("MTE2", "MTE3")  # the second launch reads from L2: its MTE3 writes dominate
    assert 0 < p.roofline_fraction <= 1
    assert abs(p.device_us - p.cycles / 1800) < 1e-3   # time_us adds the host dispatch
    spans = [e for e in result.trace if e["ph"] == "X"]
    assert len(spans) == p.instructions
    assert {e["pid"] for e in spans} == {0, 1, 2, 3}
    assert {e["tid"] for e in spans} == {"MTE2", "MTE3"}
    assert all(e["dur"] > 0 and e["ts"] >= 0 for e in spans)
    # the second launch starts after the first one and its device fixed cost
    fixed = p.device_fixed_us / p.launches
    first = max(e["ts"] + e["dur"] for e in spans
                if e["args"]["kernel"] == "copy" and e["ts"] < p.launch_device_us[0] - fixed)
    assert min(e["ts"] for e in spans if e["ts"] > first) >= first + fixed - 1e-6
    names = [e for e in result.trace if e["ph"] == "M" and e["name"] == "thread_name"]
    assert len(names) == 4 * 7


def test_presets_change_the_timing():
    src = "from sage.npu.ascendc import *\n" + COPY
    x = np.zeros(40 * 8192, dtype=np.float32)
    b2 = run_kernel_source(src, [x], {"blocks": 40}, preset="ascend910b2").profile
    b4 = run_kernel_source(src, [x], {"blocks": 40}, preset="ascend910b4").profile
    assert b4.time_us > b2.time_us  # half the HBM bandwidth, lower clock
