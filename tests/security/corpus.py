"""The red-team corpus (``tests/security/attacks/``): reading its headers, running a file
through the real path, and telling afterwards whether anything happened outside the run.

Every corpus file starts with comment lines::

    # class: format-string walk               what kind of attack
    # tries: ...                              what it tries, in words
    # run: evaluate tests/fixtures/tasks/relu.py   (reward hacks; attacks run sandboxed)
    # expect: refused SandboxError            the outcome that must happen
    # known: FILE: why it still works         (optional) a hole not fixed yet

Outcomes: ``refused T1|T2`` (a sandboxed run ends with one of these error types), ``error
T1|T2`` (an evaluation ends with one of these), ``incorrect`` (an evaluation judges the
outputs wrong), ``impossible`` (ImpossibleResultError), ``no-gain`` (whatever the verdict,
never correct with a speedup of 1 or more), and ``a|b`` or ``a or b`` for either.

Sandboxed attacks are called as ``forward(x, canary, port)``: the path of a file they must
not change and the port of a TCP listener they must not reach.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
ATTACKS = Path(__file__).resolve().parent / "attacks"
CANARY_TEXT = "the red-team canary: no kernel may change this file\n"
PR_SET_CHILD_SUBREAPER = 36

# Tight limits: every attack must end well inside them.
LIMITS = {"cpu_seconds": 5, "memory_mb": 1024, "wall_seconds": 8}
INSTRUCTION_BUDGET = 200_000   # sandboxed attacks; no attack needs more, an honest kernel here far less
# The longest a sandboxed run may take: the wall limit, the grace before SIGKILL, the parent's
# replay and judging, and slack for a loaded 2-core machine.
MAX_RUN_SECONDS = 20.0


@dataclass(frozen=True)
class Entry:
    path: Path
    klass: str
    tries: str
    expect: tuple[str, ...]          # alternatives, e.g. ("refused SandboxError",) or ("impossible", "incorrect")
    run: str = "sandbox"             # "sandbox" or "evaluate <task file>"
    known: str | None = None

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def is_hack(self) -> bool:
        return self.klass.startswith("reward hack")

    @property
    def task(self) -> Path | None:
        return ROOT / self.run.split(None, 1)[1] if self.run.startswith("evaluate ") else None

    def error_types(self, verb: str) -> set[str]:
        """The error types an outcome ``<verb> T1|T2`` names (empty if none)."""
        out: set[str] = set()
        for alt in self.expect:
            if alt.startswith(verb + " "):
                out.update(alt.split(None, 1)[1].split("|"))
        return out


def entries() -> list[Entry]:
    return [parse(p) for p in sorted(ATTACKS.glob("*.py"))]


def parse(path: Path) -> Entry:
    fields: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("# "):
            break
        key, sep, value = line[2:].partition(": ")
        if sep and key in ("class", "tries", "run", "expect", "known"):
            fields[key] = value.strip()
    missing = {"class", "tries", "expect"} - set(fields)
    if missing:
        raise ValueError(f"{path.name}: header lacks {sorted(missing)}")
    expect = tuple(_alternatives(fields["expect"]))
    return Entry(path, fields["class"], fields["tries"], expect, fields.get("run", "sandbox"), fields.get("known"))


def _alternatives(text: str) -> list[str]:
    """``impossible|incorrect`` and ``incorrect or error A`` are two outcomes each; ``refused
    A|B`` is one (its types are the alternatives)."""
    out = []
    for alt in text.split(" or "):
        words = alt.split()
        out += words[0].split("|") if len(words) == 1 else [alt.strip()]
    return out


def attack_input() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)


# -- side effects ----------------------------------------------------------------------------

@dataclass
class World:
    """What an attack must leave alone: a canary file and its folder, a TCP listener, and the
    set of this process's descendants (this process is a child subreaper while it watches,
    so a daemon that double-forks is re-parented here and still counted)."""

    folder: Path
    canary: Path
    listener: socket.socket
    before: set[int] = field(default_factory=set)

    @property
    def port(self) -> int:
        return self.listener.getsockname()[1]

    def snapshot(self) -> None:
        self.before = descendants(os.getpid())

    def damage(self) -> list[str]:
        """Everything that changed outside the run since `snapshot`, in words (empty: nothing)."""
        found = []
        if self.canary.read_text() != CANARY_TEXT:
            found.append("the canary file changed")
        extra = sorted(p.name for p in self.folder.iterdir() if p != self.canary)
        if extra:
            found.append(f"new files next to the canary: {extra}")
        with contextlib.suppress(BlockingIOError):
            conn, addr = self.listener.accept()
            conn.close()
            found.append(f"the listener got a connection from {addr}")
        new = wait_for_no_new(self.before, seconds=2.0)
        if new:
            found.append(f"processes still alive: {describe(new)}")
        return found


@contextlib.contextmanager
def world(tmp_root: Path):
    folder = tmp_root / "canary-folder"
    folder.mkdir()
    canary = folder / "canary.txt"
    canary.write_text(CANARY_TEXT)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1)
    try:
        yield World(folder, canary, listener)
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0)
        listener.close()


def descendants(root: int) -> set[int]:
    """Live (non-zombie) processes below `root`, from /proc."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: the fields start after the last ')'
        rest = stat[stat.rindex(")") + 2:].split()
        if rest[0] != "Z":
            parent[int(entry)] = int(rest[1])
    out: set[int] = set()
    frontier = [root]
    while frontier:
        p = frontier.pop()
        for child, ppid in parent.items():
            if ppid == p and child not in out:
                out.add(child)
                frontier.append(child)
    return out


def wait_for_no_new(before: set[int], seconds: float) -> set[int]:
    """Descendants not in `before`, after giving exiting ones `seconds` to go (reaping any
    re-parented zombies on the way)."""
    deadline = time.monotonic() + seconds
    while True:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        new = descendants(os.getpid()) - before
        if not new or time.monotonic() > deadline:
            return new
        time.sleep(0.05)


def describe(pids: set[int]) -> str:
    out = []
    for pid in sorted(pids):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            cmd = "?"
        out.append(f"{pid} ({cmd.strip()[:80]})")
    return ", ".join(out)
