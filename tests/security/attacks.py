"""What a hostile kernel would try once it reached the OS, and a workspace to try it in.

Each attack runs in the locked-down child and returns something when it worked; when a
layer stops it, the OSError it raises carries the errno the tests expect. The workspace
lets the test (the parent) tell afterwards whether anything happened outside the child's
private directory: files, connections, signals.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import mmap
import os
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import termios
from dataclasses import dataclass, field
from pathlib import Path

from sage.npu import syscalls

ORIGINAL = b"original bytes of a file the kernel must not change\n"
PTRACE_SEIZE = 0x4206
CLONE_NEWNET = 0x40000000
X32_SYSCALL_BIT = 0x40000000


@dataclass
class Workspace:
    """A world-readable folder of the test's: an existing file, a private dir, two listeners."""

    root: Path
    private: Path
    existing: Path
    unix_path: Path
    tcp: socket.socket
    unix: socket.socket
    signals: list[int] = field(default_factory=list)

    @classmethod
    def create(cls) -> Workspace:
        # Under /tmp and 0755, not pytest's 0700 tmp_path: after the uid drop the child (nobody)
        # must still reach the private dir and read the files, so that only the layers stop it.
        root = Path(tempfile.mkdtemp(prefix="sage-isolation-test-", dir="/tmp"))
        root.chmod(0o755)
        private = root / "private"
        private.mkdir(mode=0o700)
        existing = root / "existing.txt"
        existing.write_bytes(ORIGINAL)
        existing.chmod(0o644)
        tcp = socket.create_server(("127.0.0.1", 0))
        unix = socket.socket(socket.AF_UNIX)
        unix.bind(str(root / "listener.sock"))
        unix.listen()
        for listener in (tcp, unix):
            listener.setblocking(False)
        return cls(root, private, existing, root / "listener.sock", tcp, unix)

    @property
    def tcp_port(self) -> int:
        return self.tcp.getsockname()[1]

    def outside_entries(self) -> set[str]:
        return {p.name for p in self.root.iterdir() if p != self.private}

    def side_effects(self, entries_before: set[str]) -> list[str]:
        """Everything the child changed outside its private dir (empty: nothing)."""
        found = []
        if self.existing.read_bytes() != ORIGINAL:
            found.append(f"{self.existing.name} changed")
        if self.outside_entries() != entries_before:
            found.append(f"files outside the private dir: {sorted(self.outside_entries() ^ entries_before)}")
        for name, listener in (("tcp", self.tcp), ("unix", self.unix)):
            with contextlib.suppress(BlockingIOError):
                listener.accept()[0].close()
                found.append(f"a {name} connection reached the test's listener")
        if self.signals:
            found.append(f"the parent received signals {self.signals}")
        return found

    def close(self) -> None:
        self.tcp.close()
        self.unix.close()
        shutil.rmtree(self.root)


# --- attacks (run in the child) ------------------------------------------------------------

def write_existing(ws: Workspace) -> str:
    with open(ws.existing, "r+b") as f:
        f.write(b"PWNED")
    return "written"


def write_through_mmap(ws: Workspace) -> str:
    # RLIMIT_FSIZE does not apply to pages written through a shared mapping.
    fd = os.open(ws.existing, os.O_RDONLY)
    mapping = mmap.mmap(fd, 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    mapping[:5] = b"PWNED"
    mapping.flush()
    return "written"


def create_outside(ws: Workspace) -> str:
    with open(ws.root / "planted.py", "x") as f:
        f.write("print('planted')\n")
    return "created"


def create_in_private(ws: Workspace) -> str:
    path = ws.private / "scratch.bin"
    path.write_bytes(b"scratch")
    return path.read_bytes().decode()


def unlink_outside(ws: Workspace) -> str:
    os.unlink(ws.existing)
    return "removed"


def symlink_outside(ws: Workspace) -> str:
    os.symlink("/etc/passwd", ws.root / "link")
    return "linked"


def connect_tcp(ws: Workspace) -> str:
    with socket.socket() as s:
        s.settimeout(2)
        s.connect(("127.0.0.1", ws.tcp_port))
    return "connected"


def connect_unix(ws: Workspace) -> str:
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(ws.unix_path))
    return "connected"


def run_shell(ws: Workspace) -> int:
    return os.system(f"touch {ws.root / 'shell-was-here'}")


def run_subprocess(ws: Workspace) -> str:
    subprocess.run(["/bin/touch", str(ws.root / "subprocess-was-here")], check=True)
    return "ran"


def exec_program(ws: Workspace) -> str:
    os.execv("/bin/true", ["true"])  # replaces the child: no reply, exit 0, if it works


def fork(ws: Workspace) -> str:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return "forked"


def signal_parent(ws: Workspace) -> str:
    os.kill(os.getppid(), signal.SIGUSR2)  # the test records any SIGUSR2 it gets
    return "signalled"


def signal_process_group(ws: Workspace) -> str:
    os.kill(0, 0)  # signal 0: only the permission check, so nothing is hit if it is allowed
    return "allowed"


def ptrace_parent(ws: Workspace) -> str:
    # SEIZE does not stop the tracee, and the tracer's exit detaches it: safe if it works.
    syscalls.libc_call("ptrace", PTRACE_SEIZE, os.getppid(), 0, 0)
    return "attached"


def read_parent_memory(ws: Workspace) -> str:
    with open(f"/proc/{os.getppid()}/mem", "rb"):
        return "opened"


def mount_tmpfs(ws: Workspace) -> str:
    syscalls.libc_call("mount", ctypes.addressof(ctypes.create_string_buffer(b"none")),
                       ctypes.addressof(ctypes.create_string_buffer(str(ws.private).encode())),
                       ctypes.addressof(ctypes.create_string_buffer(b"tmpfs")), 0, None)
    return "mounted"


def unshare_network(ws: Workspace) -> str:
    syscalls.libc_call("unshare", CLONE_NEWNET)
    return "unshared"


def memfd(ws: Workspace) -> str:
    os.close(os.memfd_create("anonymous"))
    return "created"


def io_uring(ws: Workspace) -> str:
    params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
    os.close(syscalls.call("io_uring_setup", 8, ctypes.addressof(params)))
    return "ring"


def limit_parent(ws: Workspace) -> str:
    resource.prlimit(os.getppid(), resource.RLIMIT_CPU, (0, 0))  # a sibling's CPU budget, say
    return "limited"


def renice_everyone(ws: Workspace) -> str:
    os.setpriority(os.PRIO_USER, os.getuid(), 19)  # every process of this uid: the siblings
    return "reniced"


def system_v_memory(ws: Workspace) -> str:
    # A segment outlives the process that made it (IPC_PRIVATE, 4 KiB, IPC_CREAT | 0600)
    syscalls.libc_call("shmget", 0, 4096, 0o1000 | 0o600)
    return "created"


def setuid_root(ws: Workspace) -> str:
    os.setuid(0)
    return "root again"


def clear_parent_death_signal(ws: Workspace) -> str:
    syscalls.prctl(1, 0)  # PR_SET_PDEATHSIG, 0
    return "cleared"


def inject_terminal_input(ws: Workspace) -> str:
    fcntl.ioctl(0, termios.TIOCSTI, b"x")
    return "injected"


def x32_call(ws: Workspace) -> int:
    return syscalls.libc_call("syscall", X32_SYSCALL_BIT | 39)  # getpid through the x32 ABI


def clone3(ws: Workspace) -> int:
    return syscalls.call("clone3", None, 0)


def openat2(ws: Workspace) -> int:
    return syscalls.call("openat2", -100, None, None, 0)


def i386_call(ws: Workspace) -> int:
    """getpid through int 0x80, the i386 ABI, from code mapped at run time."""
    code = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])  # mov eax, 20; int 0x80; ret
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    return ctypes.CFUNCTYPE(ctypes.c_int)(address)()
