"""OS isolation of a kernel child (issue 8, build 4): each escape fails with the errno of the
layer that stops it, nothing changes outside the child's private dir, and the child still
computes. Every test forks: lock_down is never applied to the test process itself."""

from __future__ import annotations

import errno
import os
import resource
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from sage.npu import isolation, landlock, syscalls

from . import attacks
from .attacks import Workspace
from .harness import SINGLE_LAYERS, Outcome, full, run_isolated

pytestmark = pytest.mark.skipif(syscalls.supported() is not None,
                                reason=f"OS isolation needs Linux: {syscalls.supported()}")
IS_ROOT = sys.platform == "linux" and os.geteuid() == 0


@pytest.fixture
def ws() -> Iterator[Workspace]:
    workspace = Workspace.create()
    # A SIGUSR2 reaching the test process is recorded, not fatal: the side-effect check names it.
    previous = signal.signal(signal.SIGUSR2, lambda signum, frame: workspace.signals.append(signum))
    try:
        yield workspace
    finally:
        signal.signal(signal.SIGUSR2, previous)
        workspace.close()


def attempt(ws: Workspace, attack: Callable[[Workspace], Any], setup=full) -> tuple[Outcome, list[str]]:
    before = ws.outside_entries()
    outcome = run_isolated(lambda: attack(ws), str(ws.private), setup)
    return outcome, ws.side_effects(before)


def assert_refused(ws: Workspace, attack: Callable[[Workspace], Any], expected_errno: int) -> None:
    outcome, effects = attempt(ws, attack)
    assert outcome.stage == "run" and outcome.replied, outcome
    assert outcome.errno == expected_errno, (
        f"{attack.__name__}: expected {errno.errorcode[expected_errno]}, got {outcome}")
    assert effects == []


# --- escapes under the full lock_down ------------------------------------------------------

REFUSED = [
    # (attack, errno under lock_down, the layer that answers first)
    (attacks.run_subprocess, errno.EPERM, "seccomp: fork/clone without CLONE_THREAD"),
    (attacks.exec_program, errno.EPERM, "seccomp: execve (Landlock: EACCES, no execute right)"),
    (attacks.fork, errno.EPERM, "seccomp: fork"),
    (attacks.connect_tcp, errno.EPERM, "seccomp: socket (netns: ENETUNREACH, Landlock: EACCES)"),
    (attacks.connect_unix, errno.EPERM, "seccomp: socket"),
    (attacks.write_existing, errno.EACCES, "seccomp: open for write (Landlock, uid: EACCES)"),
    (attacks.write_through_mmap, errno.EACCES, "the kernel: a shared writable map needs a writable fd"),
    (attacks.create_outside, errno.EACCES, "seccomp: O_CREAT (Landlock, uid: EACCES)"),
    (attacks.unlink_outside, errno.EPERM, "seccomp: unlink"),
    (attacks.symlink_outside, errno.EPERM, "seccomp: symlink"),
    (attacks.signal_parent, errno.EPERM, "seccomp: kill of another pid (uid, Landlock ABI 6)"),
    (attacks.signal_process_group, errno.EPERM, "seccomp: kill(0, ...)"),
    (attacks.ptrace_parent, errno.EPERM, "seccomp: ptrace"),
    (attacks.read_parent_memory, errno.EACCES, "Landlock and the uid drop: ptrace access check"),
    (attacks.mount_tmpfs, errno.EPERM, "seccomp: mount"),
    (attacks.unshare_network, errno.EPERM, "seccomp: unshare"),
    (attacks.memfd, errno.EPERM, "seccomp: memfd_create"),
    (attacks.io_uring, errno.EPERM, "seccomp: io_uring_setup"),
    (attacks.clear_parent_death_signal, errno.EPERM, "seccomp: prctl(PR_SET_PDEATHSIG)"),
    (attacks.inject_terminal_input, errno.EPERM, "seccomp: ioctl(TIOCSTI)"),
    (attacks.limit_parent, errno.EPERM, "seccomp: prlimit64 of another pid (uid: EPERM)"),
    (attacks.renice_everyone, errno.EPERM, "seccomp: setpriority"),
    (attacks.system_v_memory, errno.EPERM, "seccomp: shmget"),
    (attacks.clone3, errno.ENOSYS, "seccomp: clone3 (libc falls back to clone)"),
    (attacks.openat2, errno.ENOSYS, "seccomp: openat2 (libc falls back to openat)"),
]


@pytest.mark.parametrize(("attack", "expected", "layer"), REFUSED, ids=[a.__name__ for a, _, _ in REFUSED])
def test_escape_is_refused(ws: Workspace, attack: Callable, expected: int, layer: str) -> None:
    assert_refused(ws, attack, expected)


def test_shell_command_does_not_run(ws: Workspace) -> None:
    outcome, effects = attempt(ws, attacks.run_shell)
    # glibc's system() reports a shell it could not start as exit status 127
    assert outcome.value is not None and os.waitstatus_to_exitcode(outcome.value) == 127, outcome
    assert effects == []


@pytest.mark.skipif(not IS_ROOT, reason="the uid drop needs root")
def test_setuid_root_after_the_drop(ws: Workspace) -> None:
    assert_refused(ws, attacks.setuid_root, errno.EPERM)


@pytest.mark.skipif(syscalls.machine() != "x86_64", reason="x32 and i386 ABIs exist on x86_64 only")
def test_other_abis(ws: Workspace) -> None:
    assert_refused(ws, attacks.x32_call, errno.EPERM)
    unprotected = run_isolated(lambda: attacks.i386_call(ws), str(ws.private), setup=lambda *a: None)
    if not unprotected.replied:
        pytest.skip(f"this kernel has no i386 emulation (int 0x80 gave {unprotected})")
    locked = run_isolated(lambda: attacks.i386_call(ws), str(ws.private))
    assert not locked.replied and locked.signal == signal.SIGSYS, locked


# --- which layer alone stops what (documented in docs/security.md (OS isolation)) ----------------

def _landlock_abi() -> int:
    try:
        return landlock.abi_version()
    except OSError:
        return 0


ABI = _landlock_abi()
STOPPED_BY = {
    # attack: {layer alone: errno, or None when that layer alone does not stop it}
    attacks.write_existing: {"landlock": errno.EACCES, "seccomp": errno.EACCES, "netns": None, "uid": errno.EACCES},
    attacks.create_outside: {"landlock": errno.EACCES, "seccomp": errno.EACCES, "netns": None, "uid": errno.EACCES},
    attacks.create_in_private: {"landlock": None, "seccomp": errno.EACCES, "netns": None, "uid": None},
    attacks.connect_tcp: {"landlock": errno.EACCES if ABI >= 4 else None, "seccomp": errno.EPERM,
                          "netns": errno.ENETUNREACH, "uid": None},
    attacks.exec_program: {"landlock": errno.EACCES, "seccomp": errno.EPERM, "netns": None, "uid": None},
    attacks.fork: {"landlock": None, "seccomp": errno.EPERM, "netns": None, "uid": None},
    attacks.signal_parent: {"landlock": errno.EPERM if ABI >= 6 else None, "seccomp": errno.EPERM,
                            "netns": None, "uid": errno.EPERM},
}
CELLS = [(attack, layer, expected) for attack, row in STOPPED_BY.items() for layer, expected in row.items()]


@pytest.mark.parametrize(("attack", "layer", "expected"), CELLS,
                         ids=[f"{a.__name__}-{layer}" for a, layer, _ in CELLS])
def test_single_layer(ws: Workspace, attack: Callable, layer: str, expected: int | None) -> None:
    if layer == "landlock" and ABI == 0:
        pytest.skip("no Landlock on this kernel")
    if layer in ("uid", "netns") and not IS_ROOT:
        pytest.skip(f"the {layer} layer needs root")
    outcome, effects = attempt(ws, attack, SINGLE_LAYERS[layer])
    assert outcome.stage == "run", outcome
    if expected is None:  # not this layer's job: the attack goes through
        assert outcome.errno is None and outcome.error is None, outcome
    else:
        assert outcome.errno == expected, outcome
        assert effects == []


# --- the child still works -----------------------------------------------------------------

def test_child_still_computes(ws: Workspace) -> None:
    other = os.pipe()
    readable = ws.root / "readable.txt"
    readable.write_text("some input\n")
    readable.chmod(0o644)

    def work() -> dict[str, Any]:
        n = 256
        product = np.ones((n, n)) @ np.full((n, n), 2.0)  # every entry: n * 2
        seen: list[int] = []
        thread = threading.Thread(target=lambda: seen.append(sum(range(1000))))
        thread.start()
        thread.join()
        os.write(other[1], b"through a kept pipe")
        return {"matmul": float(product.min()), "matmul_max": float(product.max()),
                "thread": seen, "read": readable.read_text(), "pid_self_kill": os.kill(os.getpid(), 0)}

    outcome = run_isolated(work, str(ws.private), extra_keep=(other[1],))
    os.close(other[1])
    assert outcome.value == {"matmul": 512.0, "matmul_max": 512.0, "thread": [499500],
                             "read": "some input\n", "pid_self_kill": None}, outcome
    assert os.read(other[0], 100) == b"through a kept pipe"
    os.close(other[0])


def test_state_of_the_locked_down_child(ws: Workspace) -> None:
    def state() -> dict[str, Any]:
        with open("/proc/self/status") as status:
            fields = dict(line.split(":", 1) for line in status.read().splitlines())
        with open("/proc/self/net/dev") as dev:  # the interfaces of the child's network namespace
            interfaces = [line.split(":")[0].strip() for line in dev.read().splitlines()[2:]]
        return {
            "limits": {name: list(resource.getrlimit(getattr(resource, f"RLIMIT_{name}")))
                       for name in ("CPU", "AS", "FSIZE", "NOFILE", "CORE")},
            "uid": fields["Uid"].split(), "gid": fields["Gid"].split(), "groups": fields["Groups"].split(),
            "capabilities": fields["CapEff"].strip(), "no_new_privs": fields["NoNewPrivs"].strip(),
            "seccomp": fields["Seccomp"].strip(), "interfaces": interfaces,
        }

    outcome = run_isolated(state, str(ws.private))
    got = outcome.value
    assert got is not None, outcome
    # the harness asks for 10 s of CPU, 64 GiB of address space, no file growth, 64 descriptors
    assert got["limits"] == {"CPU": [10, 12], "AS": [64 * 2**30] * 2, "FSIZE": [0, 0],
                             "NOFILE": [64, 64], "CORE": [0, 0]}
    assert got["no_new_privs"] == "1" and got["seccomp"] == "2"  # 2: filter mode
    report = isolation.probe()
    if report.layer("uid").active:
        assert got["uid"] == ["65534"] * 4 and got["gid"] == ["65534"] * 4 and got["groups"] == []
        assert int(got["capabilities"], 16) == 0
    if report.layer("netns").active:
        assert got["interfaces"] == ["lo"]


@pytest.mark.skipif(not IS_ROOT, reason="the uid drop needs root")
def test_uid_report_names_the_import_paths_nobody_cannot_read(ws: Workspace) -> None:
    """After the drop, Python cannot import from a directory nobody may not read (the
    interpreter's own stdlib under /root here): the report must say which, so a zygote knows
    to import everything first."""
    folders = [path for path in sys.path if os.path.isdir(path)]  # as root, before the drop

    def unreadable() -> list[str]:
        found = []
        for path in folders:
            try:
                os.listdir(path)
            except PermissionError:
                found.append(path)
        return found

    outcome = run_isolated(unreadable, str(ws.private))
    detail = isolation.probe().layer("uid").detail
    assert outcome.value is not None, outcome
    if outcome.value:
        assert detail.endswith(f"imports from now on cannot read {outcome.value}")
    else:
        assert "cannot read" not in detail


def test_private_dir_is_read_only_under_seccomp(ws: Workspace) -> None:
    """Landlock alone lets the child write its private dir (test_single_layer); the seccomp
    filter cannot see paths, so under the full lock_down no open for writing succeeds."""
    assert_refused(ws, attacks.create_in_private, errno.EACCES)


def test_inherited_descriptors_are_closed(ws: Workspace) -> None:
    leaked = os.open(ws.existing, os.O_RDONLY)
    try:
        outcome = run_isolated(lambda: os.fstat(leaked).st_size, str(ws.private))
    finally:
        os.close(leaked)
    assert outcome.errno == errno.EBADF, outcome


# --- the parent's death ends the child -----------------------------------------------------

def test_kill_of_the_parent_kills_the_locked_down_grandchild(ws: Workspace) -> None:
    read_end, write_end = os.pipe()
    middle = os.fork()
    if middle == 0:  # the parent-to-be-killed: forks the grandchild, says its pid, waits
        try:
            grandchild = os.fork()
            if grandchild == 0:
                full(str(ws.private), [write_end], os.getppid())
                os.write(write_end, b"locked\n")
                while True:
                    time.sleep(1)
            os.write(write_end, f"{grandchild}\n".encode())
            while True:
                time.sleep(1)
        finally:
            os._exit(1)
    os.close(write_end)
    grandchild_pid = None
    try:
        lines = _read_lines(read_end, 2, deadline=time.monotonic() + 10)
        grandchild_pid = int(next(line for line in lines if line != "locked"))
        assert "locked" in lines
        os.kill(middle, signal.SIGKILL)
        os.waitpid(middle, 0)
        deadline = time.monotonic() + 2
        while _alive(grandchild_pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not _alive(grandchild_pid), "the grandchild outlived its parent by 2 s"
    finally:
        os.close(read_end)
        for pid in (middle, grandchild_pid):
            if pid is not None and _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_child_of_a_dead_parent_exits_at_once(ws: Workspace) -> None:
    """The parent died before prctl: no signal will come, so lock_down ends the child itself."""
    wrong_parent = lambda d, keep, parent: full(d, keep, parent + 10**6)  # noqa: E731
    outcome = run_isolated(lambda: "ran", str(ws.private), wrong_parent)
    assert not outcome.replied and os.waitstatus_to_exitcode(outcome.wait_status) == isolation.PARENT_GONE_EXIT


def _read_lines(fd: int, count: int, deadline: float) -> list[str]:
    data = b""
    while data.count(b"\n") < count and time.monotonic() < deadline:
        data += os.read(fd, 100)
    return data.decode().split()


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# --- probe, arguments, cost ----------------------------------------------------------------

def test_probe_reports_every_layer() -> None:
    report = isolation.probe()
    assert [layer.name for layer in report.layers] == list(isolation.LAYERS)
    assert all(layer.detail for layer in report.layers)
    for name in ("pdeathsig", "close_fds", "rlimits", "seccomp"):
        assert report.layer(name).active, report.layer(name)
    assert isolation.probe() is report  # cached
    assert report.describe().startswith("OS isolation: ")


@pytest.mark.parametrize("name", ["netns", "landlock", "uid"])
def test_probe_optional_layer(name: str) -> None:
    layer = isolation.probe().layer(name)
    if not layer.active:
        pytest.skip(f"{name} unavailable here: {layer.detail}")
    assert layer.active


@pytest.mark.parametrize("bad", [
    {"private_dir": "/nonexistent/sage"},
    {"keep_fds": [10**6]},
    {"cpu_seconds": 0},
])
def test_programming_errors_raise_before_any_layer(ws: Workspace, bad: dict[str, Any]) -> None:
    def setup(private_dir: str, keep: list[int], parent: int) -> object:
        args = {"private_dir": private_dir, "keep_fds": keep, "cpu_seconds": 10,
                "address_space_bytes": 2**36, "file_size_bytes": 0, **bad}
        if "keep_fds" in bad:
            args["keep_fds"] = [*keep, *bad["keep_fds"]]
        return isolation.lock_down(**args)

    outcome = run_isolated(lambda: "ran", str(ws.private), setup)
    assert outcome.stage == "setup" and outcome.error is not None, outcome
    assert ("ValueError" in outcome.error) or outcome.errno == errno.EBADF, outcome


def measure_lock_down(private_dir: str, forks: int = 20) -> dict[str, float]:
    """Medians over `forks` children, in seconds: lock_down itself, and a whole fork-to-exit
    round trip with and without it."""
    isolation.probe()  # as a zygote would: it warms what the children inherit
    nothing = lambda d, keep, parent: None  # noqa: E731
    inner, locked, plain = [], [], []
    for _ in range(forks):
        start = time.perf_counter()
        inner.append(run_isolated(lambda: None, private_dir, full).setup_seconds)
        locked.append(time.perf_counter() - start)
        start = time.perf_counter()
        run_isolated(lambda: None, private_dir, nothing)
        plain.append(time.perf_counter() - start)
    return {"lock_down": statistics.median(inner), "round_trip_locked": statistics.median(locked),
            "round_trip_plain": statistics.median(plain)}


def test_cost_of_lock_down(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    cost = measure_lock_down(str(ws.private))
    with capsys.disabled():
        print(f"\nlock_down: {cost['lock_down'] * 1e3:.2f} ms median of 20 children; fork-to-exit "
              f"{cost['round_trip_locked'] * 1e3:.2f} ms with it, {cost['round_trip_plain'] * 1e3:.2f} ms without")
    # A loose budget, far above what it measures, to catch a regression (say, a slow layer)
    assert 0 < cost["lock_down"] < 0.1


def test_simulator_runs_under_lock_down(ws: Workspace) -> None:
    """The simulator (imported and its preset loaded before the fork, as a zygote would)
    computes the example cube matmul in a locked-down child as it does without the lock.
    The preset must be loaded first: where the code lives under a directory only root may
    enter (a checkout under /root), nobody cannot read the preset file after the drop."""
    from pathlib import Path

    from sage.npu.execute import run_kernel_source
    from sage.npu.hardware import load_preset

    preset = load_preset("ascend910b2")

    source = (Path(__file__).parents[2] / "examples" / "kernels" / "matmul.py").read_text()
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((256, 256)).astype(np.float16) for _ in range(2))
    expected = a.astype(np.float32) @ b.astype(np.float32)

    def evaluate() -> dict[str, Any]:
        run = run_kernel_source(source, [a, b], preset=preset)
        assert run.error is None and run.outputs is not None and run.profile is not None, run.error
        got = run.outputs[0].astype(np.float32)
        return {"close": bool(np.allclose(got, expected, rtol=1e-2, atol=5e-2)), "us": run.profile.time_us}

    locked = run_isolated(evaluate, str(ws.private))
    plain = run_isolated(evaluate, str(ws.private), lambda d, keep, parent: None)
    assert locked.value is not None and locked.value["close"], locked
    assert locked.value == plain.value
