"""The vendor compiler's verdict (`bishengir-compile` of the `ascendnpu-ir` extra) on exported IR,
and `sage export` on the command line with and without it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage.cli import app
from sage.export import check_ir, compiler_path
from sage.export import vendor
from sage.export.vendor import verdict

from test_emit import EXAMPLES, export_example

NO_VENDOR = "bishengir-compile is absent: pip install 'sage-npu[export]' (CPython 3.11) to run the vendor compiler"
needs_vendor = pytest.mark.skipif(compiler_path() is None, reason=NO_VENDOR)
runner = CliRunner()


@needs_vendor
@pytest.mark.parametrize("kernel,task,case", [
    ("add.py", "add_task.py", 0),          # even split: one program, block index symbolic
    ("add.py", "add_task.py", 3),          # fp16 with a tail block (scf.if)
    ("softmax.py", "softmax_task.py", 1),  # 33 x 301: DataCopyPad rows, scalars from UB loads
    ("layernorm.py", "layernorm_task.py", 2),
])
def test_exported_examples_pass_the_vendor_pipeline(kernel, task, case):
    ex = export_example(kernel, task, case)
    result = check_ir(ex.text, target="Ascend910B2", kernel_file=kernel, lines=ex.lines)
    assert result.passed, result.output
    assert result.line == "passes (stopped only at hivmc)"


# The package README's add, on 1 M fp16 elements in one UB buffer each: 3 x 2 MB, far over the
# 192 KB of UB. Built by hand: sage itself refuses such a kernel before any IR exists.
OVER_UB = """#gm = #hivm.address_space<gm>
#ub = #hivm.address_space<ub>
module {
  func.func @add(%arg0: memref<1048576xf16, #gm>, %arg1: memref<1048576xf16, #gm>, %arg2: memref<1048576xf16, #gm>) attributes {hacc.entry, hacc.function_kind = #hacc.function_kind<DEVICE>} {
    %a = memref.alloc() : memref<1048576xf16, #ub>
    hivm.hir.load ins(%arg0 : memref<1048576xf16, #gm>) outs(%a : memref<1048576xf16, #ub>)
    %b = memref.alloc() : memref<1048576xf16, #ub>
    hivm.hir.load ins(%arg1 : memref<1048576xf16, #gm>) outs(%b : memref<1048576xf16, #ub>)
    %c = memref.alloc() : memref<1048576xf16, #ub>
    hivm.hir.vadd ins(%a, %b : memref<1048576xf16, #ub>, memref<1048576xf16, #ub>) outs(%c : memref<1048576xf16, #ub>)
    hivm.hir.store ins(%c : memref<1048576xf16, #ub>) outs(%arg2 : memref<1048576xf16, #gm>)
    return
  }
}
"""


@needs_vendor
def test_over_capacity_ir_is_refused_with_the_vendors_ub_rule():
    # The IR's line 4 (the func) stands for kernel line 80 here, as emit.py records a launch's def line.
    result = check_ir(OVER_UB, target="Ascend910B2", kernel_file="add.py", lines={4: 80})
    assert not result.passed
    # 2 MB of one buffer = 16,777,216 bits; the vendor counts what it must hold at once
    assert result.line.startswith("refused at add.py line 80 (IR line 4): ub overflow, requires ")
    assert "while 1572864 bits available" in result.line            # 192 KB of UB, in bits
    assert "\n" not in result.line


def test_verdict_reads_the_vendors_output():
    passed = ("[ERROR] Cannot find hivmc under $PATH\n"
              'loc("/tmp/x/kernel.mlir":3:1): error: External hivmc run fails, returning module before running '
              "external compiler\n[ERROR] Failed to run BiShengIR pipeline\n")
    assert verdict(passed, "/tmp/x/kernel.mlir", {}, "add.py").passed
    refused = ('loc("/tmp/x/kernel.mlir":1:1): error: Failed to run BiShengHIR pipeline\n\n'
               'loc("add.py":65:1): error: \'hivm.hir.vadd\' op operand type mismatch\n')
    result = verdict(refused, "/tmp/x/kernel.mlir", {}, "add.py")
    assert not result.passed
    assert result.line == "refused at add.py line 65: 'hivm.hir.vadd' op operand type mismatch"


def test_export_writes_the_ir_and_says_why_the_check_is_unavailable(tmp_path, monkeypatch):
    monkeypatch.setattr(vendor, "compiler_path", lambda: None)
    out = tmp_path / "add.mlir"
    result = runner.invoke(app, ["export", str(EXAMPLES / "add.py"), "--task", str(EXAMPLES / "add_task.py"),
                                 "--to", "npuir", "-o", str(out), "--check"])
    assert result.exit_code == 0, result.output
    assert out.read_text().count("hivm.hir.vadd") == 1
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("check: the vendor check is unavailable: ")
    if sys.version_info[:2] == (3, 11) and sys.implementation.name == "cpython":
        assert lines[-1].endswith("pip install 'sage-npu[export]' (CPython 3.11 only: the one wheel ascendnpu-ir "
                                  "publishes)")


def test_unavailable_on_another_python(monkeypatch):
    monkeypatch.setattr(vendor, "compiler_path", lambda: None)
    monkeypatch.setattr(vendor.sys, "version_info", (3, 12, 1))
    assert vendor.unavailable_reason().startswith("the vendor check is unavailable: ascendnpu-ir publishes a wheel "
                                                  "for CPython 3.11 only (this is cpython 3.12)")


def test_export_refusal_is_one_line_and_exit_1():
    result = runner.invoke(app, ["export", str(EXAMPLES / "matmul.py"), "--task", str(EXAMPLES / "matmul_task.py"),
                                 "--to", "npuir"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("not exported: DataCopy (line 68)")


def test_export_bad_input():
    result = runner.invoke(app, ["export", str(EXAMPLES / "add.py"), "--op", "softmax", "--to", "llvm"])
    assert result.exit_code == 2 and "--to llvm: unknown format (known: npuir)" in result.stderr


@needs_vendor
def test_check_on_the_command_line(tmp_path):
    result = runner.invoke(app, ["export", str(EXAMPLES / "softmax.py"), "--op", "softmax", "--to", "npuir",
                                 "-o", str(tmp_path / "s.mlir"), "--check"])
    assert result.exit_code == 0, result.output
    assert result.stderr.strip().splitlines()[-1] == "check (Ascend910B2): passes (stopped only at hivmc)"


@needs_vendor
def test_multi_row_copies_pass_the_vendor_pipeline():
    import numpy as np
    from sage.export import export_kernel
    from test_emit import SPEC
    from test_interpret import ROWS

    x = np.zeros((12, 301), np.float32)
    ex = export_kernel(ROWS, [x], None, spec=SPEC, filename="k.py")
    result = check_ir(ex.text, target="Ascend910B2", kernel_file="k.py", lines=ex.lines)
    assert result.passed, result.output
