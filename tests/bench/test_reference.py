"""The torch_npu stand-in: aten recording, simulated and formula timings, cache, fused rule."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch
import typer
from typer.testing import CliRunner

from sage.bench.reference import ReferenceCache, calibrate, reference_time
from sage.bench.reference import model as model_mod
from sage.bench.reference.calibration import Calibration
from sage.bench.reference.library_run import model_fingerprint, random_array, simulate
from sage.bench.reference.plan import plan_call
from sage.bench.reference.work import roofline_us
from sage.kernels import CostClass, ElementwiseSpec, elementwise_source, inp, op, record_aten
from sage.npu.execute import run_kernel_source
from sage.npu.hardware import load_preset

from tests.kernels.conftest import Fn

HW = load_preset("ascend910b2")


def task_of(fn, fused_op=None, name="t"):
    return SimpleNamespace(make_model=lambda: Fn(fn), fused_op=fused_op, name=name)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path))
    return ReferenceCache(tmp_path / "reference.json")


def launched(calls):
    return [c.name for c in calls if not c.free]


def test_record_aten_names_and_free_views():
    x = torch.randn(4, 8)
    assert launched(record_aten(Fn(lambda t: torch.softmax(t, -1)), [x])) == ["_softmax"]
    assert launched(record_aten(torch.nn.LayerNorm(8), [x])) == ["native_layer_norm"]
    assert launched(record_aten(Fn(torch.nn.functional.gelu), [x])) == ["gelu"]
    calls = record_aten(Fn(lambda a, b: a @ b.t()), [x, x])
    assert launched(calls) == ["mm"] and [c.name for c in calls if c.free] == ["t"]
    calls = record_aten(torch.nn.Linear(8, 3), [x.view(2, 2, 8)])
    assert launched(calls) == ["addmm"]
    assert {c.name for c in calls if c.free} >= {"view", "t"}
    mm = [c for c in calls if c.name == "addmm"][0]
    assert [t.origin for t in mm.inputs] == ["param:bias", None, None]
    assert [list(t.shape) for t in mm.outputs] == [[4, 3]]


def test_elementwise_reference_is_the_simulated_library_kernel(cache):
    x = torch.randn(33, 301, dtype=torch.float16)
    ref = reference_time(task_of(torch.sigmoid), [x], HW, cache=cache)
    spec = ElementwiseSpec(expr=op("sigmoid", inp(0)), in_dtypes=("float16",), kinds=("full",), out_dtype="float16")
    import numpy as np
    run = run_kernel_source(elementwise_source(spec), [random_array((33, 301), "float16", np.random.default_rng(0))])
    assert not ref.fused and ref.launches == 1 and ref.ops[0].source == "simulated"
    assert ref.total_us == pytest.approx(run.profile.time_us)
    # the simulated time includes exactly one launch overhead, as a candidate kernel's does
    assert HW.launch.overhead_us < ref.total_us < HW.launch.overhead_us + 5


def test_cache_hit_returns_the_same_value_without_simulating(cache, monkeypatch):
    task = task_of(lambda a, b: a * b + 1.0)
    args = [torch.randn(64, 130), torch.randn(130)]
    first = reference_time(task, args, HW, cache=cache)
    assert [o.op for o in first.ops] == ["mul.Tensor", "add.Tensor"]
    assert first.ops[0].op_class == "broadcast"

    def no_simulation(*a, **k):
        raise AssertionError("simulated although cached")

    monkeypatch.setattr(model_mod, "simulate", no_simulation)
    again = reference_time(task, args, HW, cache=cache)
    from_disk = reference_time(task, args, HW, cache=ReferenceCache(cache.path))
    assert again.total_us == first.total_us == from_disk.total_us
    assert json.loads(cache.path.read_text())       # persisted


def _fixed_calibration(cache, floor=0.5):
    """A known calibration (the real one is measured in the slow test below)."""
    efficiencies = {"memory": 0.8, "elementwise": 0.9, "vector": 0.7, "reduction": 0.5, "cube": 0.4}
    cal = Calibration(preset=HW.name, fingerprint=model_fingerprint(HW.source), efficiencies=efficiencies,
                      floor_us={k: floor for k in efficiencies}, samples=[])
    cache.put(f"calibration|{HW.name}|{cal.fingerprint}", cal.model_dump())
    return cal


def test_formula_classes_use_the_calibrated_efficiency(cache):
    _fixed_calibration(cache)
    x = torch.randn(256, 300)
    ref = reference_time(task_of(lambda t: torch.sort(t, -1).values), [x], HW, cache=cache)
    (row,) = ref.ops
    assert row.source == "roofline" and row.op_class == "sort" and row.efficiency == 0.7
    calls = [c for c in record_aten(Fn(lambda t: torch.sort(t, -1).values), [x]) if not c.free]
    work = plan_call(calls[0], HW).work
    assert roofline_us(work, HW) / 0.7 > 0.5
    assert row.time_us == pytest.approx(roofline_us(work, HW) / 0.7 + HW.launch.overhead_us)
    # a tiny operator costs at least the class's one-tile floor
    tiny = reference_time(task_of(lambda t: torch.sort(t, -1).values), [torch.randn(4, 8)], HW, cache=cache)
    assert tiny.total_us == pytest.approx(0.5 + HW.launch.overhead_us)


def test_fused_task_is_one_kernel_at_the_operator_roofline(cache):
    _fixed_calibration(cache)
    x, w = torch.randn(512, 1024), torch.randn(1024)

    def rms(t, g):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6) * g

    eager = reference_time(task_of(rms), [x, w], HW, cache=cache)
    fused = reference_time(task_of(rms, fused_op="torch_npu.npu_rms_norm"), [x, w], HW, cache=cache)
    assert not eager.fused and eager.launches == 6
    assert fused.fused and fused.launches == 1 and fused.ops[0].source == "fused"
    io_bytes = (x.numel() * 2 + w.numel()) * 4
    # memory-bound: its in+out bytes at HBM bandwidth over the memory efficiency, one launch
    assert fused.total_us == pytest.approx(io_bytes / (HW.chip.hbm_gbps * 1e3) / 0.8 + HW.launch.overhead_us)
    assert fused.total_us < eager.total_us


def test_big_shapes_are_extrapolated_close_to_exact():
    calls = record_aten(Fn(lambda t: t * 2.0), [torch.randn(48 * 4096 * 8)])
    plan = plan_call([c for c in calls if not c.free][0], HW)
    assert plan.kernel.scaling is not None
    approx = simulate(plan.kernel, HW)
    exact = simulate(plan.kernel.model_copy(update={"scaling": None}), HW)
    assert approx.extrapolated and not exact.extrapolated
    assert approx.time_us == pytest.approx(exact.time_us, rel=0.03)


@pytest.mark.slow
def test_calibration_from_the_library_kernels(cache):
    cal = calibrate(HW, cache)
    assert set(cal.efficiencies) == set(cal.floor_us) == {"memory", "elementwise", "vector", "reduction", "cube"}
    assert all(0 < v <= 1 for v in cal.efficiencies.values())
    for s in cal.samples:
        assert s.efficiency == pytest.approx(min(1.0, s.roofline_us / s.simulated_us))
    # the efficiency is the geometric mean of the big ("rate") samples of the class
    rate = [s.efficiency for s in cal.samples if s.efficiency_class == "memory" and s.role == "rate"]
    assert cal.efficiencies["memory"] == pytest.approx((rate[0] * rate[1]) ** 0.5)
    floor = [s.simulated_us for s in cal.samples if s.efficiency_class == "memory" and s.role == "floor"]
    assert cal.floor_us["memory"] == pytest.approx(min(floor)) and 0 < cal.floor_us["memory"] < 5


def test_reference_cli_prints_the_breakdown(cache):
    from sage.cli.reference import reference_command

    app = typer.Typer()
    app.command()(reference_command)
    runner = CliRunner()
    res = runner.invoke(app, ["--op", "relu", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["ops"][0]["op"] == "relu.default" and data["ops"][0]["source"] == "simulated"
    res = runner.invoke(app, ["--op", "relu"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "relu.default" in res.output and "simulated" in res.output
    bad = runner.invoke(app, ["--op", "no_such_operator_xyz"])
    assert bad.exit_code == 2 and "unknown operator" in bad.output
    bad = runner.invoke(app, ["--op", "relu", "--case", "99"])
    assert bad.exit_code == 2 and "case" in bad.output


def test_each_call_gets_the_expected_source_and_class():
    x = torch.randn(64, 96)
    cases = [
        (lambda t: t.sum(-1), "simulated", "reduction"),
        (lambda t: t.sum(0), "roofline", "reduction"),           # not the last axis
        (lambda t: torch.log_softmax(t, -1), "simulated", "softmax_norm"),
        (lambda t: torch.add(t, t, alpha=2), "simulated", "elementwise"),
        (lambda t: 1 - t, "simulated", "elementwise"),
        (lambda t: t.t().contiguous(), "roofline", "copy"),       # a transposing copy
        (lambda t: torch.cumsum(t, -1), "roofline", "scan"),
        (lambda t: t > 0, "roofline", "elementwise"),             # comparisons: no library form yet
        (lambda t: t @ t.t(), "simulated", "matmul"),
        (lambda t: t.view(8, 8, 96) * t.view(8, 8, 96)[:, :1], "roofline", "broadcast"),  # [8,1,96] over [8,8,96]
    ]
    for fn, source, klass in cases:
        (call,) = [c for c in record_aten(Fn(fn), [x]) if not c.free]
        plan = plan_call(call, HW)
        assert (plan.source, plan.op_class) == (source, klass), call.describe()
    lin = torch.nn.Linear(96, 32)
    (call,) = [c for c in record_aten(lin, [x]) if not c.free]
    plan = plan_call(call, HW)
    assert plan.source == "simulated" and plan.epilogue_bytes == 32 * 4


def test_every_cost_class_has_an_efficiency_group():
    from sage.bench.reference.calibration import CLASS_EFFICIENCY

    assert set(CLASS_EFFICIENCY) == set(CostClass)
    assert set(CLASS_EFFICIENCY.values()) == {"memory", "elementwise", "vector", "reduction", "cube"}
