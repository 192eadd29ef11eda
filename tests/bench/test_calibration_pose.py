"""How a public figure is posed to the vendor model: distinct operands, the source's L2 state and timing kind."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.calibration_pose import Figure, Source, model_us, pose, read_figures, read_sources  # noqa: E402
from sage.bench.reference.vendor import load_params  # noqa: E402
from sage.npu.hardware import load_preset  # noqa: E402

HW = load_preset("ascend910b2")


def _figure(op: str, shape: tuple[int, ...], timing: str = "event", l2: str = "flushed", calls: int = 1,
            dtype: str = "float16", arg: str = "") -> Figure:
    src = Source(url="https://example.org/x", split="fit", timing=timing, l2=l2, calls=calls, how="test")
    return Figure(id="t", op=op, shape=shape, dtype=dtype, arg=arg, measured_us=1.0, source=src, note="")


def test_every_source_of_a_figure_says_how_it_was_timed():
    sources = read_sources()
    used = {f.source.url for f in read_figures()}
    assert used <= set(sources)
    assert all(s.how and s.calls >= 1 for s in sources.values())


def test_matmul_operands_are_distinct_so_a_cold_call_reads_both_from_hbm():
    (k,) = pose(_figure("matmul", (1024,)), HW).kernels
    assert k.l2_hit_bytes == 0.0
    assert k.work.bytes == 3 * 1024 * 1024 * 2          # a, b and the output, fp16


def test_a_warm_loop_finds_operands_that_fit_in_l2_and_not_those_that_do_not():
    n_fit, n_big = 1024, 8192                            # 2 x 2 MiB operands; 2 x 128 MiB (over the 192 MiB L2)
    (k,) = pose(_figure("matmul", (n_fit,), timing="host_loop", l2="warm", calls=30), HW).kernels
    assert k.l2_hit_bytes == 2 * n_fit * n_fit * 2
    (k,) = pose(_figure("matmul", (n_big,), timing="host_loop", l2="warm", calls=30), HW).kernels
    assert k.l2_hit_bytes < 0.5 * 2 * n_big * n_big * 2


def test_the_timing_kinds_differ_by_the_launch_costs_they_include():
    params = load_params()
    shape = (4, 32)                                      # tiny: the kernel's work is a few µs at most
    event = model_us(pose(_figure("swiglu", shape), HW), HW, params)
    profiler = model_us(pose(_figure("swiglu", shape, timing="profiler"), HW), HW, params)
    loop = model_us(pose(_figure("swiglu", shape, timing="host_loop", calls=30), HW), HW, params)
    # the profiler's kernel duration has no launch fixed cost; device events include it
    assert event - profiler == pytest.approx(HW.launch.device_fixed_us)
    # a loop of tiny calls is bound by the host's dispatch of each; the last call's device time
    # and the one synchronize are paid once over the 30 calls
    host = HW.launch.host_dispatch_us
    assert event < host
    assert loop == pytest.approx(host + (event + HW.launch.sync_us) / 30, rel=1e-6)


def test_an_event_figure_is_the_device_span_after_do_bench_flush():
    """Two tiny kernels in one call: after do_bench's 256 MB L2 flush (160 us at 1600 GB/s) the
    host has enqueued both, so they run back to back: the span is 2 x (fixed + work). On an idle
    device (no flush) the second waits for its dispatch: the span is one dispatch + fixed + work."""
    from benchmarks.calibration_pose import Posed, model_times

    params = load_params()
    one = pose(_figure("swiglu", (4, 32)), HW)
    two = Posed(figure=one.figure, kernels=one.kernels * 2)
    work = model_us(pose(_figure("swiglu", (4, 32), timing="profiler"), HW), HW, params)
    fixed, host = HW.launch.device_fixed_us, HW.launch.host_dispatch_us
    assert fixed + work < host                           # tiny: the host is the slower side
    flushed = model_times(two, HW, params)
    assert flushed.kernel_us == pytest.approx(2 * work)
    assert flushed.device_us == pytest.approx(2 * (fixed + work))
    idle = two.figure.model_copy(update={"source": two.figure.source.model_copy(update={"l2": "warm"})})
    assert model_times(Posed(figure=idle, kernels=two.kernels), HW, params).device_us == pytest.approx(
        host + fixed + work)
    # each kind reads its own time
    assert model_us(two, HW, params) == pytest.approx(flushed.device_us)
