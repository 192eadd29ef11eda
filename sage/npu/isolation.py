"""OS isolation of a kernel child, as defence in depth behind the restricted language.

`lock_down` is called once, in a freshly forked child, after every import and before any
untrusted code. It applies seven layers, each enough alone for part of what a hostile kernel
might try, and reports which took hold. A layer this machine cannot apply (another OS, no
privilege, an old kernel) is reported with the reason and the others still apply; only a
programming error (bad arguments) raises. `probe` tells in advance what a child would get.

What each layer stops, and what none of them stops: docs/security.md (OS isolation).
"""

from __future__ import annotations

import errno
import functools
import math
import os
import resource
import select
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator, Sequence

from pydantic import BaseModel

from sage.npu import landlock, seccomp_filter, syscalls

LAYERS = ("pdeathsig", "close_fds", "netns", "landlock", "uid", "rlimits", "seccomp")
UNPRIVILEGED_ID = 65534  # nobody / nogroup
PARENT_GONE_EXIT = 137  # as if the parent-death SIGKILL had come (128 + 9)
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
PROBE_TIMEOUT_SECONDS = 10.0


class LayerStatus(BaseModel):
    name: str
    active: bool
    detail: str


class IsolationReport(BaseModel):
    layers: list[LayerStatus]

    def layer(self, name: str) -> LayerStatus:
        by_name = {layer.name: layer for layer in self.layers}
        if name not in by_name:
            raise KeyError(f"no layer {name!r}: the layers are {list(by_name)}")
        return by_name[name]

    def describe(self) -> str:
        """One line for a run's output: what is active, and why the rest is not."""
        active = [layer.name for layer in self.layers if layer.active]
        missing = [f"{layer.name} ({layer.detail})" for layer in self.layers if not layer.active]
        text = f"OS isolation: {', '.join(active) or 'none'} active"
        return text + (f"; unavailable: {'; '.join(missing)}" if missing else "")


def lock_down(*, private_dir: str, keep_fds: Sequence[int], cpu_seconds: float,
              address_space_bytes: int, file_size_bytes: int, max_open_files: int = 64,
              expected_parent: int | None = None) -> IsolationReport:
    """Lock the calling process down for good. Call it in a freshly forked child only."""
    keep = _checked_arguments(private_dir, keep_fds, cpu_seconds, address_space_bytes,
                              file_size_bytes, max_open_files)
    if sys.platform != "linux":
        return _unavailable(f"not Linux ({sys.platform})")
    others = _other_threads()
    return IsolationReport(layers=[
        # First, so that a parent killed during the rest of lock_down takes this child along.
        arm_parent_death_signal(expected_parent),
        # Before anything else can use what the parent had open (databases, sockets, logs).
        close_inherited_fds(keep),
        # Needs CAP_SYS_ADMIN: before the uid drop.
        enter_network_namespace(others),
        # Before the uid drop too: the rules open "/" and private_dir, which a root-owned
        # private_dir would refuse to nobody.
        restrict_file_system(private_dir, others),
        drop_privileges(private_dir, expected_parent),
        # After the drop, so the kernel's code lacks CAP_SYS_RESOURCE to raise them again.
        apply_rlimits(cpu_seconds, address_space_bytes, file_size_bytes, max_open_files),
        # Last: it forbids setuid, unshare and prctl(PR_SET_PDEATHSIG) that the layers above use.
        install_seccomp(),
    ])


@functools.cache
def probe() -> IsolationReport:
    """What `lock_down` gets on this machine, found in a throwaway child; cached per process.
    A zygote should call it before forking kernel children: it also prepares what each
    child's lock_down would otherwise build anew."""
    if sys.platform != "linux":
        return _unavailable(f"not Linux ({sys.platform})")
    _warm_caches()
    with tempfile.TemporaryDirectory(prefix="sage-isolation-probe-") as private_dir:
        read_end, write_end = os.pipe()
        try:
            return _probe_child(private_dir, read_end, write_end)
        finally:
            os.close(read_end)


def _warm_caches() -> None:
    """Load libc and assemble the seccomp program here, so children forked later inherit them."""
    syscalls.libc()
    if syscalls.supported() is None:
        seccomp_filter.template(syscalls.machine())


def _probe_child(private_dir: str, read_end: int, write_end: int) -> IsolationReport:
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(write_end)
        return _unavailable(f"cannot fork a child to probe: {exc.strerror}")
    if pid == 0:
        _probe_in_child(private_dir, write_end, parent)
    os.close(write_end)
    reply = read_until_eof(read_end, time.monotonic() + PROBE_TIMEOUT_SECONDS)
    if reply is None:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if not reply:
        return _unavailable(f"the probe child gave no report (wait status {status})")
    return IsolationReport.model_validate_json(reply)


def _probe_in_child(private_dir: str, write_end: int, parent: int) -> None:
    """Never returns: the child must not run the caller's code after its fork."""
    try:
        with open("/proc/self/statm") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        report = lock_down(private_dir=private_dir, keep_fds=[write_end], cpu_seconds=10,
                           address_space_bytes=mapped + 2**30, file_size_bytes=0,
                           expected_parent=parent)
        os.write(write_end, report.model_dump_json().encode())
        os._exit(0)
    except BaseException:  # a bug in lock_down: show it, and end the child either way
        traceback.print_exc()
        os._exit(1)


def read_until_eof(fd: int, deadline: float, limit: int | None = None) -> bytes | None:
    """Everything written to `fd` until EOF; None at the deadline or past `limit` bytes."""
    chunks = []
    size = 0
    while True:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if limit is not None and size > limit:
            return None
        chunks.append(chunk)


def _unavailable(reason: str) -> IsolationReport:
    return IsolationReport(layers=[LayerStatus(name=n, active=False, detail=reason) for n in LAYERS])


def _checked_arguments(private_dir: str, keep_fds: Sequence[int], cpu_seconds: float,
                       address_space_bytes: int, file_size_bytes: int, max_open_files: int) -> set[int]:
    if not os.path.isdir(private_dir):
        raise ValueError(f"private_dir {private_dir!r} is not a directory")
    if cpu_seconds <= 0 or address_space_bytes <= 0 or file_size_bytes < 0 or max_open_files < 3:
        raise ValueError("limits must be positive (file_size_bytes may be 0; max_open_files >= 3)")
    keep = set(keep_fds)
    for fd in keep:
        if not isinstance(fd, int) or fd < 0:
            raise ValueError(f"keep_fds holds {fd!r}, not a descriptor number")
        os.fstat(fd)  # a descriptor that is not open is the caller's mistake: OSError(EBADF)
    return keep


def _other_threads() -> int:
    try:
        return len(os.listdir("/proc/self/task")) - 1
    except FileNotFoundError:  # /proc not mounted
        return 0


def _thread_note(others: int) -> str:
    # Landlock and unshare act on the calling thread (and the threads it starts later).
    return f"; {others} thread(s) already running are not covered" if others else ""


# --- the layers, each usable alone (the tests show which layer stops what) -----------------

def arm_parent_death_signal(expected_parent: int | None) -> LayerStatus:
    try:
        syscalls.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError as exc:
        return LayerStatus(name="pdeathsig", active=False, detail=f"prctl refused: {exc.strerror}")
    if expected_parent is None:
        return LayerStatus(name="pdeathsig", active=True,
                           detail="SIGKILL when the parent dies (no expected_parent: a parent "
                                  "that died before this call goes unnoticed)")
    # The parent may have died between fork and prctl: then no signal will ever come.
    if os.getppid() != expected_parent:
        os._exit(PARENT_GONE_EXIT)
    return LayerStatus(name="pdeathsig", active=True,
                       detail=f"SIGKILL when the parent ({expected_parent}) dies")


def close_inherited_fds(keep: set[int]) -> LayerStatus:
    try:
        top = max(int(name) for name in os.listdir("/proc/self/fd")) + 1
    except FileNotFoundError:  # no /proc: the soft limit bounds every open descriptor
        top = min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1 << 20)
    bounds = sorted({2, *keep})
    for low, high in zip(bounds, [*bounds[1:], max(top, bounds[-1] + 1)], strict=True):
        os.closerange(low + 1, high)
    return LayerStatus(name="close_fds", active=True,
                       detail=f"every descriptor closed but 0, 1, 2 and {sorted(keep)}")


def enter_network_namespace(others: int = 0) -> LayerStatus:
    try:
        syscalls.libc_call("unshare", CLONE_NEWNET)
    except OSError as exc:
        why = "needs CAP_SYS_ADMIN" if exc.errno == errno.EPERM else exc.strerror
        return LayerStatus(name="netns", active=False,
                           detail=f"unshare(CLONE_NEWNET) refused: {why} (uid {os.getuid()})")
    return LayerStatus(name="netns", active=True,
                       detail="new network namespace: only a loopback that is down" + _thread_note(others))


def restrict_file_system(private_dir: str, others: int = 0) -> LayerStatus:
    if (why_not := syscalls.supported()) is not None:
        return LayerStatus(name="landlock", active=False, detail=why_not)
    try:
        detail = landlock.restrict_self(private_dir)
    except OSError as exc:
        why = {errno.ENOSYS: "kernel has no Landlock (ENOSYS)",
               errno.EOPNOTSUPP: "Landlock disabled at boot (EOPNOTSUPP)"}
        return LayerStatus(name="landlock", active=False,
                           detail=why.get(exc.errno, f"Landlock refused: {exc.strerror}"))
    return LayerStatus(name="landlock", active=True, detail=detail + _thread_note(others))


def drop_privileges(private_dir: str, expected_parent: int | None) -> LayerStatus:
    if os.geteuid() != 0:
        return LayerStatus(name="uid", active=False,
                           detail=f"not root: stays uid {os.getuid()}, the parent's own uid")
    # Python finds modules it has not imported yet on these paths; nobody may not be able to.
    hidden = [p for p in sys.path if os.path.isdir(p) and not _world_readable(p)]
    try:
        # Landlock lets the child write in private_dir; as nobody it also needs to own it.
        os.chown(private_dir, UNPRIVILEGED_ID, UNPRIVILEGED_ID)
        os.setgroups([])
        os.setresgid(UNPRIVILEGED_ID, UNPRIVILEGED_ID, UNPRIVILEGED_ID)
        os.setresuid(UNPRIVILEGED_ID, UNPRIVILEGED_ID, UNPRIVILEGED_ID)  # drops every capability
    except OSError as exc:
        return LayerStatus(name="uid", active=os.geteuid() != 0,
                           detail=f"dropping to {UNPRIVILEGED_ID} failed: {exc}")
    # The kernel clears the parent-death signal when the uid changes: arm it again.
    rearmed = arm_parent_death_signal(expected_parent)
    # Other children run as nobody too: keep them out of this one's /proc files and memory.
    syscalls.prctl(PR_SET_DUMPABLE, 0)
    return LayerStatus(name="uid", active=True,
                       detail=f"uid/gid {UNPRIVILEGED_ID} (nobody), no supplementary groups, no "
                              f"capabilities, not dumpable; parent-death signal re-armed: {rearmed.active}"
                              + (f"; imports from now on cannot read {hidden}" if hidden else ""))


def _world_readable(path: str) -> bool:
    """Whether nobody (neither owner nor group) may list `path` and reach it from /."""
    path = os.path.realpath(path)
    ancestors = [path, *(p for p in _parents(path))]
    return bool(os.stat(path).st_mode & 0o004) and all(os.stat(p).st_mode & 0o001 for p in ancestors)


def _parents(path: str) -> Iterator[str]:
    while (parent := os.path.dirname(path)) != path:
        yield parent
        path = parent


def apply_rlimits(cpu_seconds: float, address_space_bytes: int, file_size_bytes: int,
                  max_open_files: int) -> LayerStatus:
    cpu = max(1, math.ceil(cpu_seconds))
    # (name, resource, soft, hard). The soft CPU limit sends SIGXCPU; the hard one, 2 s later, kills.
    # RLIMIT_NPROC is left alone: it counts threads too, and every child runs as nobody, so
    # 0 would stop numpy's threads; the seccomp filter stops new processes instead.
    limits = (("cpu", resource.RLIMIT_CPU, cpu, cpu + 2),
              ("as", resource.RLIMIT_AS, address_space_bytes, address_space_bytes),
              ("fsize", resource.RLIMIT_FSIZE, file_size_bytes, file_size_bytes),
              ("nofile", resource.RLIMIT_NOFILE, max_open_files, max_open_files),
              ("core", resource.RLIMIT_CORE, 0, 0))
    applied, refused = [], []
    for name, which, soft, hard in limits:
        inherited = resource.getrlimit(which)[1]
        if inherited != resource.RLIM_INFINITY:  # never raise a limit, only lower it
            soft, hard = min(soft, inherited), min(hard, inherited)
        try:
            resource.setrlimit(which, (soft, hard))
            applied.append(f"{name}={soft}/{hard}")
        except (OSError, ValueError) as exc:
            refused.append(f"{name} ({exc})")
    detail = " ".join(applied) + ("; refused: " + ", ".join(refused) if refused else "")
    return LayerStatus(name="rlimits", active=not refused, detail=detail)


def install_seccomp() -> LayerStatus:
    try:
        detail = seccomp_filter.install(own_pid=os.getpid())
    except OSError as exc:
        return LayerStatus(name="seccomp", active=False, detail=f"the kernel refused the filter: {exc.strerror}")
    except RuntimeError as exc:
        return LayerStatus(name="seccomp", active=False, detail=str(exc))
    return LayerStatus(name="seccomp", active=True, detail=detail)
