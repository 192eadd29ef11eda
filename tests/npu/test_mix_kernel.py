"""The matmul + bias + GELU MIX_AIC_1_2 example against the same work as two launches.

Both versions do the same cube and vector work through the same GM workspace; the mix
launch hands the workspace over with one cross-core flag, the two-launch version with a
second kernel launch. Derived by hand from the eager timeline (sage/npu/timeline.py): the
second launch costs the device one more `device_fixed_us` and the host one more
`host_dispatch_us`, while the mix's flag costs a few cycles. So the mix must be faster on
the device by nearly one fixed cost, and faster end to end.
"""

from pathlib import Path

import pytest

from sage.npu.execute import OutputSpec, run_kernel_source
from sage.npu.hardware import load_preset
from tests.npu.test_examples import assert_close, load_task

KERNEL = Path(__file__).resolve().parents[2] / "examples" / "kernels" / "matmul_bias_gelu_mix.py"
HW = load_preset("ascend910b2")


@pytest.mark.parametrize("case_index", [0, 2])
def test_the_mix_launch_beats_two_launches(case_index):
    task = load_task("matmul_bias_gelu_task.py")
    case = task.get_input_groups()[case_index]
    want = task.Model()(*case)
    spec = [OutputSpec(shape=tuple(want.shape), dtype="float16")]
    source = KERNEL.read_text()
    mix = run_kernel_source(source, [t.numpy() for t in case], filename=KERNEL.name, expected=spec)
    two = run_kernel_source(source + "\nforward = forward_two_launch\n", [t.numpy() for t in case],
                            filename=KERNEL.name, expected=spec)
    for run in (mix, two):
        assert run.error is None, run.error
        assert_close(run.outputs[0], want)
    assert (mix.profile.launches, two.profile.launches) == (1, 2)
    fixed = HW.launch.device_fixed_us
    assert mix.profile.device_us < two.profile.device_us - 0.8 * fixed
    assert mix.profile.time_us < two.profile.time_us
