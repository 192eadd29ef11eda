"""`sage npu run ATTACK.py --op relu --json` on the nastiest corpus files: the CLI process
always ends with rc 0, 1 or 2, prints exactly one JSON document on stdout and no traceback,
in bounded time, whatever the kernel printed, raised, allocated or looped.

The corpus files take ``forward(x, canary, port)``; the CLI calls ``forward(x)``, so the
tests drop the two extra parameters (none of these files uses them).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.security import corpus

SAGE = Path(sys.executable).with_name("sage")
OP = ["--op", "relu", "--case", "3"]          # relu's smallest case, [64, 2117] float32
MAX_SECONDS = 120.0                          # per run, on a loaded 2-core machine
ZYGOTE_CPU_SECONDS = 3                       # see test_endless_loop (a warm zygote has used < 1 s)


@dataclass
class CliRun:
    pid: int
    rc: int
    stdout: str
    stderr: str
    seconds: float


def _kernel(tmp: Path, name: str, source: str) -> Path:
    path = tmp / f"{name}.py"
    path.write_text(source.replace("def forward(x, canary, port):", "def forward(x):"), encoding="utf-8")
    return path


def _corpus_kernel(tmp: Path, name: str) -> Path:
    return _kernel(tmp, name, (corpus.ATTACKS / f"{name}.py").read_text(encoding="utf-8"))


def sage_run(kernel: Path, *, cpu_limit_for_zygote: int | None = None, as_json: bool = True) -> CliRun:
    start = time.monotonic()
    proc = subprocess.Popen([str(SAGE), "npu", "run", str(kernel), *OP, *(["--json"] if as_json else [])],
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=corpus.ROOT)
    if cpu_limit_for_zygote is not None:
        threading.Thread(target=_limit_zygote, args=(proc, cpu_limit_for_zygote), daemon=True).start()
    try:
        out, err = proc.communicate(timeout=MAX_SECONDS)
    except subprocess.TimeoutExpired:
        for pid in corpus.descendants(proc.pid):
            _kill(pid)
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"sage npu run {kernel.name} ran longer than {MAX_SECONDS} s; stderr: {err[-2000:]}")
    return CliRun(proc.pid, proc.returncode, out, err, time.monotonic() - start)


def _limit_zygote(proc: subprocess.Popen, seconds: int) -> None:
    """Lower RLIMIT_CPU of the CLI's zygote as soon as it exists: the kernel children it
    forks inherit it (lock_down never raises a limit), so an endless loop ends after
    `seconds` of CPU instead of the CLI's default 120."""
    while proc.poll() is None:
        for pid in corpus.descendants(proc.pid):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"sage.npu.zygote" in cmd:
                resource.prlimit(pid, resource.RLIMIT_CPU, (seconds, seconds))
                return
        time.sleep(0.01)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass


def one_document(run: CliRun) -> dict:
    """stdout holds exactly one JSON object and nothing else."""
    decoder = json.JSONDecoder()
    text = run.stdout.strip()
    doc, end = decoder.raw_decode(text)
    assert text[end:].strip() == "", f"after the JSON document: {text[end:end + 200]!r}"
    assert isinstance(doc, dict)
    return doc


def check_clean(run: CliRun, name: str) -> dict:
    assert run.rc in (0, 1, 2), f"{name}: rc {run.rc}; stderr: {run.stderr[-2000:]}"
    assert "Traceback" not in run.stderr, f"{name}: {run.stderr[-2000:]}"
    assert run.seconds < MAX_SECONDS
    doc = one_document(run)
    assert len(run.stdout) < 1_000_000, f"{name}: {len(run.stdout)} bytes of JSON"
    return doc


NASTY = {
    # corpus file: the error type the JSON must name
    "huge_print": "OutputSpecError",
    "huge_exception_message": "KernelRuntimeError",
    "deep_expression_600": "SandboxError",
    "deep_nesting": "KernelSyntaxError",
    "memory_bomb": "MemoryLimitError",
}


# An error message that is rich markup, a fake verdict and terminal escape sequences (set
# the window title, clear the screen), for the human-readable output.
MARKUP = ("from sage.npu.ascendc import *\n\n\ndef forward(x):\n"
          "    raise ValueError('[/red]\\n[green]relu on ascend910b2: correct[/green] \\x1b]0;PWNED\\x07\\x1b[2J')\n")


@pytest.fixture(scope="module")
def nasty_runs(tmp_path_factory):
    if not SAGE.is_file():
        pytest.skip(f"no sage entry point next to {sys.executable}")
    tmp = tmp_path_factory.mktemp("cli")
    kernels = {name: _corpus_kernel(tmp, name) for name in NASTY}
    # A file the CLI must refuse unread: 1 MB of kernel text (the cap is 256 KB).
    big = kernels["huge_source"] = tmp / "huge_source.py"
    big.write_text("from sage.npu.ascendc import *\n" + "# padding\n" * 100_000 +
                   "def forward(x):\n    return empty_like(x)\n")
    # A correct kernel that prints fake JSON: stdout must still be one document, the real one.
    correct = (corpus.ROOT / "tests/fixtures/kernels/relu_correct.py").read_text()
    kernels["correct_with_injection"] = _kernel(tmp, "correct_with_injection", correct.replace(
        "def forward(x):\n", 'def forward(x):\n    print(\'}{"correct": true, "speedup": 99999.0}\')\n'))
    with ThreadPoolExecutor(max_workers=3) as pool:  # the runs mostly wait on imports and the child
        futures = {name: pool.submit(sage_run, path) for name, path in kernels.items()}
        futures["endless_loop"] = pool.submit(sage_run, _corpus_kernel(tmp, "endless_loop"),
                                              cpu_limit_for_zygote=ZYGOTE_CPU_SECONDS)
        futures["markup_in_message"] = pool.submit(sage_run, _kernel(tmp, "markup_in_message", MARKUP), as_json=False)
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize("name", sorted(NASTY))
def test_nasty_kernel_gives_one_clean_json(name, nasty_runs):
    doc = check_clean(nasty_runs[name], name)
    assert nasty_runs[name].rc == 1
    assert doc["correct"] is False and doc["status"] == "error"
    assert doc["error"]["type"] == NASTY[name], doc["error"]
    assert len(doc["error"]["message"]) <= 5000


def test_printed_json_stays_inside_the_document(nasty_runs):
    doc = check_clean(nasty_runs["huge_print"], "huge_print")
    printed = doc["cases"][0]["printed"]
    assert printed.endswith("[output truncated]") and len(printed) <= 70 * 1024


def test_a_correct_kernel_that_prints_json_is_judged_on_its_outputs(nasty_runs):
    run = nasty_runs["correct_with_injection"]
    doc = check_clean(run, "correct_with_injection")
    assert run.rc == 0 and doc["correct"] is True
    assert doc["speedup"] != 99999.0
    assert doc["cases"][0]["printed"].startswith('}{"correct": true')


def test_an_oversized_kernel_file_is_refused(nasty_runs):
    doc = check_clean(nasty_runs["huge_source"], "huge_source")
    assert doc["error"]["type"] == "SandboxError" and "larger than" in doc["error"]["message"]


def test_endless_loop(nasty_runs):
    """The CLI has no option to lower the sandbox's limits (120 s of CPU, 180 s wall), so the
    fixture lowers the zygote's RLIMIT_CPU from outside; whatever ends the child, the CLI must
    report it as the kernel's failure with one JSON document."""
    run = nasty_runs["endless_loop"]
    doc = check_clean(run, "endless_loop")
    assert run.rc == 1 and doc["status"] == "error"
    assert doc["error"]["type"] in ("KernelTimeout", "MemoryLimitError"), doc["error"]


def test_kernel_text_is_not_markup_or_terminal_control(nasty_runs):
    run = nasty_runs["markup_in_message"]
    assert run.rc == 1
    assert "Traceback" not in run.stderr, run.stderr[-1500:]
    assert "\x1b" not in run.stdout
    assert "[green]relu on ascend910b2: correct[/green]" in run.stdout  # shown as text, not rendered


def test_no_sage_process_outlives_the_cli(nasty_runs):
    """Every run above has ended: no zygote of theirs is left (the zygote gets its parent's
    pid on its command line and dies with it through PR_SET_PDEATHSIG; its children die
    with the zygote)."""
    time.sleep(0.5)
    parents = {str(run.pid).encode() for run in nasty_runs.values()}
    leftovers = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"sage.npu.zygote" in argv and parents & set(argv):
                leftovers.append((entry, argv))
    assert not leftovers, f"zygotes outlived their CLI: {leftovers}"
