"""Kernel data never breaks sage, never comes back unpaid, and never crosses lane groups
(issue: integrity, round 2, items 4, 5, 6 and 9)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sage.bench.evaluate import evaluate_kernel
from sage.bench.tasks import load_task
from sage.npu.ascendc import handles, tensors
from sage.npu.execute import run_functional, run_kernel_source
from sage.npu.hardware import load_preset
from sage.npu.restricted import compile_kernel
from sage.npu.errors import SandboxError
from sage.npu.sandbox import Limits, run_sandboxed
from sage.npu.sim.lanes import LaneValue, NotLaneable
from sage.npu.sim.opcodes import GM_COPY, PATH_INDEX

SPEC = load_preset("ascend910b2")
HEAD = "from sage.npu.ascendc import *\n"
RELU = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "relu.py"


# -- what a kernel prints cannot be read back ---------------------------------------------------

def test_printed_is_refused_when_the_kernel_is_compiled():
    src = HEAD + "def forward(x):\n    print('x')\n    text = printed\n    return empty_like(x)\n"
    with pytest.raises(SandboxError, match="cannot be read back") as err:
        compile_kernel(src, "k.py")
    assert err.value.line == 4  # (the import, def, print, then this line)


@pytest.mark.parametrize("expr, allowed", [("a is None", True), ("None is not a", True), ("a is b", False),
                                           ("a is not 0", False), ("a < b is c", False)])
def test_identity_compares_only_with_none(expr, allowed):
    src = HEAD + f"def forward(x):\n    a = 1\n    b = 2\n    c = {expr}\n    return empty_like(x)\n"
    if allowed:
        compile_kernel(src, "k.py")
    else:
        with pytest.raises(SandboxError, match="only compare with None"):
            compile_kernel(src, "k.py")


DUMP = HEAD + """
@kernel
def k(x, y, n):
    xg = GlobalTensor()
    xg.SetGlobalBuffer(x, 0, n)
    DUMP_CALL

def forward(x):
    y = empty_like(x)
    k[1](x, y, x.numel())
    return y
"""


def _gm_reads(source: str, x: np.ndarray) -> list[tuple]:
    run = run_functional(source, [x], spec=SPEC, filename="k.py")
    assert run.error is None, run.error
    (block,) = run.trace.launches[0].blocks
    return [r for r in block.records if r[2] == GM_COPY]


def test_a_dump_of_gm_pays_the_reads_the_chip_makes():
    """CANN's DumpTensorGM2GMEntityImpl (dav_c220) copies GM through UB 1 KB at a time: 600 fp32
    (2,400 B, padded to 2,400 = 75 x 32 B) are three MTE2 reads of 1,024, 1,024 and 352 B."""
    x = np.arange(600, dtype=np.float32)
    assert _gm_reads(DUMP.replace("DUMP_CALL", "pass"), x) == []
    reads = _gm_reads(DUMP.replace("DUMP_CALL", "DumpTensor(xg, 7, 600)"), x)
    assert [(r[3], r[4]) for r in reads] == [(PATH_INDEX["GM->UB"], 1024), (PATH_INDEX["GM->UB"], 1024),
                                             (PATH_INDEX["GM->UB"], 352)]
    assert [(r[7], r[8], r[9]) for r in reads] == [(0, 0, 1024), (0, 1024, 2048), (0, 2048, 2400)]  # (GM bytes)


# -- a lane group's value stays in its group ------------------------------------------------------

def test_a_foreign_lane_value_is_refused_by_every_dsl_entry():
    stranger = LaneValue((1, 2), object())  # a value of a group that is not running
    with pytest.raises(NotLaneable):
        tensors._index(stranger, "GetValue index")
    with pytest.raises(NotLaneable):
        handles.unwrap(stranger)
    with pytest.raises(NotLaneable):
        handles.unwrap([stranger])
    with pytest.raises(NotLaneable):
        handles._plain((3, stranger))


KEEP = HEAD + """
BOX = []

@kernel
def k(x, y):
    BOX.append(GetBlockIdx())

def forward(x):
    y = empty_like(x)
    k[4](x, y)
    USE
    return y
"""


def test_a_lane_value_cannot_be_kept_past_its_launch():
    """Keeping one needs a change to an object made before the launch, which a lane try may not
    make: the launch runs block by block and what is kept is a plain int."""
    src = KEEP.replace("USE", "k[int(BOX[0]) + 1](x, y)")
    alone = run_functional(src, [np.zeros(64, np.float32)], spec=SPEC, filename="k.py", lockstep=False)
    lanes = run_functional(src, [np.zeros(64, np.float32)], spec=SPEC, filename="k.py")
    assert alone.error is None and lanes.error is None
    assert [len(launch.blocks) for launch in lanes.trace.launches][0] == 4


# -- formatting what a kernel raised never raises --------------------------------------------------

@pytest.mark.parametrize("raise_line", ["raise ValueError(10 ** 5000)",
                                        "raise RuntimeError(KEPT[0], KEPT)"])
def test_an_exception_whose_text_cannot_be_made_is_the_kernels_error(raise_line):
    src = HEAD + f"""
KEPT = []

@kernel
def k(x):
    pipe = TPipe()
    t = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(t, 256)
    KEPT.append(t.Get(float32))

def forward(x):
    k[1](x)
    {raise_line}
"""
    run = run_kernel_source(src, [np.zeros(64, np.float32)], filename="k.py")
    assert run.error is not None and run.error.type == "KernelRuntimeError", run.error
    assert run.error.line == src.splitlines().index(f"    {raise_line}") + 1
    assert "could not be shown" in run.error.message or "RuntimeError" in run.error.message
    sandboxed = run_sandboxed(src, [np.zeros(64, np.float32)], filename="k.py", limits=Limits(wall_seconds=20))
    assert sandboxed.error.type == "KernelRuntimeError", sandboxed.error
    assert not sandboxed.error.message.startswith("internal simulator error")


def test_a_dead_handle_in_a_message_gives_a_stand_in_text():
    src = HEAD + """
KEPT = []

@kernel
def k(x):
    pipe = TPipe()
    t = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(t, 256)
    KEPT.append(t.Get(float32))

def forward(x):
    k[1](x)
    raise RuntimeError(KEPT[0])
"""
    run = run_kernel_source(src, [np.zeros(64, np.float32)], filename="k.py")
    assert run.error.message == "RuntimeError: (the RuntimeError's message could not be shown)"


# -- an output nothing wrote -------------------------------------------------------------------------

def test_a_launch_that_writes_nothing_is_incorrect_not_impossible():
    src = HEAD + "@kernel\ndef k(x, z):\n    b = GetBlockIdx()\n\n" \
                 "def forward(x):\n    z = empty_like(x)\n    k[8](x, z)\n    return z\n"
    ev = evaluate_kernel(load_task(RELU), src, cases=1, filename="k.py")
    assert ev.status == "incorrect" and ev.error is None
    assert ev.cases[0].reason == ("case 0 (float32[64, 1024]): output 0 (float32[64, 1024]) was never written: "
                                  "no copy from a kernel reached any of its elements (each still holds the 0xFF "
                                  "fill of empty())")
