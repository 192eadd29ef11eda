"""The reference interpreter of the exported subset: the IR of the vector examples, read on its own,
computes what PyTorch computes (judged as `sage npu run` judges a kernel), and a wrong IR shows."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sage.bench.correctness import compare_outputs
from sage.bench.evaluate import reference_outputs, select_cases, truth_outputs
from sage.bench.tasks import kernel_args, load_task, parameter_kwargs
from sage.export import export_kernel
from sage.export.interpret import InterpretError, run, run_exported

from test_emit import EXAMPLES, SPEC


def exported_case(kernel: str, task: str, case: int):
    t = load_task(EXAMPLES / task)
    t.seed = 0
    model, [(_, inputs)] = select_cases(t, [case])
    args, kwargs = kernel_args(inputs), parameter_kwargs(model)
    ex = export_kernel((EXAMPLES / kernel).read_text(), args, kwargs, spec=SPEC, filename=kernel)
    tensors = [a for a in args if isinstance(a, np.ndarray)] + list(kwargs.values())
    return ex, tensors, model, inputs


def judged(text: str, ex, tensors, model, inputs) -> bool:
    expected = reference_outputs(model, inputs)
    outputs = [o.reshape(e.shape) for o, e in zip(run_exported(replace(ex, text=text), tensors), expected)]
    return compare_outputs(expected, outputs, truth=truth_outputs(model, inputs, len(expected))).correct


@pytest.mark.parametrize("kernel,task,case", [
    ("add.py", "add_task.py", 3),            # fp16, a tail block in the else branch
    ("softmax.py", "softmax_task.py", 3),    # fp16 cast to fp32, scalars through memref.load
    ("layernorm.py", "layernorm_task.py", 1),
])
def test_the_exported_ir_computes_the_reference(kernel, task, case):
    ex, tensors, model, inputs = exported_case(kernel, task, case)
    assert judged(ex.text, ex, tensors, model, inputs)


def test_a_wrong_ir_is_caught():
    ex, tensors, model, inputs = exported_case("add.py", "add_task.py", 2)
    # blocks 0..42 at 48 * idx: moved by one element, every block but the tail misses its first element
    wrong = ex.text.replace("(d0 * 48 + 0)", "(d0 * 48 + 1)")
    assert wrong != ex.text
    assert not judged(wrong, ex, tensors, model, inputs)
    # the tail block's add (the second vadd, in the else branch) made a subtraction: its 43 outputs are wrong
    first = ex.text.index("hivm.hir.vadd")
    second = ex.text.index("hivm.hir.vadd", first + 1)
    no_tail = ex.text[:second] + ex.text[second:].replace("hivm.hir.vadd", "hivm.hir.vsub", 1)
    assert not judged(no_tail, ex, tensors, model, inputs)


def test_an_unwritten_local_buffer_reads_as_nan():
    ex, tensors, model, inputs = exported_case("add.py", "add_task.py", 0)
    lines = [ln for ln in ex.text.splitlines() if "hivm.hir.load" not in ln or "%arg1" in ln]   # x never loaded
    outputs = run_exported(replace(ex, text="\n".join(lines)), tensors)
    assert np.isnan(outputs[0].astype(np.float32)).all()


def test_lines_outside_the_subset_are_refused():
    with pytest.raises(InterpretError, match="not in the exported subset: hivm.hir.vgather"):
        run('func.func @k(%arg0: memref<8xf32, #gm>) {\n'
            '  hivm.hir.vgather ins(%arg0 : memref<8xf32, #gm>) outs(%arg0 : memref<8xf32, #gm>)\n  return\n}\n',
            [np.zeros(8, np.float32)], 1)


ROWS = """
from sage.npu.ascendc import *

@kernel
def k(x, y, rows, d):
    pipe = TPipe()
    buf = TBuf(TPosition.VECCALC)
    pitch = (d * 4 + 31) // 32 * 8                   # fp32 row padded to 32 B in UB
    pipe.InitBuffer(buf, rows * pitch * 4)
    gx = GlobalTensor(); gx.SetGlobalBuffer(x, GetBlockIdx() * rows * d, rows * d)
    gy = GlobalTensor(); gy.SetGlobalBuffer(y, GetBlockIdx() * rows * d, rows * d)
    t = buf.Get(float32)
    DataCopyPad(t, gx, DataCopyExtParams(rows, d * 4, 0, 0, 0), DataCopyPadExtParams(False, 0, 0, 0))
    SetFlag(HardEvent.MTE2_V, 0)
    WaitFlag(HardEvent.MTE2_V, 0)
    Muls(t, t, 2.0, rows * pitch)
    SetFlag(HardEvent.V_MTE3, 0)
    WaitFlag(HardEvent.V_MTE3, 0)
    DataCopyPad(gy, t, DataCopyExtParams(rows, d * 4, 0, 0, 0))

def forward(x):
    y = empty_like(x)
    k[4](x, y, 3, x.shape[-1])
    return y
"""


def test_multi_row_copies_are_two_dimensional():
    # 4 blocks x 3 rows of 301 fp32: in UB each row takes 304 elements (1216 B, a 32 B multiple)
    x = np.random.default_rng(0).standard_normal((12, 301)).astype(np.float32)
    ex = export_kernel(ROWS, [x], None, spec=SPEC, filename="k.py")
    assert ex.refusal is None
    assert "memref<3x301xf32, strided<[301, 1], offset: ?>, #gm>" in ex.text
    assert "memref<3x301xf32, strided<[304, 1]>, #ub>" in ex.text   # recast from 2 * 304 + 301 elements
    assert "memref<909xf32, #ub>" in ex.text
    assert "affine_map<(d0) -> (d0 * 903 + 0)>" in ex.text
    (y,) = run_exported(ex, [x])
    np.testing.assert_array_equal(y.reshape(12, 301), x * 2)
