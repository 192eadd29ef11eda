"""Blocks on cores in waves, HBM bandwidth shared by the running cores, the L2 model."""

from pathlib import Path

import numpy as np
import pytest

from sage.npu.execute import run_functional, run_kernel_source
from sage.npu.hardware import load_preset
from sage.npu.replay import replay

from tests.npu.conftest import kernel_source

COPY = """
@kernel
def copy(x, z, per_block, tile, last):
    n = last if GetBlockIdx() == GetBlockNum() - 1 else per_block
    pipe = TPipe(); q = TQueBind(TPosition.VECIN, TPosition.VECOUT, 2); pipe.InitBuffer(q, 2, tile * 4)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x, per_block * GetBlockIdx(), n)
    zg = GlobalTensor(); zg.SetGlobalBuffer(z, per_block * GetBlockIdx(), n)
    for i in range(n // tile):
        t = q.AllocTensor(float32)
        DataCopy(t, xg[i * tile], tile)
        q.EnQue(t); t = q.DeQue(float32)
        DataCopy(zg[i * tile], t, tile)
        q.FreeTensor(t)

def forward(x, blocks=48, tile=8192, launches=1, last=0):
    # every block copies per_block elements; the last one `last` elements when given
    per_block = (x.numel() - last) // (blocks - 1) if last else x.numel() // blocks
    z = empty_like(x)
    for _ in range(launches):
        copy[blocks](x, z, per_block, tile, last or per_block)
    return z
"""


LOAD_COMPUTE_STORE = (Path(__file__).resolve().parents[2] / "examples" / "microbench" / "load_compute_store.py").read_text()
TILE_BYTES = 128 * 1024
MULS = 4


def kernel_cycles(result, spec):
    return result.profile.cycles - result.profile.launches * spec.launch_overhead_cycles


def lcs_phases(spec, cores: int) -> tuple[float, float, float]:
    """(load, compute, store) cycles of one load-compute-store block while `cores` identical blocks
    run in lockstep, from the preset's formulas: a copy alone streams at its path's sustained rate
    (GM->UB: the 78 GB/s plateau, past the curve's bend; UB->GM: its peak after K / peak fixed
    cycles); together the cores' streams split the HBM bandwidth equally once they ask for more."""
    t = spec.transfer
    hbm = spec.hbm_bytes_per_cycle
    gm_ub = spec.bytes_per_cycle(t.gm_to_ub.plateau_gbps)
    assert (t.gm_to_ub.k_bytes + TILE_BYTES) / spec.bytes_per_cycle(t.gm_to_ub.peak_gbps) < TILE_BYTES / gm_ub
    ub_gm = spec.bytes_per_cycle(t.ub_to_gm.peak_gbps)
    load = TILE_BYTES / min(gm_ub, hbm / cores)
    store = t.ub_to_gm.k_bytes / ub_gm + TILE_BYTES / min(ub_gm, hbm / cores)
    head, slope = spec.vector.costs["vmuls"].b32
    compute = head + MULS * slope * TILE_BYTES // spec.vector.repeat_bytes
    return load, compute, store


def lcs_cycles(spec, cores: int) -> float:
    load, compute, store = lcs_phases(spec, cores)
    issue, flag = spec.scalar.issue_cycles, spec.scalar.flag_cycles
    # the load is issued first; EnQue (MTE2) and DeQue (V) hand it to the compute, SetFlag/WaitFlag
    # V->MTE3 the result to the store: four flags on the critical path
    return issue + load + 2 * flag + compute + 2 * flag + store


def run_lcs(blocks: int, preset=None, trace=False):
    x = np.arange(blocks * TILE_BYTES // 4, dtype=np.float32)
    result = run_kernel_source(LOAD_COMPUTE_STORE, [x, blocks, MULS], preset=preset or load_preset(),
                               filename="lcs.py", trace=trace)
    assert result.error is None, result.error
    np.testing.assert_array_equal(result.outputs[0], x)
    return result


def test_48_load_compute_store_blocks_are_hbm_capped_in_their_load_and_store_phases():
    """The issue's probe: 48 blocks of (load 128 KB, compute, store). Averaged over the wave the
    demand fitted the HBM bandwidth, so 48 blocks took as long as 1; moment by moment the 48
    loads (and the 48 stores) ask 48 x 78 GB/s of a 1.6 TB/s HBM and are capped."""
    spec = load_preset()
    one = run_lcs(1)
    many = run_lcs(48, trace=True)
    assert kernel_cycles(one, spec) == pytest.approx(lcs_cycles(spec, 1), abs=1)
    assert kernel_cycles(many, spec) == pytest.approx(lcs_cycles(spec, 48), abs=1)
    assert kernel_cycles(many, spec) > 2 * kernel_cycles(one, spec)
    load, _, store = lcs_phases(spec, 48)
    copies = {tid: [e["dur"] * spec.cycles_per_us for e in many.trace if e.get("tid") == tid and e["name"] == "DataCopy"]
              for tid in ("MTE2", "MTE3")}
    assert len(copies["MTE2"]) == len(copies["MTE3"]) == 48
    assert all(d == pytest.approx(load, abs=0.5) for d in copies["MTE2"])
    assert all(d == pytest.approx(store, abs=0.5) for d in copies["MTE3"])
    load_gbps = 48 * TILE_BYTES / (copies["MTE2"][0] / spec.cycles_per_us) / 1e3
    assert load_gbps == pytest.approx(spec.chip.hbm_gbps, rel=1e-3)      # the load phase runs at the HBM cap


def test_more_blocks_than_cores_run_in_waves_on_the_earliest_free_core():
    """96 blocks: two full waves; 49: the 49th block runs alone in a second wave (uncapped)."""
    spec = load_preset()
    wide = spec.model_copy(update={"launch": spec.launch.model_copy(update={"max_block_dim_vector": 96})})
    two = run_lcs(96, wide)
    partial = run_lcs(49, wide, trace=True)
    assert two.profile.cores_used == 48 and two.profile.blocks == 96
    assert kernel_cycles(two, wide) == pytest.approx(2 * lcs_cycles(spec, 48), abs=2)
    assert kernel_cycles(partial, wide) == pytest.approx(lcs_cycles(spec, 48) + lcs_cycles(spec, 1), abs=2)
    last = [e for e in partial.trace if e.get("args", {}).get("block") == 48]
    assert {e["pid"] for e in last} == {1}                              # AIV 0: the lowest of the 48 freed cores


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
    """A second launch over the same data reads it from L2: the streaming time of its bytes at
    the path's sustained rate (the GM->UB plateau) halves (l2_hit_speedup = 2)."""
    spec = load_preset()
    x = np.zeros(8192 * 8, dtype=np.float32)
    _, once = run(COPY, [x], kwargs={"blocks": 1})
    _, twice = run(COPY, [x], kwargs={"blocks": 1, "launches": 2})
    mte2_once = once.profile.pipes["MTE2"].busy_cycles
    mte2_second = twice.profile.pipes["MTE2"].busy_cycles - mte2_once
    streaming_cycles = x.nbytes / spec.bytes_per_cycle(spec.transfer.gm_to_ub.plateau_gbps)
    assert spec.transfer.effects.l2_hit_speedup == 2
    assert abs((mte2_once - mte2_second) - streaming_cycles / 2) <= 2


HALVES = """
@kernel
def half(x, z, col0, rows, w):
    pipe = TPipe(); q = TQueBind(TPosition.VECIN, TPosition.VECOUT, 1); pipe.InitBuffer(q, 1, rows * w * 4)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x)
    zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    t = q.AllocTensor(float32)
    DataCopyPad(t, xg[col0], DataCopyExtParams(rows, w * 4, w * 4, 0, 0), DataCopyPadExtParams(False, 0, 0, 0))
    q.EnQue(t); t = q.DeQue(float32)
    DataCopy(zg[(col0 // w) * rows * w], t, rows * w)
    q.FreeTensor(t)

def forward(x, halves=2, rows=64, w=256):
    # x is [rows, 2w]: launch h copies column half h of every row (rows bursts of w floats, 2w apart)
    z = empty_like(x)
    for h in range(halves):
        half[1](x, z, h * w, rows, w)
    return z
"""


def test_a_strided_read_makes_only_its_bursts_resident(run):
    """Reading the left half of every row does not bring the right halves into L2: reading
    them next costs what the first read cost (same size, same 512 B alignment), not half of
    its streaming time as an L2 hit would."""
    x = np.arange(64 * 512, dtype=np.float32)
    _, one = run(HALVES, [x], kwargs={"halves": 1})
    _, two = run(HALVES, [x], kwargs={"halves": 2})
    assert two.error is None and np.array_equal(two.outputs[0].reshape(2, 64, 256),
                                                x.reshape(64, 2, 256).transpose(1, 0, 2))
    first = one.profile.pipes["MTE2"].busy_cycles
    assert abs(two.profile.pipes["MTE2"].busy_cycles - 2 * first) <= 1


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
    # cycles are the busy device time (work + fixed costs); time_us adds the host dispatch
    assert abs(p.kernel_us + p.device_fixed_us - p.cycles / 1800) < 1e-3
    spans = [e for e in result.trace if e["ph"] == "X"]
    records = [e for e in spans if e["pid"] != 0]
    assert len(records) == p.instructions
    assert {e["pid"] for e in records} == {1, 2, 3, 4}           # AIV 0..3; pid 0 is the launch track
    assert {e["tid"] for e in records} == {"MTE2", "MTE3"}
    assert all(e["dur"] > 0 and e["ts"] >= 0 for e in spans)
    # the launch track (device time): each launch pays the device's fixed cost, then its kernel runs
    fixed = p.device_fixed_us / p.launches
    launch = sorted((e["ts"], e["tid"], e["dur"]) for e in spans if e["pid"] == 0)
    assert [tid for _, tid, _ in launch] == ["fixed", "kernel", "fixed", "kernel"]
    assert launch[0][0] == 0 and launch[0][2] == pytest.approx(fixed) and launch[1][0] == pytest.approx(fixed)
    assert launch[2][0] == pytest.approx(launch[1][0] + launch[1][2], abs=1e-3)
    assert launch[1][2] + launch[3][2] == pytest.approx(p.kernel_us, abs=1e-3)
    # on the eager timeline both tiny launches wait for their dispatch: the device span runs from
    # the first launch's start (one dispatch in) to the second's end (two dispatches in, + fixed + kernel)
    assert p.device_us == pytest.approx(p.host_dispatch_us / 2 + fixed + launch[3][2], abs=1e-3)
    # every instruction runs inside its launch's kernel span
    for e in records:
        start, dur = launch[1][0::2] if e["ts"] < launch[2][0] else launch[3][0::2]
        assert start - 1e-3 <= e["ts"] and e["ts"] + e["dur"] <= start + dur + 1e-3
    names = {e["pid"]: e["args"]["name"] for e in result.trace if e["ph"] == "M" and e["name"] == "process_name"}
    assert names == {0: "launch", 1: "AIV 0", 2: "AIV 1", 3: "AIV 2", 4: "AIV 3"}
    threads = [e for e in result.trace if e["ph"] == "M" and e["name"] == "thread_name"]
    assert len(threads) == 2 + 4 * 7


def test_presets_change_the_timing():
    src = "from sage.npu.ascendc import *\n" + COPY
    x = np.zeros(40 * 8192, dtype=np.float32)
    b2 = run_kernel_source(src, [x], {"blocks": 40}, preset="ascend910b2").profile
    b4 = run_kernel_source(src, [x], {"blocks": 40}, preset="ascend910b4").profile
    assert b4.time_us > b2.time_us  # half the HBM bandwidth, lower clock


def test_47_small_and_1_large_block_share_hbm_fairly(run):
    """47 blocks copy 512 KB each, one copies 2 MB, in 32 KB tiles, double-buffered. While all 48
    stream, HBM is the limit and is shared equally: every block moves the same bytes, so the small
    ones end when 48 x (512 KB in + 512 KB out) have gone through HBM. Then the large block runs
    alone at its single-core rate: its other 48 tiles at the period of its bottleneck pipe (MTE2,
    one 32 KB GM->UB copy per tile; the UB->GM copy is faster and overlaps), then the last store."""
    spec = load_preset()
    small, big, tile = 512 * 1024, 2 * 1024 * 1024, 32 * 1024
    x = np.arange((47 * small + big) // 4, dtype=np.float32)
    _, result = run(COPY, [x], kwargs={"last": big // 4})
    assert result.error is None, result.error
    np.testing.assert_array_equal(result.outputs[0], x)
    t = spec.transfer
    load = t.gm_to_ub.latency_cycles + max((t.gm_to_ub.k_bytes + tile) / spec.bytes_per_cycle(t.gm_to_ub.peak_gbps),
                                           tile / spec.bytes_per_cycle(t.gm_to_ub.plateau_gbps))
    store = (t.ub_to_gm.k_bytes + tile) / spec.bytes_per_cycle(t.ub_to_gm.peak_gbps)
    assert store < load
    shared = 48 * 2 * small / spec.hbm_bytes_per_cycle
    alone = (big - small) // tile * load + store
    assert kernel_cycles(result, spec) == pytest.approx(shared + alone, rel=0.05)
    # averaging the demand over the whole wave (the old model) ignores that the large block runs alone at the end
    averaged = max((47 * small + big) * 2 / spec.hbm_bytes_per_cycle, big // tile * load + store)
    assert kernel_cycles(result, spec) > 1.2 * averaged


def test_timing_identical_blocks_once_gives_the_times_of_timing_each_block():
    """The shortcut (one timeline for identical blocks started together) against the general path."""
    spec = load_preset()
    small, big = 64 * 1024, 256 * 1024
    x = np.arange((47 * small + big) // 4, dtype=np.float32)
    functional = run_functional(kernel_source(COPY), [x], {"last": big // 4}, spec=spec, filename="k.py")
    grouped, single = replay(functional.trace, spec), replay(functional.trace, spec, group=False)
    assert (grouped.launches[0].timelines, single.launches[0].timelines) == (2, 48)
    assert grouped.cycles == pytest.approx(single.cycles, rel=1e-12)
    assert [p.finish for p in grouped.launches[0].placements] == pytest.approx(
        [p.finish for p in single.launches[0].placements], rel=1e-12)
    assert grouped.launches[0].busy == pytest.approx(single.launches[0].busy, rel=1e-12)


@pytest.mark.parametrize("lockstep", [False, True])
def test_a_finished_blocks_local_memory_is_released_and_never_read_again(monkeypatch, lockstep):
    """Every core's UB goes when its block (or lane group) runs to its end (CoreState.release_memory), before
    the launch ends: a later block reuses those pages instead of faulting in fresh ones. The
    outputs are those of the copy, and memory of an ended block cannot be read again silently."""
    from sage.npu.sim.core import CoreState

    ended = []
    release = CoreState.release_memory

    def spy(core):
        assert core.spaces["UB"]._data is not None  # (the copy used its UB up to here)
        release(core)
        ended.append(core)
    monkeypatch.setattr(CoreState, "release_memory", spy)
    x = np.arange(4 * 8192, dtype=np.float32)
    run = run_functional(kernel_source(COPY), [x], {"blocks": 4}, spec=load_preset("ascend910b2"), lockstep=lockstep)
    assert run.error is None
    np.testing.assert_array_equal(run.outputs[0], x)
    # the four blocks, each alone (with lanes too: the group parts on the last block's `n`; a
    # try thrown away at a divergence is not a block that ended, its memory goes with its launch)
    assert len(ended) == 4 and len(set(map(id, ended))) == 4
    assert all(s._data is None and s.released for core in ended for s in core.spaces.values())
    with pytest.raises(AssertionError, match="block that has ended"):
        ended[0].spaces["UB"].data
