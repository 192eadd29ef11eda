"""`sage npu run` on a kernel that prints and raises the red team's strings (a lone
surrogate, escape sequences that retitle and clear the terminal, a right-to-left override,
a zero-width space, a markdown beacon, an HTML tag, rich markup drawing a fake verdict, a
newline starting a fake result line): the CLI ends with rc 1, one clean error line, no
traceback, and shows every one of them as inert text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SAGE = Path(sys.executable).with_name("sage")
OP = ["--op", "relu", "--case", "3"]                   # relu's smallest case

# Kernel source text: the escapes are Python's, so the kernel builds the real characters.
HOSTILE = (r"lone \ud800 esc \x1b]0;PWNED\x07\x1b[2J rlo \u202e zw \u200b "
           r"![beacon](http://a.example/b.png) <img src=x onerror=alert(1)> "
           r"[bold red]STATUS: correct 99.0x[/] :smile:\nrelu on ascend910b2: correct")
KERNEL = f"""from sage.npu.ascendc import *

MESSAGE = '{HOSTILE}'


def forward(x):
    print(MESSAGE)
    raise ValueError(MESSAGE)
"""
RAW = ["\x1b", "\x07", "\u202e", "\u200b", "\ud800"]     # none of these may reach a terminal or a file


def _run(kernel: Path, *flags: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run([str(SAGE), "npu", "run", str(kernel), *OP, *flags], capture_output=True, env=env,
                          timeout=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    if not SAGE.is_file():
        pytest.skip(f"no sage entry point next to {sys.executable}")
    kernel = tmp_path_factory.mktemp("hostile") / "hostile.py"
    kernel.write_text(KERNEL, encoding="utf-8")
    return {"text": _run(kernel, "--verbose"), "json": _run(kernel, "--json")}


def test_the_text_output_is_one_clean_error_line(runs):
    run = runs["text"]
    out, err = run.stdout.decode("utf-8"), run.stderr.decode("utf-8")   # strict: valid UTF-8 throughout
    assert run.returncode == 1, err[-2000:]
    assert "Traceback" not in err and "UnicodeEncodeError" not in err
    for ch in RAW:
        assert ch not in out and ch not in err, repr(ch)
    errors = [line for line in out.splitlines() if line.startswith("KernelRuntimeError")]
    assert len(errors) == 1, out
    # The fake verdict never starts a line of its own: the message is one line (wrapped at 80
    # columns with a hanging indent, not broken at its newline), and the real verdict is "error".
    assert not any(line.startswith("relu on ascend910b2: correct") for line in out.splitlines())
    assert "relu on ascend910b2 (seed 0): error" in out
    flat = " ".join(out.split())
    assert "\\x1b]0;PWNED\\x07\\x1b[2J" in flat and "\\u202e" in flat and "\\u200b" in flat and "\ufffd" in flat
    assert "[bold red]STATUS: correct 99.0x[/] :smile:" in flat          # markup and emoji codes shown as text


def test_what_the_kernel_printed_is_shown_escaped(runs):
    out = runs["text"].stdout.decode("utf-8")
    printed = out.split("printed by the kernel on case 3:", 1)[1]
    # Indented, wrapped or not: a printed "relu on ascend910b2: correct" never starts a line.
    assert all(line.startswith("  ") for line in printed.strip("\n").splitlines())
    flat = " ".join(printed.split())
    assert "\\x1b[2J" in flat and "[bold red]STATUS" in flat and "<img src=x onerror=alert(1)>" in flat


def test_the_json_output_is_one_valid_utf8_document(runs):
    run = runs["json"]
    assert run.returncode == 1 and b"Traceback" not in run.stderr
    text = run.stdout.decode("utf-8")
    doc = json.loads(text)
    message = doc["error"]["message"]
    assert doc["status"] == "error" and doc["error"]["type"] == "KernelRuntimeError"
    for ch in RAW:
        assert ch not in message and ch not in doc["printed"]["3"]
    assert "\ufffd" in message and "\\u202e" in message and "\\x1b" in message
    assert "\\ud800" not in text              # no lone surrogate escaped into the JSON either
