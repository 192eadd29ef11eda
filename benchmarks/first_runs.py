"""What a new user waits for: a cold `sage ops list`, and `sage bench --reference-only` over a
public folder (MultiKernelBench's npukernelbench_level1 by default), with the size of what
it writes.

    .venv/bin/python benchmarks/first_runs.py --checkout /tmp/mkb                  # print the figures
    .venv/bin/python benchmarks/first_runs.py --checkout /tmp/mkb --doc docs/performance.md

Each command runs as a user runs it: the `sage` next to this Python, a fresh HOME and an
empty SAGE_CACHE_DIR, COLUMNS=80, stdout and stderr to files. The wall time is the machine's
and its load's (`os.getloadavg()` before and after is reported beside it); the issue's
targets are a cold `sage ops list` under 15 s, and the level-1 reference alone under 2
minutes on 2 cores with results.jsonl under 20 MB and no row above 1 MB.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.suite_summary import place_block  # noqa: E402

BEGIN, END = "<!-- first-runs:begin -->", "<!-- first-runs:end -->"


def timed(args: list[str], home: Path) -> tuple[float, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_"))}
    env |= {"HOME": str(home), "SAGE_CACHE_DIR": str(home / "cache"), "COLUMNS": "80", "PYTHONPATH": str(ROOT)}
    sage = Path(sys.executable).with_name("sage")
    began = time.perf_counter()
    with open(home / "stdout", "w") as out, open(home / "stderr", "w") as err:
        code = subprocess.run([str(sage), *args], cwd=home, env=env, stdout=out, stderr=err, check=False).returncode
    return time.perf_counter() - began, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, required=True, help="a MultiKernelBench checkout (at 460a972)")
    parser.add_argument("--folder", default="npukernelbench_level1")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--doc", type=Path, default=None)
    args = parser.parse_args()
    lines = []
    with tempfile.TemporaryDirectory(prefix="sage-first-") as tmp:
        home = Path(tmp)
        load = os.getloadavg()[0]
        wall, code = timed(["ops", "list"], home)
        lines.append(f"- `sage ops list`, cold (fresh HOME, empty cache): {wall:.1f} s (exit {code}; load "
                     f"{load:.1f} before, {os.getloadavg()[0]:.1f} after)")
        folder = args.checkout / "reference" / args.folder
        out = home / "run"
        load = os.getloadavg()[0]
        wall, code = timed(["bench", str(folder), "--reference-only", "--workers", str(args.workers),
                            "--out", str(out)], home)
        results = out / "results.jsonl"
        rows = results.read_text(encoding="utf-8").splitlines() if results.exists() else []
        size = results.stat().st_size if results.exists() else 0
        lines.append(f"- `sage bench reference/{args.folder} --reference-only --workers {args.workers}`: "
                     f"{wall:.0f} s (exit {code}; load {load:.1f} before, {os.getloadavg()[0]:.1f} after), "
                     f"{len(rows)} rows, results.jsonl {size / 1e6:.2f} MB, the largest row "
                     f"{max((len(r) for r in rows), default=0) / 1e3:.0f} kB")
    text = ("First runs, as a new user meets them (`python benchmarks/first_runs.py --checkout CHECKOUT`, "
            "CHECKOUT a MultiKernelBench checkout at 460a972; wall times on this machine under its load):\n\n"
            + "\n".join(lines))
    print(text)
    if args.doc is not None:
        place_block(args.doc, text, BEGIN, END)
        print(f"wrote the first-runs block of {args.doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
