"""Every error class, raised by a small kernel making that mistake, with the kernel line."""

import numpy as np
import pytest

from sage.npu.errors import ERROR_CLASSES, NpuError, SandboxError
from sage.npu.execute import OutputSpec

COPY = """
@kernel
def k(x, z, n, tile, nbuf):
    pipe = TPipe()
    q = TQueBind(TPosition.VECIN, TPosition.VECOUT, nbuf)
    pipe.InitBuffer(q, nbuf, tile * sizeof(float16))  # @init
    xg = GlobalTensor(); xg.SetGlobalBuffer(x)
    zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    for i in range(n // tile):
        t = q.AllocTensor(float16)  # @alloc
        DataCopy(t, xg[i * tile], tile)  # @copyin
        q.EnQue(t)
        t = q.DeQue(float16)
        DataCopy(zg[i * tile], t, tile)  # @copyout
        q.FreeTensor(t)

def forward(x, tile=128, nbuf=1, n=None, blocks=1):
    z = empty_like(x)
    k[blocks](x, z, n or x.numel(), tile, nbuf)  # @launch
    return z
"""


def x16(n=1024):
    return np.arange(n, dtype=np.float16)


def test_the_copy_kernel_runs(run, check_error):
    src, result = run(COPY, [x16()])
    assert result.error is None
    np.testing.assert_array_equal(result.outputs[0], x16())


def test_alignment_error_for_a_length_not_32_bytes(run, check_error):
    src, result = run(COPY, [x16()], kwargs={"tile": 100})
    check_error(result, src, "AlignmentError", "@copyin", "multiple of 32 B")


def test_alignment_error_for_a_misaligned_ub_view(run, check_error):
    body = COPY.replace("DataCopy(t, xg[i * tile], tile)  # @copyin", "DataCopy(t[8], xg[i * tile], 16)  # @copyin")
    src, result = run(body, [x16()])
    check_error(result, src, "AlignmentError", "@copyin", "not 32 B aligned")


def test_capacity_error_when_buffers_exceed_ub(run, check_error):
    src, result = run(COPY, [x16(2 ** 17)], kwargs={"tile": 2 ** 16, "nbuf": 2})
    check_error(result, src, "CapacityError", "@init", "UB")


def test_bounds_error_reading_past_gm(run, check_error):
    src, result = run(COPY, [x16()], kwargs={"n": 2048})
    check_error(result, src, "BoundsError", "@copyin", "out of bounds")


def test_queue_error_alloc_beyond_depth(run, check_error):
    body = COPY.replace("        q.FreeTensor(t)\n", "")
    src, result = run(body, [x16()])
    check_error(result, src, "QueueError", "@alloc", "all allocated")


def test_queue_error_use_after_free(run, check_error):
    body = COPY.replace("        q.FreeTensor(t)\n", "        q.FreeTensor(t)\n        Adds(t, t, 1.0, tile)  # @after\n")
    src, result = run(body, [x16()])
    check_error(result, src, "QueueError", "@after", "after FreeTensor")


def test_queue_error_deque_of_empty_queue(run, check_error):
    body = COPY.replace("        q.EnQue(t)\n", "")
    src, result = run(body, [x16()])
    check_error(result, src, "QueueError", "t = q.DeQue(float16)", "empty")


def test_launch_error_block_dim_over_the_api_maximum(run, check_error):
    src, result = run(COPY, [x16()], kwargs={"blocks": 65536})
    check_error(result, src, "LaunchError", "@launch", "1..65535")


def test_output_spec_error_returning_an_input(run, check_error):
    body = COPY.replace("    return z\n", "    return x.view(-1)  # @ret\n")
    src, result = run(body, [x16()])
    check_error(result, src, "OutputSpecError", "@ret", "fresh allocations")


def test_output_spec_error_wrong_shape(run, check_error):
    src, result = run(COPY, [x16()], expected=[OutputSpec(shape=(2, 512), dtype="float16")])
    assert result.error.type == "OutputSpecError"
    assert "float16[1024]" in result.error.message and "[2, 512]" in result.error.message


def test_kernel_timeout_for_wait_without_set(run, check_error):
    body = COPY.replace("        q.EnQue(t)\n", "        q.EnQue(t)\n        WaitFlag(HardEvent.MTE3_MTE2, 0)  # @wait\n")
    src, result = run(body, [x16()])
    check_error(result, src, "KernelTimeout", "@wait", "deadlock")


def test_kernel_timeout_for_too_many_instructions(run, check_error):
    src, result = run(COPY, [x16()], kwargs={"tile": 16}, instruction_budget=50)
    assert result.error.type == "KernelTimeout"


def test_memory_limit_error(run, check_error):
    body = COPY.replace("    z = empty_like(x)\n", "    z = empty_like(x)\n    hog = [0] * (10 ** 13)  # @hog\n")
    src, result = run(body, [x16()])
    check_error(result, src, "MemoryLimitError", "@hog")


def test_kernel_runtime_error_carries_the_line(run, check_error):
    body = COPY.replace("        q.EnQue(t)\n", "        q.EnQue(t)\n        bad = tile // (i - i)  # @div\n")
    src, result = run(body, [x16()])
    check_error(result, src, "KernelRuntimeError", "@div", "ZeroDivisionError")


def test_a_syntax_error_quotes_its_line_with_a_caret_under_the_column(run):
    src, result = run(COPY + "\ndef broken(:\n", [x16()])
    assert result.error.type == "KernelSyntaxError" and result.error.line == len(src.splitlines())
    head, code, caret = result.error.message.split("\n")
    assert head == f"invalid syntax at line {result.error.line}, column 12:"
    assert code == "def broken(:" and caret == " " * 11 + "^"


def test_the_caret_stands_under_the_column_after_tabs():
    from sage.npu.errors import KernelSyntaxError
    from sage.npu.restricted import compile_kernel

    with pytest.raises(KernelSyntaxError) as raised:
        compile_kernel("def forward(x):\n\tfor i in range(4)\n\t\treturn x\n")
    head, code, caret = raised.value.message.split("\n")
    assert head == "expected ':' at line 2, column 19:" and raised.value.line == 2
    assert code == "        for i in range(4)" and caret.index("^") == len("        for i in range(4)")


def test_host_cannot_read_tensor_data(run, check_error):
    body = COPY.replace("    z = empty_like(x)\n", "    z = empty_like(x)\n    v = x[0]  # @peek\n")
    src, result = run(body, [x16()])
    check_error(result, src, "LaunchError", "@peek", "cannot read tensor data")


def test_kernel_api_outside_a_kernel_is_a_launch_error(run, check_error):
    body = COPY.replace("    z = empty_like(x)\n", "    z = empty_like(x)\n    p = TPipe()  # @host\n")
    src, result = run(body, [x16()])
    check_error(result, src, "LaunchError", "@host", "inside a kernel")


def test_error_classes_have_stable_names_and_info():
    names = [c.__name__ for c in ERROR_CLASSES]
    assert names == ["AlignmentError", "CapacityError", "BoundsError", "QueueError", "RaceError", "LaunchError",
                     "OutputSpecError", "SandboxError", "KernelTimeout", "MemoryLimitError", "KernelRuntimeError",
                     "CoreTypeError", "ImpossibleResultError", "UnsupportedError", "KernelResourceError",
                     "KernelSyntaxError"]
    err = SandboxError("import os is not allowed", line=3)
    assert isinstance(err, NpuError)
    assert err.info().model_dump() == {"type": "SandboxError", "message": "import os is not allowed", "line": 3}
    with pytest.raises(NpuError):
        raise err
