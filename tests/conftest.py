"""Whole-suite hooks: after the run, which tests were skipped and how to run them.

`make test` runs pytest with -rs (each skip reason, in the short summary); this adds one
line per kind of skip that a developer can undo, with the command that undoes it.
"""

from __future__ import annotations

import os

import pytest

# The offline agent's schedule search simulates each task's groups up to 4 more times per
# episode; across the tests that run episodes on the suite's full-size cases that is most of
# CI's time. Tests run episodes without it; tests/agent/compiler/test_search.py tests the
# search itself, and test_search_budget_reaches_the_offline_agent the setting. Set before
# any worker process forks, so bench workers and CLI subprocesses inherit it.
os.environ.setdefault("SAGE_SEARCH_BUDGET", "0")

# (words in a skip reason, what the line says, how to run them)
HOW_TO_RUN = [
    ("SAGE_TEST_POSTGRES_URL", "PostgreSQL",
     "start one with `bash .ci/start-postgres`, then "
     "SAGE_TEST_POSTGRES_URL=postgresql+psycopg://sage:sage@127.0.0.1:55432/sage_test make test "
     "(a database of your own: the tests create and drop schemas in it)"),
    ("pip install 'sage-npu[ray]'", "Ray", "pip install 'sage-npu[ray]' (or .venv/bin/pip install ray)"),
    ("pip install 'sage-npu[export]'", "vendor compiler (bishengir-compile)",
     "pip install 'sage-npu[export]' (CPython 3.11 only; `make test` installs it there)"),
]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    reasons = [str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
               for report in skipped]
    counted = 0
    for words, what, how in HOW_TO_RUN:
        n = sum(words in reason for reason in reasons)
        if n:
            counted += n
            terminalreporter.write_line(f"{n} {what} test(s) skipped; to run them: {how}", yellow=True)
    others = len(reasons) - counted
    if others:
        terminalreporter.write_line(f"{others} other test(s) skipped on this machine (reasons in the summary below)")


@pytest.fixture
def partitions(monkeypatch):
    """The partition of every launch try, in order (None: block by block; sage/npu/sim/session.py)."""
    from sage.npu.sim import streams

    seen: list = []
    original = streams.LaunchRun.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        seen.append(None if self.partition is None else sorted(len(g) for g in self.partition))
    monkeypatch.setattr(streams.LaunchRun, "__init__", init)
    return seen
