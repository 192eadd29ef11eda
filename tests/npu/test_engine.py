"""The event-driven launch schedule on hand-built record streams: one core's pipes, HBM sharing,
waves, cross-core flags, SyncAll and deadlocks. Every expected time is derived by hand from
the preset's cost table (issue 2 cycles, vadds 6 + 1 per repeat, flags 1 cycle, Mmad fractals +
the fixed cost), never read back from the engine."""

import pytest

from sage.npu.errors import LaunchError
from sage.npu.execute import FunctionalRun, time_run
from sage.npu.hardware import load_preset
from sage.npu.replay import replay
from sage.npu.sim.engine_hbm import HbmShare
from sage.npu.sim.opcodes import (AIC, AIV, BARRIER, CROSS_SET, CROSS_WAIT, GM_COPY, MAD, MARK, NORMAL, PATH_INDEX,
                                  SCALAR_LOCAL, SYNC, SYNC_ALL, VEC, vector_keys)
from sage.npu.sim.runtrace import BlockTrace, LaunchTrace, RunTrace

SPEC = load_preset()
KEYS = vector_keys(SPEC)
S, V, M, MTE1, MTE2, MTE3, FIX = range(7)
ISSUE = SPEC.scalar.issue_cycles
FLAG = SPEC.scalar.flag_cycles
HEAD = SPEC.vector.costs["vadds"].b32[0]     # vadds: head + 1 cycle per repeat
assert (ISSUE, FLAG, SPEC.vector.costs["vadds"].b32) == (2, 1, (6.0, 1.0))


def vadds(repeats, deps=None, line=10):
    return (V, NORMAL, VEC, KEYS.index("vadds"), 4, repeats, 0, -1, 0, 0, deps, "Adds", line)


def mad(deps=None, line=11):
    return (M, NORMAL, MAD, 32, 16, 16, 2, -1, 0, 0, deps, "Mmad", line)   # 2 fractals + the fixed cost


MAD_CYCLES = 2 + SPEC.cube.fixed_cycles


def load(nbytes, lo, deps=None, line=12):
    return (MTE2, NORMAL, GM_COPY, PATH_INDEX["GM->UB"], nbytes, 1, nbytes, 0, lo, lo + nbytes, deps, "DataCopy", line)


def cross_set(pipe, flag, mode, deps=None, line=20):
    return (pipe, SYNC, CROSS_SET, flag, mode, 0, 0, -1, 0, 0, deps, "CrossCoreSetFlag", line)


def cross_wait(pipe, flag, mode, deps=None, line=21):
    return (pipe, SYNC, CROSS_WAIT, flag, mode, 0, 0, -1, 0, 0, deps, "CrossCoreWaitFlag", line)


def sync_all(deps=None, line=22):
    return (S, SYNC, SYNC_ALL, 1, 0, 0, 0, -1, 0, 0, deps, "SyncAll", line)


def launch(kernel_type, *blocks, gm_bytes=1 << 24):
    """blocks: (core type, block, sub, records)."""
    lt = LaunchTrace("k", 1 + max(b for _, b, _, _ in blocks), kernel_type=kernel_type)
    lt.blocks = [BlockTrace(list(recs), core == AIC, core, b, sub) for core, b, sub, recs in blocks]
    return RunTrace([(gm_bytes, True)], [lt])


def timed(trace, spec=SPEC, **kw):
    return replay(trace, spec, keep=True, **kw).launches[0]


def times(lt, stream):
    return list(zip(*lt.timings[stream]))


def flat(pairs):
    return pytest.approx([x for pair in pairs for x in pair])


# -- one core ----------------------------------------------------------------------------------

def test_one_core_issues_in_order_and_hides_heads_behind_a_busy_pipe():
    recs = [vadds(10),                               # issued at 2: idle V pays its head: 2 + 6 + 10 = 18
            vadds(10),                               # issued at 4, queued behind V: head hidden, 18 + 10 = 28
            (V, BARRIER, MARK, 0, 0, 0, 0, -1, 0, 0, None, "PipeBarrier", 3),   # drains V at 28, no issue
            vadds(10),                               # issued at 6, after the barrier: pays its head, 28 + 16 = 44
            (S, NORMAL, SCALAR_LOCAL, 0, 0, 0, 0, -1, 0, 0, (3,), "GetValue", 4),  # waits for V: 44 + 20 = 64
            vadds(10)]                               # issued at 66 on an idle pipe: 66 + 16 = 82
    lt = timed(launch("AIV_ONLY", (AIV, 0, 0, recs)))
    assert [x for pair in times(lt, 0) for x in pair] == flat([(2, 18), (18, 28), (28, 28), (28, 44), (44, 64), (66, 82)])
    assert lt.kernel_cycles == pytest.approx(82)
    assert lt.busy[V] == pytest.approx(16 + 10 + 16 + 16) and lt.busy[S] == pytest.approx(4 * ISSUE + 20)  # 4 issued, GetValue on S


def test_earliest_free_core_takes_the_next_block():
    two_cores = SPEC.model_copy(update={"chip": SPEC.chip.model_copy(update={"aiv_cores": 2})})
    trace = launch("AIV_ONLY", (AIV, 0, 0, [vadds(100)]), (AIV, 1, 0, [vadds(300)]), (AIV, 2, 0, [vadds(50)]))
    lt = timed(trace, two_cores)
    # block 0 ends at 2 + 6 + 100 = 108 on core 0; block 2 starts there: 108 + 2 + 6 + 50 = 166
    placed = [(p.block, p.core, p.start, p.finish) for p in lt.placements]
    assert [x for row in placed for x in row] == flat([(0, 0, 0, 108), (1, 1, 0, 308), (2, 0, 108, 166)])
    assert lt.kernel_cycles == pytest.approx(308)


# -- HBM sharing -------------------------------------------------------------------------------

def run_flows(bandwidth, flows):
    """flows: (cap, bytes, weight) all starting at 0: their end times under HbmShare."""
    hbm = HbmShare(bandwidth)
    for n, (cap, nbytes, weight) in enumerate(flows):
        hbm.add(n, nbytes, cap, weight)
    ends = {}
    while hbm.active:
        t = hbm.next_finish()
        hbm.advance(t)
        for n in hbm.pop_finished():
            ends[n] = t
    return [ends[n] for n in range(len(flows))]


def test_hbm_is_shared_max_min_fairly():
    # 100 B/cycle among caps 10, 60, 60: the small flow gets its 10, the others 45 each.
    # At 5 the small flow (50 B) ends: 50 each; the 450 B flow has 225 left: ends at 9.5.
    # Then the 900 B flow (450 done) runs alone at its cap 60: 450 / 60 = 7.5 more, ends at 17.
    assert run_flows(100, [(10, 50, 1), (60, 900, 1), (60, 450, 1)]) == pytest.approx([5, 17, 9.5])
    # below the bandwidth every flow runs at its cap
    assert run_flows(100, [(30, 60, 1), (60, 120, 1)]) == pytest.approx([2, 2])
    # a flow standing for 3 identical ones counts 3 times: 4 flows of cap 60 share 100 B/cycle
    assert run_flows(100, [(60, 100, 3), (60, 100, 1)]) == pytest.approx([4, 4])


def test_two_cores_loading_at_once_share_hbm_and_the_shortcut_is_exact():
    slow = SPEC.model_copy(update={"chip": SPEC.chip.model_copy(update={"hbm_gbps": 100.0})})
    hbm = slow.hbm_bytes_per_cycle
    big = 1 << 20                                 # past the GM->UB curve's bend: no exposed fixed part
    blocks = [(AIV, b, 0, [load(big, b * big), vadds(10, deps=(0,))]) for b in range(3)]
    blocks.append((AIV, 3, 0, [load(big // 2, 3 * big), vadds(10, deps=(0,))]))
    trace = launch("AIV_ONLY", *blocks)
    grouped, single = timed(trace, slow), timed(trace, slow, group=False)
    assert (grouped.timelines, single.timelines) == (2, 4)
    # 4 loads share 100 GB/s equally (each asks 78) until the half-size one ends at 4 x big/2 / hbm;
    # then 3 share it for the other half of the big loads
    short_end, long_end = 2 + 4 * big / 2 / hbm, 2 + 4 * big / 2 / hbm + 3 * big / 2 / hbm
    for lt in (grouped, single):
        assert [times(lt, b)[0][1] for b in range(4)] == pytest.approx([long_end] * 3 + [short_end])
        assert lt.kernel_cycles == pytest.approx(long_end + HEAD + 10)
        assert lt.busy == pytest.approx(grouped.busy)


# -- cross-core flags --------------------------------------------------------------------------
# As the DSL records them: a set on its pipe (after that pipe's earlier work), a wait on the
# scalar pipe (nothing after it is issued before it). A flag drains its pipe: the next
# instruction there pays its head.

def test_mode_2_flags_pass_work_from_the_aic_to_both_aivs_and_back():
    aic = [mad(),                                    # issued at 2: 2 -> 2 + mad
           cross_set(FIX, 3, 2, deps=(0,)),          # issued at 4, after the Mmad: ends at 2 + mad + 1
           cross_wait(S, 5, 2),                      # waits for both AIVs' sets
           mad()]                                    # issued after the wait
    set_end = 2 + MAD_CYCLES + FLAG
    aiv = [[cross_wait(S, 3, 2), vadds(r), cross_set(V, 5, 2)] for r in (10, 30)]
    lt = timed(launch("MIX_AIC_1_2", (AIC, 0, 0, aic), (AIV, 0, 0, aiv[0]), (AIV, 0, 1, aiv[1])))
    add_start = set_end + FLAG + ISSUE               # each AIV's Adds is issued once its wait is over
    for stream, r in ((1, 10), (2, 30)):
        wait, add, done = times(lt, stream)
        assert wait == pytest.approx((set_end, set_end + FLAG))
        assert add == pytest.approx((add_start, add_start + HEAD + r))
        assert done == pytest.approx((add_start + HEAD + r, add_start + HEAD + r + FLAG))
    both = add_start + HEAD + 30 + FLAG              # the AIC waits for the slower AIV
    assert times(lt, 0)[2] == pytest.approx((both, both + FLAG))
    assert times(lt, 0)[3] == pytest.approx((both + FLAG + ISSUE, both + FLAG + ISSUE + MAD_CYCLES))
    assert lt.kernel_cycles == pytest.approx(both + FLAG + ISSUE + MAD_CYCLES)
    assert lt.cores_by_type == {AIC: 1, AIV: 2}
    assert [(p.core_type, p.core) for p in lt.placements] == [(AIC, 0), (AIV, 0), (AIV, 1)]


def test_each_wait_takes_one_set():
    aic = [mad(), cross_set(FIX, 4, 2, deps=(0,)), mad(), cross_set(FIX, 4, 2, deps=(2,))]
    first = 2 + MAD_CYCLES + FLAG                    # the second Mmad queues behind the first
    second = 2 + 2 * MAD_CYCLES + FLAG
    aiv = [cross_wait(S, 4, 2), cross_wait(S, 4, 2), vadds(10)]
    lt = timed(launch("MIX_AIC_1_2", (AIC, 0, 0, aic), (AIV, 0, 0, aiv), (AIV, 0, 1, aiv)))
    assert [x for pair in times(lt, 1) for x in pair] == flat(
        [(first, first + FLAG), (second, second + FLAG), (second + FLAG + ISSUE, second + FLAG + ISSUE + HEAD + 10)])


def test_mode_1_syncs_the_two_aivs_of_a_group():
    aiv = [[vadds(r), cross_set(V, 1, 1), cross_wait(S, 1, 1), vadds(5)] for r in (10, 40)]
    lt = timed(launch("MIX_AIC_1_2", (AIC, 0, 0, [mad()]), (AIV, 0, 0, aiv[0]), (AIV, 0, 1, aiv[1])))
    later = 2 + HEAD + 40 + FLAG                     # the slower AIV's set
    for stream in (1, 2):
        assert times(lt, stream)[2] == pytest.approx((later, later + FLAG))
        assert times(lt, stream)[3][1] == pytest.approx(later + FLAG + ISSUE + HEAD + 5)


def test_mode_0_is_a_barrier_among_the_cores_of_one_type():
    blocks = [(AIV, b, 0, [vadds(r), cross_set(V, 2, 0), cross_wait(S, 2, 0), vadds(5)])
              for b, r in enumerate((10, 20, 40))]
    lt = timed(launch("AIV_ONLY", *blocks))
    last = 2 + HEAD + 40 + FLAG
    assert [times(lt, b)[2][0] for b in range(3)] == pytest.approx([last] * 3)


def test_sync_all_releases_every_core_when_the_last_arrives():
    blocks = [(AIV, b, 0, [vadds(r), sync_all(deps=(0,)), vadds(5)]) for b, r in enumerate((10, 20, 40))]
    lt = timed(launch("MIX_AIV_1_0", *blocks))
    last = 2 + HEAD + 40
    for b in range(3):
        assert times(lt, b)[1] == pytest.approx((last, last + FLAG))
        # the next Adds is issued after the SyncAll on the scalar timeline: an issue later
        assert times(lt, b)[2] == pytest.approx((last + FLAG + ISSUE, last + FLAG + ISSUE + HEAD + 5))


# -- errors ------------------------------------------------------------------------------------

def error_of(trace):
    run = time_run(FunctionalRun([], trace, None), SPEC)
    assert run.profile is None and run.outputs is None
    return run.error


def test_a_wait_no_set_can_satisfy_is_a_deadlock_with_its_line():
    trace = launch("AIV_ONLY", (AIV, 0, 0, [vadds(10), cross_wait(S, 2, 0, line=77)]),
                   (AIV, 1, 0, [cross_wait(S, 2, 0, line=78), cross_set(V, 2, 0)]))
    err = error_of(trace)
    assert err.type == "KernelTimeout" and err.line == 77
    assert "CrossCoreWaitFlag(flag 2, mode 0)" in err.message and "deadlock" in err.message


def test_sync_all_with_more_blocks_than_cores_is_refused():
    blocks = [(AIV, b, 0, [sync_all(line=33)]) for b in range(SPEC.chip.aiv_cores + 1)]
    err = error_of(launch("MIX_AIV_1_0", *blocks))
    assert err.type == "LaunchError" and err.line == 33
    assert f"{SPEC.chip.aiv_cores + 1} blocks on {SPEC.chip.aiv_cores} cores" in err.message
    with pytest.raises(LaunchError, match="SyncAll"):
        replay(launch("MIX_AIV_1_0", *blocks), SPEC)


def test_a_mode_0_barrier_across_waves_deadlocks():
    blocks = [(AIV, b, 0, [cross_set(V, 1, 0), cross_wait(S, 1, 0, line=55)]) for b in range(SPEC.chip.aiv_cores + 1)]
    err = error_of(launch("AIV_ONLY", *blocks))
    assert err.type == "KernelTimeout" and err.line == 55 and "later wave" in err.message


def test_a_mix_launch_may_not_exceed_the_core_groups():
    groups = SPEC.chip.aic_cores
    blocks = [(core, b, sub, [mad()]) for b in range(groups + 1) for core, sub in ((AIC, 0), (AIV, 0), (AIV, 1))]
    with pytest.raises(LaunchError, match=f"{groups} groups"):
        replay(launch("MIX_AIC_1_2", *blocks), SPEC)


def test_a_mix_profile_measures_each_pipe_against_the_cores_that_run_it():
    aic = [mad()]
    aiv = [vadds(100)]
    trace = launch("MIX_AIC_1_2", (AIC, 0, 0, aic), (AIV, 0, 0, aiv), (AIV, 0, 1, aiv))
    run = time_run(FunctionalRun([], trace, None), SPEC)
    p = run.profile
    kernel = 2 + HEAD + 100
    assert p.device_us == pytest.approx(kernel / SPEC.cycles_per_us + SPEC.launch.device_fixed_us, abs=1e-4)
    assert p.pipes["V"].busy_cycles == 2 * (HEAD + 100)                 # summed over both AIVs
    assert p.pipes["V"].utilisation == pytest.approx((HEAD + 100) / kernel, abs=1e-4)   # per AIV
    assert p.pipes["M"].utilisation == pytest.approx(MAD_CYCLES / kernel, abs=1e-4)     # per AIC
    assert p.pipes["S"].busy_cycles == 3 * ISSUE
    assert (p.cores_used, p.cores_by_type) == (3, {AIC: 1, AIV: 2})



def test_a_mix_profile_gives_each_core_type_its_own_pipe_figures():
    # The AIC runs 3 Mmads, each AIV one Adds of 200 repeats; the AIVs set the kernel's length.
    aic = [mad(), mad(), mad()]
    aiv = [vadds(200)]
    trace = launch("MIX_AIC_1_2", (AIC, 0, 0, aic), (AIV, 0, 0, aiv), (AIV, 0, 1, aiv))
    p = time_run(FunctionalRun([], trace, None), SPEC).profile
    kernel = ISSUE + HEAD + 200
    assert ISSUE * 3 + 3 * MAD_CYCLES < kernel                        # the cube side finishes first
    aic_pipes, aiv_pipes = p.pipes_by_type[AIC], p.pipes_by_type[AIV]
    # S runs on every core: the average over the 3 cores hides the two types' different loads
    assert p.pipes["S"].utilisation == pytest.approx((3 * ISSUE + 2 * ISSUE) / (3 * kernel), abs=1e-4)
    assert aic_pipes["S"].utilisation == pytest.approx(3 * ISSUE / kernel, abs=1e-4)
    assert aiv_pipes["S"].utilisation == pytest.approx(2 * ISSUE / (2 * kernel), abs=1e-4)
    assert (aic_pipes["S"].busy_cycles, aiv_pipes["S"].busy_cycles) == (3 * ISSUE, 2 * ISSUE)
    assert aic_pipes["M"].utilisation == pytest.approx(3 * MAD_CYCLES / kernel, abs=1e-4)
    assert aiv_pipes["V"].utilisation == pytest.approx((HEAD + 200) / kernel, abs=1e-4)
    assert aic_pipes["V"].busy_cycles == 0 and aiv_pipes["M"].busy_cycles == 0


def test_a_vector_only_launch_has_one_core_type():
    trace = launch("AIV_ONLY", (AIV, 0, 0, [vadds(10)]))
    p = time_run(FunctionalRun([], trace, None), SPEC).profile
    assert list(p.pipes_by_type) == [AIV]
    assert p.pipes_by_type[AIV]["V"] == p.pipes["V"]
