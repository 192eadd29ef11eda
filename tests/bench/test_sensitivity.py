"""The sensitivity study's variations reach the simulator: hand-built record streams are timed on
the base preset and on a varied one, and the difference is the one the cost table gives by hand
(docs/dsl.md "Costs"; tests/npu/test_engine.py derives the base times the same way)."""

import pytest

from benchmarks.sensitivity_constants import CONSTANTS, perturbed
from sage.npu.hardware import load_preset
from sage.npu.replay import replay
from sage.npu.sim.costs import CostModel
from sage.npu.sim.opcodes import (AIC, AIV, CROSS_SET, CROSS_WAIT, GM_COPY, LOCAL_COPY, MAD, NORMAL, PATH_INDEX, SYNC,
                                  SYNC_ALL, VEC, vector_keys)
from sage.npu.sim.runtrace import BlockTrace, LaunchTrace, RunTrace

SPEC = load_preset()
KEYS = vector_keys(SPEC)
S, V, M, MTE1, MTE2, MTE3, FIX = range(7)
BY_FIELD = {c.paths[0]: c for c in CONSTANTS}


def constant(field: str):
    return BY_FIELD[field]


def cycles(spec, *blocks, kernel_type="AIV_ONLY"):
    """Kernel cycles of one launch; blocks: (core type, block, sub, records)."""
    lt = LaunchTrace("k", 1 + max(b for _, b, _, _ in blocks), kernel_type=kernel_type)
    lt.blocks = [BlockTrace(list(recs), core == AIC, core, b, sub) for core, b, sub, recs in blocks]
    return replay(RunTrace([(1 << 24, True)], [lt]), spec).launches[0].kernel_cycles


def vadds(repeats):
    return (V, NORMAL, VEC, KEYS.index("vadds"), 4, repeats, 0, -1, 0, 0, None, "Adds", 10)


def mad():
    return (M, NORMAL, MAD, 32, 16, 16, 2, -1, 0, 0, None, "Mmad", 11)


def cross(op, pipe, flag, deps=None):
    return (pipe, SYNC, op, flag, 2, 0, 0, -1, 0, 0, deps, "CrossCore", 12)


def test_doubling_the_burst_cost_adds_it_once_per_extra_row():
    rows, row_bytes, pitch = 16, 512, 1024     # 16 rows of 512 B, 1024 B apart: 512 B aligned, one burst per row
    load = (MTE2, NORMAL, GM_COPY, PATH_INDEX["GM->UB"], rows * row_bytes, rows, pitch, 0, 0,
            (rows - 1) * pitch + row_bytes, None, "DataCopyPad", 5)
    c = constant("transfer.effects.burst_overhead_cycles")
    base, doubled = cycles(SPEC, (AIV, 0, 0, [load])), cycles(perturbed(SPEC, c, 2.0), (AIV, 0, 0, [load]))
    assert SPEC.transfer.effects.burst_overhead_cycles == 8
    assert doubled - base == pytest.approx((rows - 1) * 8)            # 15 extra bursts x 8 more cycles each
    assert cycles(perturbed(SPEC, c, 0.5), (AIV, 0, 0, [load])) - base == pytest.approx(-(rows - 1) * 4)


def test_doubling_a_copy_latency_adds_it_once_per_copy():
    copy = (V, NORMAL, LOCAL_COPY, PATH_INDEX["UB->UB"], 4096, 1, 0, -1, 0, 0, None, "DataCopy", 6)
    c = constant("transfer.ub_to_ub.latency_cycles")
    base = cycles(SPEC, (AIV, 0, 0, [copy, copy]))
    assert SPEC.transfer.ub_to_ub.latency_cycles == 10
    assert cycles(perturbed(SPEC, c, 2.0), (AIV, 0, 0, [copy, copy])) - base == pytest.approx(2 * 10)


def test_the_cross_core_flag_cost_is_paid_by_each_set_and_wait_on_the_critical_path():
    # AIC: Mmad, set (mode 2) to both AIVs, wait for their sets, Mmad; AIVs: wait, Adds, set.
    # Critical path: set (AIC), wait (AIV), set (AIV), wait (AIC): four cross-core records.
    aic = [mad(), cross(CROSS_SET, FIX, 3, deps=(0,)), cross(CROSS_WAIT, S, 5), mad()]
    aiv = [cross(CROSS_WAIT, S, 3), vadds(20), cross(CROSS_SET, V, 5)]
    blocks = ((AIC, 0, 0, aic), (AIV, 0, 0, aiv), (AIV, 0, 1, aiv))
    c = constant("scalar.cross_core_flag_cycles")
    base = cycles(SPEC, *blocks, kernel_type="MIX_AIC_1_2")
    assert SPEC.scalar.cross_core_flag_cycles == 1
    assert cycles(perturbed(SPEC, c, 2.0), *blocks, kernel_type="MIX_AIC_1_2") - base == pytest.approx(4 * 1)
    # the in-core SetFlag/WaitFlag figure is a separate constant, untouched
    assert perturbed(SPEC, c, 2.0).scalar.flag_cycles == SPEC.scalar.flag_cycles


def test_the_sync_all_cost_is_paid_once_after_the_last_core_arrives():
    # each core's SyncAll waits for its Adds (deps), the last arrives at 2 + 6 + 40, then the
    # SyncAll's own cost, an issue, the second Adds: the cost is on the critical path once
    sync = (S, SYNC, SYNC_ALL, 1, 0, 0, 0, -1, 0, 0, (0,), "SyncAll", 13)
    blocks = [(AIV, b, 0, [vadds(r), sync, vadds(10)]) for b, r in enumerate((10, 40))]
    c = constant("scalar.sync_all_cycles")
    base = cycles(SPEC, *blocks, kernel_type="MIX_AIV_1_0")
    assert cycles(perturbed(SPEC, c, 2.0), *blocks, kernel_type="MIX_AIV_1_0") - base == pytest.approx(1)


def test_an_alignment_penalty_has_its_excess_scaled():
    c = constant("transfer.effects.unaligned_gm_penalty")
    assert perturbed(SPEC, c, 0.5).transfer.effects.unaligned_gm_penalty == pytest.approx(1.125)
    assert perturbed(SPEC, c, 2.0).transfer.effects.unaligned_gm_penalty == pytest.approx(1.5)


@pytest.mark.parametrize("field,path,rate", [("transfer.gm_to_l1", "GM->L1", 270.0), ("transfer.ub_to_gm", "UB->GM", 110.0)])
def test_a_refitted_k_keeps_the_measured_point_and_moves_small_copies(field, path, rate):
    c = constant(field)
    spec = SPEC.transfer.model_dump()[field.split(".")[1]]
    size = rate * spec["k_bytes"] / (spec["peak_gbps"] - rate)      # the size of the measured point
    gbps = {}
    for f in (0.5, 1.0, 2.0):
        varied = perturbed(SPEC, c, f)
        cost = CostModel(varied).paths[path]
        at = (lambda n: n / cost.cycles(n) * varied.chip.clock_mhz / 1e3)     # bytes per cycle -> GB/s
        gbps[f] = (at(size), at(4096))
    assert [gbps[f][0] for f in (0.5, 1.0, 2.0)] == pytest.approx([rate] * 3)
    assert gbps[0.5][1] > gbps[1.0][1] > gbps[2.0][1]                   # a larger K: small copies slower


def test_the_doc_block_is_placed_once_and_a_fidelity_rerun_keeps_it(tmp_path):
    from benchmarks.fidelity import KEPT_FROM, kept_section
    from benchmarks.sensitivity_report import BEGIN, END, write_doc

    doc = tmp_path / "fidelity.md"
    doc.write_text(f"# Simulator fidelity\n\ntable\n\n{KEPT_FROM}\n\nprose\n")
    write_doc(doc, "rows 1")
    write_doc(doc, "rows 2")
    text = doc.read_text()
    assert text.count(BEGIN) == 1 and "rows 2" in text and "rows 1" not in text and text.rstrip().endswith(END)
    kept = kept_section(doc)
    assert "table" not in kept and "prose" in kept and "rows 2" in kept
