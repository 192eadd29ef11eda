"""The README's demo transcript, as `make demo` prints it to a new user at 80 columns.

    .venv/bin/python benchmarks/readme_demo.py            # rewrites the README's demo block

Runs `sage synth --op softmax` and `sage memory inspect` (the two commands of `make demo`)
in a fresh HOME and cache, with COLUMNS=80 and no model configured, and writes what they
print to stdout between the README's `<!-- demo:begin -->` and `<!-- demo:end -->`
markers, so no figure of the transcript is typed by hand.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.suite_summary import write_block  # noqa: E402

BEGIN, END = "<!-- demo:begin -->", "<!-- demo:end -->"
COMMANDS = (["synth", "--op", "softmax"], ["memory", "inspect"])


def transcript() -> str:
    sage = Path(sys.executable).with_name("sage")
    with tempfile.TemporaryDirectory(prefix="sage-demo-") as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_"))}
        env |= {"HOME": home, "COLUMNS": "80", "PYTHONPATH": str(ROOT)}
        parts = []
        for args in COMMANDS:
            run = subprocess.run([str(sage), *args], cwd=home, env=env, capture_output=True, text=True, check=False)
            lines = [line.rstrip() for line in run.stdout.splitlines()]
            parts.append("\n".join([f"$ sage {' '.join(args)}", *lines]).rstrip())
    return "\n\n".join(parts)


def main() -> None:
    block = "```\n" + transcript() + "\n```"
    readme = ROOT / "README.md"
    if not write_block(readme, block, BEGIN, END):
        sys.exit(f"{readme} has no {BEGIN} ... {END} markers")
    print(f"wrote the demo transcript into {readme}")


if __name__ == "__main__":
    main()
