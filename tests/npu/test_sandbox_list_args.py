"""A forward argument that is a list (or tuple) of arrays reaches the kernel file as a list of
device handles, as torch_npu passes a list of NPU tensors: shapes and dtypes readable, the
data only through kernels."""

from textwrap import dedent

import numpy as np

from sage.npu.sandbox import Limits, run_sandboxed

FAST = Limits(cpu_seconds=20, memory_mb=1024, wall_seconds=20)

SOURCE = dedent("""\
    from sage.npu.ascendc import *

    def forward(xs, k):
        assert len(xs) == 2 and tuple(xs[1].shape) == (2, 3) and xs[0].dtype == float32
        return empty((k,), float32)
    """)


def test_a_list_of_arrays_arrives_as_handles_with_shapes():
    run = run_sandboxed(SOURCE, [[np.zeros(4, np.float32), np.ones((2, 3), np.float32)], 5], limits=FAST)
    assert run.error is None, run.error
    assert run.outputs is not None and run.outputs[0].shape == (5,)


def test_the_host_cannot_read_a_listed_tensor():
    source = SOURCE.replace("return empty((k,), float32)", "return empty((int(xs[0][0]),), float32)")
    run = run_sandboxed(source, [(np.full(4, 3, np.float32), np.ones((2, 3), np.float32)), 5], limits=FAST)
    assert run.error is not None and run.error.type == "LaunchError"
