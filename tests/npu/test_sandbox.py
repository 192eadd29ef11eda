"""The sandbox: hostile kernel files are refused or stopped, each with its own error class."""

import os
import signal
import threading
import time
from textwrap import dedent

import numpy as np
import pytest

from sage.npu.errors import SandboxError
from sage.npu.restricted import compile_kernel
from sage.npu.sandbox import Limits, run_sandboxed
from sage.npu.zygote import Zygote

HEADER = "from sage.npu.ascendc import *\n"

# Small limits: every hostile kernel below must be stopped within a few seconds.
FAST = Limits(cpu_seconds=20, memory_mb=1024, wall_seconds=8)


def kernel(body: str) -> str:
    return HEADER + dedent(body)


@pytest.mark.parametrize(("source", "line", "says"), [
    ("import os\n", 1, "import of 'os'"),
    ("import math, subprocess\n", 1, "import of 'subprocess'"),
    ("from os import path\n", 1, "import from 'os'"),
    ("from . import execute\n", 1, "import from '.'"),
    ("from sage.npu.ascendc import _private\n", 1, "_private"),
    ("from sage.npu.ascendc import np\n", 1, "not part of sage.npu.ascendc"),
    ("from sage.npu.ascendc import handles\n", 1, "not part of sage.npu.ascendc"),
    ("x = 1\nm = __import__('os')\n", 2, "__import__"),
    ("k = ().__class__.__base__.__subclasses__()\n", 1, "__subclasses__"),
    ("def f(t):\n    return t._arr.sum()\n", 2, "_arr"),
    ("g = (i for i in [1])\nf = g.gi_frame.f_back.f_globals\n", 2, "f_globals"),
    ("def f():\n    try:\n        1 / 0\n    except ZeroDivisionError:\n        pass\n", 2, "try/except"),
    ("x = 0\ndef f():\n    global x\n    x = 1\n", 3, "`global`"),
    ("def f():\n    y = 0\n    def g():\n        nonlocal y\n", 4, "`nonlocal`"),
    ("def __init_subclass__(cls):\n    pass\n", 1, "__init_subclass__"),
    ("class K:\n    def __init__(self):\n        pass\n", 2, "__init__"),
    ("class K:\n    _slot = 1\n", 2, "_slot"),
    ("def f(_x):\n    return _x\n", 1, "_x"),
    ("def f(x):\n    return dict(_x=1)\n", 2, "_x"),
    ("def f():\n    yield 1\n", 2, "generators"),
    ("def f():\n    with f():\n        pass\n", 2, "`with`"),
    ("def f(x):\n    match x:\n        case int(real=c):\n            return c\n", 2, "Match"),
    ("class K(metaclass=object):\n    pass\n", 1, "metaclass"),
])
def test_the_restricted_compiler_refuses_escapes_with_their_line(source, line, says):
    with pytest.raises(SandboxError) as refused:
        compile_kernel(HEADER + source)
    assert refused.value.line == line + 1  # the header is line 1
    assert says in refused.value.message


@pytest.mark.parametrize(("body", "says"), [
    ("g = getattr(1, 'real')", "getattr"),
    ("f = open('/etc/passwd')", "open"),
    ("v = vars()", "vars"),
    ("t = type(x)", "type"),
    ("i = id(x)", "id"),
    ("m = memoryview(b'x')", "memoryview"),
    ("e = eval('1 + 1')", "Eval"),
])
def test_builtins_outside_the_allow_list_do_not_exist_in_a_kernel(body, says):
    run = run_sandboxed(kernel(f"def forward(x):\n    {body}\n    return empty_like(x)\n"),
                        [np.zeros(4, np.float32)], limits=FAST)
    assert run.error.type in ("KernelRuntimeError", "SandboxError")
    assert says in run.error.message and run.error.line == 3


@pytest.mark.parametrize(("body", "says"), [
    ("s = '{0.shape}'.format(x)", "'.format' of a str"),
    ("s = '{0}'.format_map({})", "'.format_map' of a str"),
    ("t = x.dtype.type", "'.type'"),
    ("f = forward.globals", "'.globals' of a function"),
    ("x.shape = (1,)", "may not change a GmHandle"),
    ("k = TQue.AllocTensor", "'.AllocTensor' of a type"),
])
def test_guarded_attribute_access_refuses_what_a_kernel_has_no_business_reading(body, says):
    run = run_sandboxed(kernel(f"def forward(x):\n    {body}\n    return empty_like(x)\n"),
                        [np.zeros(4, np.float32)], limits=FAST)
    assert run.error.type == "SandboxError", run.error
    assert says in run.error.message and run.error.line == 3


def test_a_kernel_class_may_not_derive_from_a_dsl_class():
    run = run_sandboxed(kernel("class Q(TQue):\n    pass\ndef forward(x):\n    return x\n"),
                        [np.zeros(4, np.float32)], limits=FAST)
    assert run.error.type == "SandboxError" and "derive" in run.error.message and run.error.line == 2


def test_a_syntax_error_is_the_same_kernel_error_with_or_without_the_sandbox():
    from sage.npu.errors import KernelSyntaxError
    from sage.npu.execute import run_kernel_source

    source = HEADER + "def f(:\n"
    with pytest.raises(KernelSyntaxError) as raised:
        compile_kernel(source)
    direct = run_kernel_source(source, [])
    assert (raised.value.type, raised.value.line) == (direct.error.type, direct.error.line) == ("KernelSyntaxError", 2)
    assert raised.value.message == direct.error.message


def test_the_restricted_compiler_accepts_a_dsl_kernel_in_the_design_style():
    compile_kernel(kernel("""
        import math
        BUFFER_NUM = 2

        class KernelAdd(object):
            def Init(self, x, n):
                self.x_gm = GlobalTensor()
                self.x_gm.SetGlobalBuffer(x, 0, n)
                self.pipe = TPipe()
                self.que = TQue(TPosition.VECIN, BUFFER_NUM)
                self.pipe.InitBuffer(self.que, BUFFER_NUM, n * sizeof(float16))

        @kernel
        def add_custom(x, n):
            op = KernelAdd()
            op.Init(x, n)

        def forward(x):
            add_custom[1](x, math.prod(x.shape))
            return empty_like(x)
    """))


def test_a_refused_import_is_reported_without_running_anything():
    run = run_sandboxed(kernel("import os\ndef forward(x):\n    return x\n"), [np.zeros(4)], limits=FAST)
    assert run.outputs is None
    assert run.error.type == "SandboxError"
    assert run.error.line == 2


def test_an_endless_loop_is_stopped_by_the_wall_clock_with_its_line():
    source = kernel("""
        def forward(x):
            n = 0
            while True:
                n += 1
    """)
    start = time.monotonic()
    run = run_sandboxed(source, [np.zeros(4, np.float32)], limits=FAST)
    elapsed = time.monotonic() - start
    assert run.error.type == "KernelTimeout"
    assert f"wall-clock limit of {FAST.wall_seconds:g} s" in run.error.message
    assert run.error.line in (5, 6)  # the loop's test or its body
    assert elapsed < FAST.wall_seconds + 3


def test_the_cpu_time_limit_stops_a_busy_kernel():
    source = kernel("""
        def forward(x):
            n = 0
            while True:
                n += 1
    """)
    run = run_sandboxed(source, [np.zeros(4, np.float32)],
                        limits=Limits(cpu_seconds=1, memory_mb=1024, wall_seconds=30))
    assert run.error.type == "KernelTimeout"
    assert "CPU-time limit of 1 s" in run.error.message


def test_the_cpu_time_limit_stops_a_kernel_stuck_in_one_long_c_call():
    # No bytecode runs inside sum(): the SIGXCPU handler cannot raise, the hard limit kills.
    source = kernel("""
        def forward(x):
            return sum(range(10**13))
    """)
    run = run_sandboxed(source, [np.zeros(4, np.float32)],
                        limits=Limits(cpu_seconds=1, memory_mb=1024, wall_seconds=30))
    assert run.error.type == "KernelTimeout"
    assert "CPU-time limit of 1 s" in run.error.message


@pytest.mark.parametrize("bomb", [
    "b = 'x' * (20 * 2**30)",
    "b = [0] * (20 * 2**30 // 8)",
    "b = []\n    while True:\n        b.append('y' * 2**24)",
])
def test_a_memory_bomb_is_a_memory_limit_error(bomb):
    source = kernel(f"def forward(x):\n    {bomb}\n    return x\n")
    start = time.monotonic()
    run = run_sandboxed(source, [np.zeros(4, np.float32)], limits=FAST)
    assert run.error.type == "MemoryLimitError"
    assert time.monotonic() - start < FAST.wall_seconds


def test_a_recursion_bomb_is_a_runtime_error_with_its_line():
    source = kernel("""
        def dive(n):
            return dive(n + 1) + 1

        def forward(x):
            return dive(0)
    """)
    run = run_sandboxed(source, [np.zeros(4, np.float32)], limits=FAST)
    assert run.error.type == "KernelRuntimeError"
    assert "RecursionError" in run.error.message
    assert run.error.line == 4


def _children_of(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(p) for p in fh.read().split()]
    except FileNotFoundError:
        return []


def _signal_the_child_soon(signum: int) -> threading.Thread:
    """From outside, as the kernel of the OS would: send `signum` to the running sandbox child
    (a child of this process's zygote)."""
    def shoot():
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            zygote = Zygote._instance
            children = _children_of(zygote.proc.pid) if zygote is not None else []
            if children:
                time.sleep(0.3)  # let it get into the kernel's loop
                os.kill(children[0], signum)
                return
            time.sleep(0.05)
    thread = threading.Thread(target=shoot)
    thread.start()
    return thread


@pytest.mark.parametrize(("signum", "error_type", "says"), [
    (signal.SIGSEGV, "KernelRuntimeError", "crashed with signal SIGSEGV"),
    (signal.SIGKILL, "MemoryLimitError", "killed (SIGKILL)"),
])
def test_a_child_that_dies_of_a_signal_is_reported_by_name(signum, error_type, says):
    source = kernel("""
        def forward(x):
            while True:
                pass
    """)
    shooter = _signal_the_child_soon(signum)
    run = run_sandboxed(source, [np.zeros(4, np.float32)], limits=Limits(wall_seconds=15))
    shooter.join()
    assert run.error.type == error_type
    assert says in run.error.message


ADD_ONE = kernel("""
    @kernel
    def add_one(x, y, n):
        gx = GlobalTensor(); gx.SetGlobalBuffer(x, 0, n)
        gy = GlobalTensor(); gy.SetGlobalBuffer(y, 0, n)
        pipe = TPipe()
        buf = TBuf(TPosition.VECCALC)
        pipe.InitBuffer(buf, n * sizeof(float32))
        t = buf.Get(float32)
        DataCopy(t, gx, n)
        SetFlag(HardEvent.MTE2_V, 0); WaitFlag(HardEvent.MTE2_V, 0)
        Adds(t, t, 1.0, n)
        SetFlag(HardEvent.V_MTE3, 0); WaitFlag(HardEvent.V_MTE3, 0)
        DataCopy(gy, t, n)

    def forward(x):
        y = empty_like(x)
        add_one[1](x, y, x.numel())
        return y
""")


def test_the_parent_keeps_working_after_hostile_kernels():
    run_sandboxed(kernel("def forward(x):\n    b = 'x' * (20 * 2**30)\n"), [np.zeros(8)],
                  limits=FAST)
    x = np.arange(1024, dtype=np.float32)
    run = run_sandboxed(ADD_ONE, [x], limits=FAST)
    assert run.error is None, run.error
    np.testing.assert_array_equal(run.outputs[0], x + 1)
    assert run.profile.cycles > 0


def test_run_sandboxed_reports_a_syntax_error_without_raising():
    run = run_sandboxed(HEADER + "def f(:\n", [])
    assert run.error is not None and run.error.type == "KernelSyntaxError" and run.error.line == 2
