"""The torch_npu stand-in: aten recording, the analytic vendor time, L2 reuse, syncs, fused
rule, expert baseline, essential bound and the CLI contract. Expected numbers are worked
out from the documented formulas (docs/reference-model.md) and the preset/fit files."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import typer
from typer.testing import CliRunner

from sage.bench.reference import ReferenceCache, reference_time
from sage.bench.reference.vendor import GROUP_OF, PARAMS_FILE
from sage.kernels import CostClass, record_aten
from sage.npu.hardware import load_preset

from tests.kernels.conftest import Fn

HW = load_preset("ascend910b2")
PARAMS = json.loads(PARAMS_FILE.read_text())["groups"]
HBM = HW.chip.hbm_gbps * 1e3                     # bytes per µs
FIXED, DISPATCH, SYNC = HW.launch.device_fixed_us, HW.launch.host_dispatch_us, HW.launch.sync_us


def task_of(fn, fused_op=None, name="t"):
    return SimpleNamespace(make_model=lambda: Fn(fn), fused_op=fused_op, name=name)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path))
    return ReferenceCache(tmp_path / "reference.json")


def launched(calls):
    return [c.name for c in calls if not c.free]


def memory_kernel_us(nbytes: float, group: str = "elementwise", hit: float = 0.0) -> float:
    """fixed + t0 + bytes at HBM (L2 hits at the L2 rate) / mem_eff, for a memory-bound kernel."""
    p = PARAMS[group]
    mem = (nbytes - hit) / HBM + hit / (HBM * HW.transfer.effects.l2_hit_speedup)
    return FIXED + p["t0_us"] + mem / p["mem_eff"]


def test_record_aten_names_and_free_views():
    x = torch.randn(4, 8)
    assert launched(record_aten(Fn(lambda t: torch.softmax(t, -1)), [x])) == ["_softmax"]
    assert launched(record_aten(torch.nn.LayerNorm(8), [x])) == ["native_layer_norm"]
    calls = record_aten(Fn(lambda a, b: a @ b.t()), [x, x])
    assert launched(calls) == ["mm"] and [c.name for c in calls if c.free] == ["t"]


def test_one_memory_bound_op_is_dispatch_plus_its_vendor_time():
    x = torch.empty(2048, 1024, device="meta")           # 8 MiB float32: memory-bound
    ref = reference_time(task_of(torch.relu), [x], HW)
    expected = memory_kernel_us(2 * x.numel() * 4)
    (row,) = ref.ops
    assert row.bound == "memory" and row.group == "elementwise"
    assert ref.device_us == pytest.approx(expected)
    assert ref.end_to_end_us == pytest.approx(DISPATCH + expected)
    assert ref.host_exposed_us == pytest.approx(DISPATCH)
    assert ref.device_fixed_us == pytest.approx(FIXED)


def test_a_chain_of_small_ops_is_host_bound():
    x = torch.randn(16, 16)
    ref = reference_time(task_of(lambda t: ((t + 1) * 2 - 3).abs()), [x], HW)
    assert ref.launches == 4 and all(o.device_us < DISPATCH for o in ref.ops)
    # each kernel waits for its own dispatch: the end is the last dispatch plus the last kernel
    assert ref.end_to_end_us == pytest.approx(4 * DISPATCH + ref.ops[-1].device_us)


def test_a_two_launch_reference_has_three_different_times():
    """(t + 1).abs() on fp32 [16, 16]: two tiny elementwise kernels, each fixed + t0 + 2 KiB at
    HBM rate (abs reads t + 1 from L2, just written), both shorter than a dispatch. kernel_us sums their work alone; device_us runs from
    the first kernel's start (one dispatch in) to the second's end (two dispatches in, then its
    fixed cost and work): the gap between them included; end to end adds the first dispatch."""
    x = torch.randn(16, 16)
    ref = reference_time(task_of(lambda t: (t + 1).abs()), [x], HW)
    assert ref.launches == 2
    nbytes = x.numel() * 4
    work = [memory_kernel_us(2 * nbytes) - FIXED, memory_kernel_us(2 * nbytes, hit=nbytes) - FIXED]
    assert [o.work_us for o in ref.ops] == pytest.approx(work)
    assert FIXED + work[0] < DISPATCH                       # so the device waits for the second dispatch
    assert ref.kernel_us == pytest.approx(sum(work))
    assert ref.device_us == pytest.approx(DISPATCH + FIXED + work[1])
    assert ref.end_to_end_us == pytest.approx(2 * DISPATCH + FIXED + work[1])
    assert ref.times.model_dump() == pytest.approx(
        {"kernel_us": ref.kernel_us, "device_us": ref.device_us, "end_to_end_us": ref.end_to_end_us})
    # the gap the span holds is the device idling for the host: exposed host time less the first dispatch
    gap = ref.device_us - (ref.kernel_us + 2 * FIXED)
    assert gap == pytest.approx(DISPATCH - (FIXED + work[0]))
    assert ref.host_exposed_us == pytest.approx(DISPATCH + gap)


def test_the_chain_rereads_its_intermediates_from_l2():
    x = torch.empty(1024, 1024, device="meta")           # 4 MiB, far below the 192 MiB L2
    ref = reference_time(task_of(lambda t: (t * 2) + t), [x], HW)
    mul, add = ref.ops
    nbytes = x.numel() * 4
    assert mul.l2_hit_bytes == 0                           # the forward's input starts cold
    assert add.l2_hit_bytes == 2 * nbytes                  # t*2 was just written, t was just read
    assert add.device_us == pytest.approx(memory_kernel_us(3 * nbytes, hit=2 * nbytes))


def test_a_data_dependent_shape_syncs_the_host():
    x = torch.randn(64, 64)
    ref = reference_time(task_of(lambda t: torch.nonzero(t > 0)), [x], HW)
    assert ref.syncs == 1 and ref.launches == 2 and ref.sync_us == SYNC
    assert [o.sync for o in ref.ops] == [False, True]
    gt, nz = ref.ops
    # gt dispatched, nonzero dispatched once gt's dispatch is done, device runs both, host syncs
    dev_end = max(2 * DISPATCH, DISPATCH + gt.device_us) + nz.device_us
    assert ref.end_to_end_us == pytest.approx(dev_end + SYNC)


def test_item_is_a_sync_without_a_kernel():
    x = torch.randn(8)
    ref = reference_time(task_of(lambda t: t * t.sum().item()), [x], HW)
    kinds = [(o.op.split(".")[0], o.op_class) for o in ref.ops]
    assert ("_local_scalar_dense", "sync") in kinds and ref.syncs == 1 and ref.launches == 2


def test_fused_task_is_one_kernel_moving_its_inputs_and_outputs_once():
    x, w = torch.empty(512, 1024, device="meta"), torch.empty(1024, device="meta")

    def rms(t, g):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6) * g

    eager = reference_time(task_of(rms), [x, w], HW)
    fused = reference_time(task_of(rms, fused_op="torch_npu.npu_rms_norm"), [x, w], HW)
    assert not eager.fused and eager.launches == 6
    assert fused.fused and fused.launches == 1 and fused.ops[0].op_class == "fused"
    io = (2 * x.numel() + w.numel()) * 4
    assert fused.device_us == pytest.approx(memory_kernel_us(io))
    assert fused.end_to_end_us < eager.end_to_end_us


def test_matmul_is_timed_on_the_cube_with_wave_quantisation():
    a = torch.empty(4096, 4096, dtype=torch.float16, device="meta")
    ref = reference_time(task_of(torch.matmul), [a, a], HW)
    (row,) = ref.ops
    p = PARAMS["cube"]
    peak = 2 * HW.cube.peak_macs_per_cycle * HW.chip.aic_cores * HW.chip.clock_mhz
    flops = 2 * 4096 ** 3
    tiles = (4096 // 128) * (4096 // 256)                  # 512 tiles of 128 x 256 on 24 cores: 22 waves
    util = tiles / (22 * 24)
    tile_us = flops / peak * 24 / tiles
    expected = FIXED + p["t0_us"] + flops / peak / (p["cube_eff"] * util) + p["fill"] * tile_us
    assert row.bound == "cube" and row.device_us == pytest.approx(expected)
    # a published 910B2 figure (docs/calibration.md): 314.5 TFLOPS, i.e. 437 µs
    assert row.device_us == pytest.approx(437.0, rel=0.15)


def test_essential_bound_counts_gathered_rows_not_the_whole_table():
    table = torch.randn(50000, 64)
    idx = torch.randint(0, 50000, (128,))
    ref = reference_time(task_of(lambda w, i: torch.nn.functional.embedding(i, w)), [table, idx], HW)
    read = idx.numel() * 8 + 128 * 64 * 4                  # indices and the gathered rows, from HBM
    written = 128 * 64 * 4                                 # the output, drained to HBM as the machine does
    assert ref.roofline_bound == "memory"
    assert ref.roofline_us == pytest.approx((read + written) / HBM)


def test_essential_bound_counts_the_views_dense_ops_read():
    """relu of 10 of 4,096 columns reads 10 columns, not the tensor (an honest kernel that reads
    only them must not look faster than the essential work: the tripwire would refuse it);
    x.chunk(2) read as two halves reads both, each once."""
    x = torch.randn(256, 4096)
    sliced = reference_time(task_of(lambda t: torch.relu(t[:, :10])), [x], HW)
    assert sliced.roofline_us == pytest.approx((256 * 10 * 4 * 2) / HBM)
    halves = reference_time(task_of(lambda t: torch.mul(*t.chunk(2, dim=1))), [x], HW)
    assert halves.roofline_us == pytest.approx((256 * 4096 * 4 + 256 * 2048 * 4) / HBM)
    twice = reference_time(task_of(lambda t: torch.relu(t[:, :10]) + torch.exp(t[:, :10])), [x], HW)
    assert twice.roofline_us <= 2 * (256 * 10 * 4 * 2) / HBM


def test_outputs_are_charged_at_hbm_bandwidth_as_the_machine_writes_them():
    """swi_glu fp32 [2048, 4096] -> [2048, 2048]: 32 MiB in, 16 MiB out. By hand: 48 MiB at
    1,600 GB/s is 31.46 us (the replay drains every write to HBM, sage/npu/replay.py)."""
    from sage.npu.profile import roofline_bound_us

    bound, kind = roofline_bound_us(HW, 48 * 2**20)
    assert kind == "memory" and bound == pytest.approx(31.46, abs=0.01)


def test_every_cost_class_has_a_calibrated_group():
    assert set(GROUP_OF) == set(CostClass)
    assert set(GROUP_OF.values()) <= set(PARAMS)


def test_expert_is_the_library_kernel_simulated_as_a_candidate(cache):
    import numpy as np

    from sage.bench.reference.library_run import random_array
    from sage.kernels import ElementwiseSpec, elementwise_source, inp, op
    from sage.npu.execute import run_kernel_source

    x = torch.randn(33, 301, dtype=torch.float16)
    ref = reference_time(task_of(torch.sigmoid), [x], HW, expert=True, cache=cache)
    spec = ElementwiseSpec(expr=op("sigmoid", inp(0)), in_dtypes=("float16",), kinds=("full",), out_dtype="float16")
    run = run_kernel_source(elementwise_source(spec), [random_array((33, 301), "float16", np.random.default_rng(0))])
    assert ref.expert_ops == 1 and ref.ops[0].expert_device_us == pytest.approx(run.profile.device_us)
    assert ref.expert_device_us == pytest.approx(run.profile.device_us)
    assert ref.expert_end_to_end_us == pytest.approx(run.profile.time_us)
    # cached: a second call does not simulate
    assert json.loads(Path(cache.path).read_text())


def test_expert_kernels_as_a_candidate_score_one_against_their_own_timing(tmp_path, monkeypatch):
    """No extrapolation asymmetry: the library kernel file, evaluated as a candidate, takes the
    expert's time on every case (device and end to end)."""
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path))
    from sage.bench.evaluate import evaluate_kernel
    from sage.bench.reference.kernel_files import library_kernel_file
    from sage.bench.tasks import load_task

    task = load_task(Path(__file__).parents[1] / "fixtures" / "tasks" / "relu.py")
    source = library_kernel_file(task)
    assert source is not None
    ev = evaluate_kernel(task, source)
    assert ev.correct
    for case, args in zip(ev.cases, task.cases()):
        ref = reference_time(task, args, HW, expert=True, cache=ReferenceCache(tmp_path / "r.json"))
        assert ref.expert_device_us / case.times.device_us == pytest.approx(1.0, abs=0.005)
        assert ref.expert_end_to_end_us / case.times.end_to_end_us == pytest.approx(1.0, abs=0.005)


def test_reference_cli_json_contract(cache):
    from sage.cli.reference import reference_command

    app = typer.Typer()
    app.command()(reference_command)
    runner = CliRunner()
    res = runner.invoke(app, ["--op", "relu", "--json", "--case", "1"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    (case,) = data["cases"]
    for key in ("end_to_end_us", "device_us", "expert_device_us", "roofline_us", "kernel_us", "device_fixed_us",
                "host_exposed_us"):
        assert case[key] is not None, key
    assert case["end_to_end_us"] == pytest.approx(case["kernel_us"] + case["device_fixed_us"] + case["host_exposed_us"])
    assert case["ops"][0]["op"] == "relu.default" and case["ops"][0]["expert_device_us"] > 0
    res = runner.invoke(app, ["--op", "relu", "--no-expert"], env={"COLUMNS": "240"})
    assert res.exit_code == 0 and "relu.default" in res.output and "roofline" in res.output
    bad = runner.invoke(app, ["--op", "no_such_operator_xyz"])
    assert bad.exit_code == 2 and "unknown operator" in bad.output
    bad = runner.invoke(app, ["--op", "relu", "--case", "99"])
    assert bad.exit_code == 2 and "case" in bad.output
