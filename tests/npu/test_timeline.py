"""The eager timeline: host dispatch overlapped with device work, syncs, and the three times
(kernel_us, device_us, end_to_end_us); hand-worked numbers."""

import numpy as np
import pytest

from sage.kernels import ElementwiseSpec, elementwise_source, inp, op
from sage.npu.execute import run_kernel_source
from sage.npu.hardware import load_preset
from sage.npu.timeline import LaunchCosts, Step, Times, run_timeline

COSTS = LaunchCosts(host_dispatch_us=12.0, device_fixed_us=2.0, sync_us=10.0)


def kernels(*work):
    return [Step(kind="kernel", work_us=w) for w in work]


def test_one_kernel_pays_dispatch_then_runs():
    tl = run_timeline(kernels(30.0), COSTS)
    assert tl.end_to_end_us == 12 + 2 + 30
    assert (tl.device_us, tl.kernel_us, tl.device_fixed_us) == (32, 30, 2)
    assert tl.host_exposed_us == 12
    assert tl.times == Times(kernel_us=30, device_us=32, end_to_end_us=44)


def test_two_launches_with_a_gap_give_three_different_times():
    # host enqueues at 12 and 24; kernel 1 runs 12..19 (2 fixed + 5 work), the device then
    # waits 5 us for the second dispatch, kernel 2 runs 24..33 (2 fixed + 7 work)
    tl = run_timeline(kernels(5.0, 7.0), COSTS)
    assert [(s.start_us, s.end_us) for s in tl.steps] == [(12, 19), (24, 33)]
    assert tl.kernel_us == 5 + 7                       # the durations alone (msprof op_summary)
    assert tl.device_us == 33 - 12                     # first start to last end: 2 x 2 fixed + the 5 us gap
    assert tl.end_to_end_us == 12 + 21                 # the first dispatch, then the device span
    assert tl.device_busy_us == 16 and tl.host_exposed_us == 33 - 16


def test_long_kernels_hide_the_next_dispatch():
    # host enqueues at 12 and 24; the device runs 12..44 then 44..76
    tl = run_timeline(kernels(30.0, 30.0), COSTS)
    assert tl.end_to_end_us == 76
    assert [s.start_us for s in tl.steps] == [12, 44]


def test_a_chain_of_tiny_kernels_is_host_bound():
    tl = run_timeline(kernels(*[1.0] * 10), COSTS)
    # every kernel waits for its dispatch: the last is enqueued at 120 and runs 3 us
    assert tl.end_to_end_us == 10 * 12 + 3
    assert tl.kernel_us == 10 and tl.device_busy_us == 30 and tl.host_exposed_us == 93
    # the span runs from the first kernel's start (12) to the last one's end (123): 9 gaps of 9 us
    assert tl.device_us == 123 - 12


def test_sync_waits_for_the_device_then_the_host_pays():
    steps = [Step(kind="kernel", work_us=50.0), Step(kind="sync"), Step(kind="kernel", work_us=1.0)]
    tl = run_timeline(steps, COSTS)
    # kernel 12..64; host waits until 64, sync until 74, dispatches until 86, kernel 86..89
    assert [(s.start_us, s.end_us) for s in tl.steps] == [(12, 64), (64, 74), (86, 89)]
    assert tl.end_to_end_us == 89 and tl.syncs == 1 and tl.sync_us == 10
    # the device waits through the sync and the next dispatch: its span is 12..89
    assert (tl.kernel_us, tl.device_us) == (51, 89 - 12)


def test_no_steps_take_no_time():
    tl = run_timeline([], COSTS)
    assert tl.end_to_end_us == 0 and tl.kernels == 0
    assert tl.times == Times(kernel_us=0, device_us=0, end_to_end_us=0)


def test_a_simulated_launch_goes_through_the_same_timeline():
    hw = load_preset("ascend910b2")
    spec = ElementwiseSpec(expr=op("relu", inp(0)), in_dtypes=("float32",), kinds=("full",), out_dtype="float32")
    x = np.random.default_rng(0).standard_normal((64, 1024)).astype(np.float32)
    p = run_kernel_source(elementwise_source(spec), [x]).profile
    assert p.launches == 1 and len(p.launch_device_us) == 1
    assert p.device_us == pytest.approx(p.launch_device_us[0])
    assert p.kernel_us == pytest.approx(p.device_us - hw.launch.device_fixed_us, abs=1e-3)
    assert p.times.end_to_end_us == p.time_us
    assert p.device_fixed_us == hw.launch.device_fixed_us and p.host_dispatch_us == hw.launch.host_dispatch_us
    # one launch: nothing to overlap, the host's dispatch comes first
    assert p.time_us == pytest.approx(hw.launch.host_dispatch_us + p.device_us, abs=1e-3)
    assert p.cycles == pytest.approx(p.device_us * hw.chip.clock_mhz, abs=1)
    assert 0 < p.roofline_fraction <= 1 and p.roofline_bound == "memory"
