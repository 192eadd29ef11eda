"""printf and DumpTensor: Ascend C's kernel debugging aids, captured like print, never on stdout."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from sage.cli import app
from sage.npu import ascendc
from sage.npu.errors import LaunchError
from sage.npu.execute import run_kernel_source
from sage.npu.restricted import MAX_PRINT_BYTES
from sage.npu.sandbox import run_sandboxed

KERNEL = '''from sage.npu.ascendc import *

@kernel
def dbg(x, y, n):
    xg = GlobalTensor(); xg.SetGlobalBuffer(x, GetBlockIdx() * n, n)
    yg = GlobalTensor(); yg.SetGlobalBuffer(y, GetBlockIdx() * n, n)
    pipe = TPipe()
    qi = TQue(TPosition.VECIN, 1); pipe.InitBuffer(qi, 1, n * 2)
    qo = TQue(TPosition.VECOUT, 1); pipe.InitBuffer(qo, 1, n * 2)
    t = qi.AllocTensor(float16)
    DataCopy(t, xg, n)
    qi.EnQue(t)
    t = qi.DeQue(float16)
    DumpTensor(t, 42, 4)
    o = qo.AllocTensor(float16)
    Relu(o, t, n)
    qo.EnQue(o)
    qi.FreeTensor(t)
    o = qo.DeQue(float16)
    DataCopy(yg, o, n)
    qo.FreeTensor(o)
    DumpTensor(yg, 7, 2)
    printf("block %d done: n=%d\\n", GetBlockIdx(), n)

def forward(x):
    y = empty_like(x)
    dbg[2](x, y, x.numel() // 2)
    return y
'''
X = np.array([-1.5, 0.25, 2.0, -0.125] + [1.0] * 12 + [3.0, -2.0, 0.5, 4.0] + [0.0] * 12, dtype=np.float16)


def _run(body: str, x=X):
    return run_kernel_source(KERNEL.replace('    printf("block %d done: n=%d\\n", GetBlockIdx(), n)\n', body), [x])


def test_dump_tensor_and_printf_per_block():
    run = run_kernel_source(KERNEL, [X])
    assert run.error is None
    np.testing.assert_array_equal(run.outputs[0], np.maximum(X, 0))
    lines = run.printed.splitlines()
    assert lines == [
        "DumpTensor: desc=42, addr=0, data_type=DT_FLOAT16, position=UB, block_id=0",
        "[-1.5, 0.25, 2.0, -0.125]",
        # y is the second GM allocation: x (64 bytes) takes the first 512-byte line
        "DumpTensor: desc=7, addr=512, data_type=DT_FLOAT16, position=GM, block_id=0",
        "[0.0, 0.25]",
        "block 0 done: n=16",
        "DumpTensor: desc=42, addr=0, data_type=DT_FLOAT16, position=UB, block_id=1",
        "[3.0, -2.0, 0.5, 4.0]",
        # the second block's part of y starts 16 fp16 elements (32 bytes) into it
        "DumpTensor: desc=7, addr=544, data_type=DT_FLOAT16, position=GM, block_id=1",
        "[3.0, 0.0]",
        "block 1 done: n=16",
    ]


@pytest.mark.parametrize("call, expected", [
    ('printf("%d|%i|%5d|%-4d|%+d\\n", 7, -3, 42, 5, 9)', "7|-3|   42|5   |+9\n"),
    ('printf("%u %x %X %p\\n", 3, 255, 255, 4096)', "3 ff FF 0x1000\n"),
    ('printf("%x\\n", -1)', "ffffffffffffffff\n"),                     # 64-bit, as on the NPU
    ('printf("%f %.2f %8.3f\\n", 1.5, 2.0 / 3, -0.5)', "1.500000 0.67   -0.500\n"),
    ('printf("%s=%ld %d%%\\n", "n", 12, True)', "n=12 1%\n"),
    ('printf("no newline")', "no newline"),
])
def test_printf_formats_like_c(call, expected):
    run = _run(f"    if GetBlockIdx() == 0:\n        {call}\n")
    assert run.error is None
    assert expected in run.printed.split("block_id=0\n[0.0, 0.25]\n", 1)[1]  # right after block 0's dumps


@pytest.mark.parametrize("call, words", [
    ('printf("%d %d", 1)', "more conversions than the 1 argument"),
    ('printf("%d", 1, 2)', "2 argument(s) for 1 conversion"),
    ('printf("%d", 1.5)', "%d needs an integer, got float 1.5"),
    ('printf("%q", 1)', "unsupported conversion '%q'"),
    ('DumpTensor(yg, 7, 17)', "the tensor has 16 elements"),
    ('DumpTensor(yg, -1, 2)', "desc must be a non-negative int"),
])
def test_misuse_is_the_kernels_error_with_its_line(call, words):
    run = _run(f"    {call}\n")
    assert run.error is not None and words in run.error.message
    assert run.error.line == KERNEL.splitlines().index('    printf("block %d done: n=%d\\n", GetBlockIdx(), n)') + 1


def test_outside_a_run_printf_needs_a_simulation():
    with pytest.raises(LaunchError, match="needs a running simulation"):
        ascendc.printf("%d", 1)


def test_output_is_bounded_and_never_reaches_stdout(capfd):
    body = '    if GetBlockIdx() == 0:\n        for i in range(5000):\n            printf("line %d of a long debug dump\\n", i)\n'
    source = KERNEL.replace('    printf("block %d done: n=%d\\n", GetBlockIdx(), n)\n', body)
    run = run_sandboxed(source, [X], {})
    assert run.error is None
    assert run.printed.startswith("DumpTensor: desc=42") and "line 0 of a long debug dump" in run.printed
    assert run.printed.endswith("[output truncated]")
    assert len(run.printed) == MAX_PRINT_BYTES
    out, err = capfd.readouterr()
    assert "long debug dump" not in out + err


def test_the_cli_shows_it_with_verbose_and_always_in_json(tmp_path, monkeypatch):
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path / "cache"))
    task = tmp_path / "relu16.py"
    task.write_text("import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                    "        return torch.relu(x)\n\ndef get_input_groups():\n"
                    "    return [[torch.randn(32).half()]]\n")
    kernel = tmp_path / "kernel.py"
    kernel.write_text(KERNEL)
    args = ["npu", "run", str(kernel), "--task", str(task)]
    quiet = CliRunner().invoke(app, args)
    assert quiet.exit_code == 0, quiet.output
    assert "block 0 done" not in quiet.output and "the kernel printed 10 line(s) on 1 case(s)" in quiet.output
    verbose = CliRunner().invoke(app, [*args, "--verbose"])
    assert "printed by the kernel on case 0:" in verbose.output and "block 1 done: n=16" in verbose.output
    payload = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert payload["printed"]["0"].endswith("block 1 done: n=16\n")
    assert payload["cases"][0]["printed"] == payload["printed"]["0"]
