"""Helpers for the simulator tests: run a kernel source and find lines in it."""

from __future__ import annotations

import textwrap

import pytest

from sage.npu.execute import run_kernel_source


def kernel_source(body: str) -> str:
    return "from sage.npu.ascendc import *\nimport math\n" + textwrap.dedent(body)


def line_of(source: str, marker: str) -> int:
    """1-based line of the first line containing ``marker`` (a comment tag in the kernel)."""
    for i, text in enumerate(source.splitlines(), 1):
        if marker in text:
            return i
    raise AssertionError(f"marker {marker!r} not in source")


@pytest.fixture
def run():
    def _run(body: str, args, **kw):
        src = kernel_source(body)
        result = run_kernel_source(src, args, filename="test_kernel.py", **kw)
        return src, result
    return _run


@pytest.fixture
def check_error():
    """Assert a run failed with error class ``cls`` on the kernel line holding ``marker``."""
    def _check(result, src, cls, marker, text=""):
        assert result.outputs is None and result.profile is None
        assert result.error is not None, "expected an error"
        assert result.error.type == cls, result.error
        assert result.error.line == line_of(src, marker), result.error
        assert text in result.error.message, result.error.message
    return _check
