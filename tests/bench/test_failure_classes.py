"""The compiler-coverage report files every refusal the compiler words under one class."""

import pytest

from benchmarks.compiler_coverage import classify


@pytest.mark.parametrize("reason, expected", [
    ("cannot compile: aten._local_scalar_dense.default: the reference reads tensor data on the host "
     "(.item()/.tolist()); a kernel's host code cannot read device data", "host reads tensor data"),
    ("cannot compile: the reference's operations depend on tensor values it reads on the host "
     "(.tolist()/.item() driving Python control flow); no static kernel program matches it", "host reads tensor data"),
    ("cannot compile: aten.nonzero.default: its output shape depends on the input values; a kernel allocates "
     "its outputs before it reads any data", "data-dependent output shape"),
    ("cannot compile: the reference computes a tensor on the host outside torch (numpy, or Python on tensor "
     "values) from its inputs: the trace holds it as a captured constant, which a kernel cannot compute",
     "host computes a tensor outside torch"),
    ("cannot compile: the reference draws new random tensors on every call (torch.randn, or a module built "
     "inside forward, as a fresh nn.Conv2d is): the trace holds one draw as a captured constant, and no kernel "
     "reproduces the next", "reference draws random tensors per call"),
])
def test_a_refusal_is_filed_under_its_class(reason, expected):
    assert classify({"status": "no_kernel", "reason": reason}) == expected


def test_a_wrong_result_and_a_compiler_crash_are_their_own_classes():
    assert classify({"status": "incorrect", "reason": "outside tolerance"}) == "wrong result"
    assert classify({"status": "compiler_error", "error": "IndexError: list index out of range"}) == \
        "compiler error (a bug)"


def test_a_resumed_coverage_run_names_the_commit_of_every_row():
    from benchmarks.compiler_coverage import report

    rows = [{"task": "level0/a", "level": 0, "status": "correct", "speedup": 1.2, "roofline": 0.5, "commit": "aaa"},
            {"task": "level0/b", "level": 0, "status": "correct", "speedup": 1.1, "roofline": 0.5, "commit": "bbb"},
            {"task": "level0/c", "level": 0, "status": "correct", "speedup": 1.3, "roofline": 0.5, "commit": "bbb"}]
    meta = {"command": "x", "cases": 1, "suite": "s", "commit": "bbb"}
    head = report(rows, meta).splitlines()[0]
    assert "rows from commits bbb (2), aaa (1)" in head
    assert "; commit bbb;" in report(rows[1:], meta).splitlines()[0]
