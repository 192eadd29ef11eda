"""The red-team corpus, run through the real path: every attack and reward hack in
``tests/security/attacks/`` must be refused or judged incorrect, in bounded time, with
nothing changed outside the run (see ``corpus.py`` for the file format).

Attacks run through `run_sandboxed` (zygote, locked-down child, parent-side replay) with
tight limits; reward hacks through `evaluate_kernel` on a small task, first case only.
A file marked ``# known:`` is a hole not fixed yet: its test is a strict xfail, so it
fails the day the hole closes and the mark must go.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from sage.bench.evaluate import evaluate_kernel
from sage.bench.tasks import load_task
from sage.npu.sandbox import Limits, run_sandboxed
from tests.security import corpus

INTERNAL = "internal simulator error"
ENTRIES = corpus.entries()
ATTACKS = [e for e in ENTRIES if not e.is_hack]
HACKS = [e for e in ENTRIES if e.is_hack]


def _params(entries):
    return [pytest.param(e, id=e.name, marks=[pytest.mark.xfail(strict=True, reason=e.known)] if e.known else [])
            for e in entries]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    with corpus.world(tmp_path_factory.mktemp("redteam")) as w:
        # One honest run first, so the zygote exists before the snapshot of our descendants.
        run_sandboxed("from sage.npu.ascendc import *\ndef forward(x):\n    return empty_like(x)\n",
                      [corpus.attack_input()], limits=Limits(**corpus.LIMITS))
        w.snapshot()
        yield w


def test_corpus_size_and_headers():
    assert len(ATTACKS) >= 40, f"{len(ATTACKS)} attack kernels"
    assert len(HACKS) >= 12, f"{len(HACKS)} reward hacks"
    for e in ENTRIES:
        allowed = ("error", "incorrect", "impossible", "no-gain") if e.is_hack else ("refused",)
        for alt in e.expect:
            assert alt.split()[0] in allowed, (e.name, alt)
        if e.is_hack:
            assert e.task is not None and e.task.is_file(), (e.name, e.run)


@pytest.mark.parametrize("entry", _params(ATTACKS))
def test_attack_is_refused(entry: corpus.Entry, world: corpus.World):
    source = entry.path.read_text(encoding="utf-8")
    start = time.monotonic()
    run = run_sandboxed(source, [corpus.attack_input()], {"canary": str(world.canary), "port": world.port},
                        filename=entry.path.name, limits=Limits(**corpus.LIMITS),
                        instruction_budget=corpus.INSTRUCTION_BUDGET)
    elapsed = time.monotonic() - start
    damage = world.damage()
    world.snapshot()
    assert not damage, f"{entry.name}: {damage}"
    assert elapsed < corpus.MAX_RUN_SECONDS, f"{entry.name} took {elapsed:.1f} s"
    wanted = entry.error_types("refused")
    got = run.error.type if run.error else None
    assert got in wanted, f"{entry.name}: wanted {sorted(wanted)}, got {got}: {run.error}"
    # A crash of sage itself is not a refusal, whatever type it is reported as.
    assert not run.error.message.startswith(INTERNAL), f"{entry.name}: {run.error.message}"
    # What the kernel can make the parent hold is bounded, whatever it printed or raised.
    assert len(run.printed or "") <= 70 * 1024
    assert len(run.error.message) <= 5000


@pytest.mark.parametrize("entry", _params(HACKS))
def test_reward_hack_gains_nothing(entry: corpus.Entry):
    task = load_task(entry.task)
    start = time.monotonic()
    ev = evaluate_kernel(task, entry.path.read_text(encoding="utf-8"), cases=1, filename=entry.path.name,
                         limits=Limits(**corpus.LIMITS))
    elapsed = time.monotonic() - start
    assert elapsed < corpus.MAX_RUN_SECONDS + 10, f"{entry.name} took {elapsed:.1f} s"
    # Never correct with a speedup: that is the one outcome no hack may reach.
    assert not (ev.correct and ev.speedup is not None and ev.speedup >= 1.0), \
        f"{entry.name}: correct at {ev.speedup:.2f}x"
    error = ev.error.type if ev.error else None
    assert not (ev.error and ev.error.message.startswith(INTERNAL)), f"{entry.name}: {ev.error.message}"
    ok = []
    for alt in entry.expect:
        verb = alt.split()[0]
        if verb == "error":
            ok.append(error in entry.error_types("error"))
        elif verb == "impossible":
            ok.append(error == "ImpossibleResultError")
        elif verb == "incorrect":
            ok.append(ev.status == "incorrect")
        elif verb == "no-gain":
            ok.append(not ev.correct or (ev.speedup or 0.0) < 1.0)
    assert any(ok), f"{entry.name}: wanted {entry.expect}, got {ev.status} {error}: {ev.error or ev.reason}"


def test_non_ascii_names_still_run():
    """Found by under_unicode_names: the parser imports unicodedata for a non-ASCII name, and
    in the locked-down child that import failed (an internal error, not the kernel's)."""
    source = "from sage.npu.ascendc import *\nα = 0.5\ndef forward(x):\n    print(α)\n    return empty_like(x)\n"
    run = run_sandboxed(source, [corpus.attack_input()], limits=Limits(**corpus.LIMITS))
    assert run.error is None, run.error
    assert run.printed == "0.5\n"


def test_the_damage_check_sees_damage(tmp_path):
    """The side-effect check can fail: a changed canary, a file next to it, a connection to
    the listener and a double-forked process left running are each reported."""
    with corpus.world(tmp_path) as w:
        w.snapshot()
        assert w.damage() == []
        w.canary.write_text("changed")
        (w.folder / "dropped.txt").write_text("x")
        socket.create_connection(("127.0.0.1", w.port)).close()
        # a daemon: the intermediate process exits at once, its child is re-parented to us
        subprocess.run([sys.executable, "-c", "import os, time\nif os.fork() == 0:\n    time.sleep(30)\n"],
                       check=True)
        found = w.damage()
        for pid in corpus.descendants(os.getpid()) - w.before:
            os.kill(pid, 9)
        corpus.wait_for_no_new(w.before, seconds=2.0)
    assert any("canary file changed" in f for f in found), found
    assert any("dropped.txt" in f for f in found), found
    assert any("listener got a connection" in f for f in found), found
    assert any("processes still alive" in f for f in found), found
