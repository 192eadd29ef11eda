"""The zygote: a clean process that forks the sandboxed kernel children.

Kernel children must never be forked from a process that held anything worth stealing:
the evaluator holds the reference outputs, and a fork copies the whole address space. So
each process that evaluates kernels starts one zygote with a fresh interpreter
(``python -m sage.npu.zygote``), which imports the simulator once and then does nothing but
fork children on request. A child inherits only the zygote's memory: the simulator, the
presets, and the job it was forked for (kernel text and inputs, read from a memory file
the parent passed over the control socket).

Protocol (a SOCK_SEQPACKET socket pair, one JSON object per message): the parent sends
``{"op": "run"}`` with two descriptors (the job file and the write end of the reply
pipe) and gets ``{"pid": N}``; later ``{"op": "wait", "pid": N}`` gets
``{"status": S, "cpu": seconds}``. The zygote dies with its parent (parent-death
signal), and its children with it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading

MAX_MESSAGE = 4096
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4


class ZygoteError(RuntimeError):
    """The zygote could not be started or stopped answering."""


class Zygote:
    """The parent's handle on its zygote (one per process, started on first use)."""

    _instance: Zygote | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = parent_sock
        self.owner = os.getpid()
        _not_dumpable()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "sage.npu.zygote", str(child_sock.fileno()), str(os.getpid())],
                pass_fds=(child_sock.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, close_fds=True, env=_child_environment())
        finally:
            child_sock.close()

    @classmethod
    def get(cls) -> Zygote:
        with cls._lock:
            z = cls._instance
            if z is None or z.owner != os.getpid() or z.proc.poll() is not None:
                if z is not None and z.owner == os.getpid():
                    z.close()
                z = cls._instance = Zygote()
            return z

    def start(self, job_fd: int, reply_fd: int) -> int:
        """Fork a child for the job in `job_fd`, replying on `reply_fd`; its pid."""
        return int(self._ask({"op": "run"}, [job_fd, reply_fd])["pid"])

    def wait(self, pid: int) -> tuple[int, float]:
        """Reap child `pid`: its wait status and CPU seconds."""
        reply = self._ask({"op": "wait", "pid": pid})
        return int(reply["status"]), float(reply["cpu"])

    def _ask(self, message: dict, fds: list[int] | None = None) -> dict:
        data = json.dumps(message).encode()
        try:
            if fds:
                socket.send_fds(self.sock, [data], fds)
            else:
                self.sock.send(data)
            reply = self.sock.recv(MAX_MESSAGE)
        except OSError as exc:
            raise ZygoteError(f"the sandbox zygote stopped answering: {exc}") from None
        if not reply:
            raise ZygoteError("the sandbox zygote is gone")
        return json.loads(reply)

    def close(self) -> None:
        self.sock.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def _child_environment() -> dict[str, str]:
    """The zygote's environment: what Python needs, no secrets (API keys stay out), and one
    BLAS thread (a second one per child only costs time on a 2-core machine)."""
    env = {k: v for k, v in os.environ.items() if k in _KEEP_ENV}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    return env


_KEEP_ENV = ("PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR")


def _not_dumpable() -> None:
    """This process holds reference outputs: where children keep this uid (sage not run as
    root), make its memory unreadable to them through /proc."""
    import ctypes

    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0)


# -- the zygote process ---------------------------------------------------------------------

def main(argv: list[str]) -> None:
    sock = socket.socket(fileno=int(argv[0]))
    parent = int(argv[1])
    _die_with_parent(parent)
    # Everything a child needs is imported here, once, before any job exists.
    from sage.npu import sandbox_child

    sandbox_child.warm_up()
    dirs: dict[int, str] = {}
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 4)
        except OSError:
            break
        if not data:
            break
        request = json.loads(data)
        if request["op"] == "run":
            private_dir = tempfile.mkdtemp(prefix="sage-kernel-")
            pid = os.fork()
            if pid == 0:
                sock.close()
                sandbox_child.child_main(fds[0], fds[1], private_dir, os.getppid())  # never returns
            for fd in fds:
                os.close(fd)
            dirs[pid] = private_dir
            sock.send(json.dumps({"pid": pid}).encode())
        elif request["op"] == "wait":
            pid = int(request["pid"])
            try:
                _, status, usage = os.wait4(pid, 0)
                cpu = usage.ru_utime + usage.ru_stime
            except ChildProcessError:
                status, cpu = -1, 0.0
            shutil.rmtree(dirs.pop(pid, ""), ignore_errors=True)
            sock.send(json.dumps({"status": status, "cpu": cpu}).encode())
    for pid in list(dirs):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        shutil.rmtree(dirs.pop(pid), ignore_errors=True)


def _die_with_parent(parent: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before prctl: no signal will ever come
        os._exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
