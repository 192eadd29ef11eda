"""sage export's front end and emitter: what the IR of the example kernels says, checked against
figures derived by hand from the kernels and their tasks, and the one-line refusals."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import sage.npu.ascendc as dsl
from sage.bench.evaluate import select_cases
from sage.bench.tasks import kernel_args, load_task, parameter_kwargs
from sage.export import export_kernel
from sage.export.scalars import Traced
from sage.npu.ascendc import handles
from sage.npu.hardware import load_preset

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "kernels"
SPEC = load_preset("ascend910b2")


def export_example(kernel: str, task: str, case: int):
    t = load_task(EXAMPLES / task)
    t.seed = 0
    model, [(_, inputs)] = select_cases(t, [case])
    return export_kernel((EXAMPLES / kernel).read_text(), kernel_args(inputs), parameter_kwargs(model), spec=SPEC,
                         filename=kernel)


def export_source(source: str, args: list):
    return export_kernel(source, args, None, spec=SPEC, filename="k.py")


def hivm_ops(text: str) -> list[str]:
    return re.findall(r"hivm\.hir\.(\w+)", text)


def test_add_even_split_is_one_program_affine_in_the_block_index():
    # case 0: 96 x 1024 fp16 = 98,304 elements; per block ceil(98304 / 48) = 2048 (a 32 B multiple),
    # so 48 blocks of 2048 and one tile each (tile 16 KB = 8192 fp16): load, load, add, store at 2048 * idx
    ex = export_example("add.py", "add_task.py", 0)
    assert ex.refusal is None
    assert (ex.blocks, ex.groups, ex.ops) == (48, 1, 4)
    assert "func.func @add_custom(%arg0: memref<98304xf16, #gm>, %arg1: memref<98304xf16, #gm>, " \
           "%arg2: memref<98304xf16, #gm>)" in ex.text
    assert hivm_ops(ex.text) == ["get_block_idx", "load", "load", "vadd", "store"]
    assert ex.text.count("affine_map<(d0) -> (d0 * 2048 + 0)>") == 3
    assert "scf.if" not in ex.text
    # three queues of BUFFER_NUM x 16 KB; each block uses the first buffer of each
    assert ex.text.count("memref.alloc() : memref<16384xi8, #ub>") == 3


def test_add_tail_block_is_its_own_branch():
    # case 2: 7 x 301 fp32 = 2107 elements; per block ceil(2107 / 48) = 44 -> 48 (8 fp32 = 32 B):
    # blocks 0..42 copy 48 elements at 48 * idx, block 43 the last 2107 - 43 * 48 = 43 (DataCopyPad)
    ex = export_example("add.py", "add_task.py", 2)
    assert ex.refusal is None
    assert (ex.blocks, ex.groups) == (44, 2)
    assert "affine_map<(d0) -> (d0 * 48 + 0)>" in ex.text
    assert "memref<48xf32, strided<[1], offset: ?>, #gm>" in ex.text
    assert "affine_map<(d0) -> (d0 * 0 + 2064)>" in ex.text
    assert "memref.subview %arg2[" in ex.text and "[43] [1]" in ex.text
    assert re.search(r"arith\.constant 43 : index", ex.text) and re.search(r"arith\.constant 44 : index", ex.text)
    assert ex.text.count("scf.if") == 2


def test_ops_carry_the_kernel_line():
    ex = export_example("add.py", "add_task.py", 0)
    source = (EXAMPLES / "add.py").read_text().splitlines()
    vadd = next(line for line in ex.text.splitlines() if "hivm.hir.vadd" in line)
    line = int(re.search(r'loc\("add\.py":(\d+):1\)', vadd).group(1))
    assert source[line - 1].strip().startswith("Add(zl, xl, yl")
    assert all(source[k - 1].strip().startswith(("DataCopy", "Add")) for k in ex.lines.values()
               if k != ex.lines.get(min(ex.lines)))


def test_softmax_scalars_come_from_ub_loads():
    # per row: ReduceMax -> GetValue -> Adds(-max) and ReduceSum -> GetValue -> Muls(1 / sum)
    ex = export_example("softmax.py", "softmax_task.py", 0)
    assert ex.refusal is None
    text = ex.text
    assert hivm_ops(text).count("vreduce") == 2 * 2          # 64 rows / 32 blocks = 2 rows per block
    assert text.count("memref.load") == 4
    neg = re.search(r"(%s\d+) = arith\.negf (%s\d+) : f32", text)
    load_of_max = re.search(rf"{neg.group(2)} = memref\.load", text)
    assert load_of_max is not None
    assert re.search(rf"hivm\.hir\.vadd ins\(%v\d+, {neg.group(1)} :", text)
    inv = re.search(r"(%s\d+) = arith\.divf %s\d+, (%s\d+) : f32", text)
    assert re.search(rf"{inv.group(2)} = memref\.load", text)
    assert re.search(rf"hivm\.hir\.vmul ins\(%v\d+, {inv.group(1)} :", text)
    # 1.0 as an exact f32 bit pattern
    assert "arith.constant 0x3F800000 : f32" in text


def test_layernorm_follows_math_sqrt_and_casts_fp16():
    ex = export_example("layernorm.py", "layernorm_task.py", 2)
    assert ex.refusal is None
    assert "math.sqrt" in ex.text
    assert "hivm.hir.vcast" in ex.text


DATA_BRANCH = """
from sage.npu.ascendc import *

@kernel
def k(x, y, n):
    pipe = TPipe()
    buf = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(buf, 4 * n)
    gx = GlobalTensor(); gx.SetGlobalBuffer(x, 0, n)
    gy = GlobalTensor(); gy.SetGlobalBuffer(y, 0, n)
    t = buf.Get(float32)
    DataCopy(t, gx, n)
    SetFlag(HardEvent.MTE2_S, 0)
    WaitFlag(HardEvent.MTE2_S, 0)
    SetFlag(HardEvent.MTE2_V, 0)
    WaitFlag(HardEvent.MTE2_V, 0)
    if t.GetValue(0) > 0:
        Muls(t, t, 2.0, n)
    SetFlag(HardEvent.V_MTE3, 0)
    WaitFlag(HardEvent.V_MTE3, 0)
    DataCopy(gy, t, n)

def forward(x):
    y = empty_like(x)
    k[1](x, y, x.numel())
    return y
"""


def test_control_flow_on_tensor_data_is_refused_in_one_line():
    ex = export_source(DATA_BRANCH, [np.ones(64, np.float32)])
    assert ex.text is None
    assert ex.refusal == "line 17 uses a value read from tensor data in a comparison: control flow on tensor data " \
                         "is not exported"


def test_the_cube_path_is_refused_in_one_line():
    ex = export_example("matmul.py", "matmul_task.py", 0)
    assert ex.text is None and "\n" not in ex.refusal
    assert "L1 (the cube path) is not exported yet" in ex.refusal


def test_a_failing_kernel_says_its_error():
    ex = export_source(DATA_BRANCH.replace("pipe.InitBuffer(buf, 4 * n)", "pipe.InitBuffer(buf, 4 * n * 10000)"),
                       [np.ones(64, np.float32)])
    assert ex.refusal.startswith("the kernel fails on this case: CapacityError (line 8)")


def test_export_leaves_the_dsl_as_it_was():
    before = {name: getattr(dsl, name) for name in dsl.__all__}
    methods = (dsl.LocalTensor.__dict__["GetValue"], dsl.GlobalTensor.__dict__["GetValue"])
    export_source(DATA_BRANCH, [np.ones(64, np.float32)])
    assert {name: getattr(dsl, name) for name in dsl.__all__} == before
    assert (dsl.LocalTensor.__dict__["GetValue"], dsl.GlobalTensor.__dict__["GetValue"]) == methods
    assert Traced not in handles._ARGUMENT_TYPES


@pytest.mark.parametrize("bad", ["x > 0", "int(x)", "math.floor(x)"])
def test_traced_values_note_what_the_ir_cannot_follow(bad):
    source = DATA_BRANCH.replace("from sage.npu.ascendc import *", "from sage.npu.ascendc import *\nimport math")
    source = source.replace("    if t.GetValue(0) > 0:\n        Muls(t, t, 2.0, n)",
                            f"    x = t.GetValue(0)\n    z = {bad}\n    Muls(t, t, 2.0, n)")
    ex = export_source(source, [np.ones(64, np.float32)])
    assert ex.text is None and "control flow on tensor data is not exported" in ex.refusal
    assert ex.refusal.startswith("line 19 ")   # z = ...
