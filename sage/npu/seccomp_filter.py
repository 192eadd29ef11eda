"""The seccomp-BPF filter of a kernel child: which system calls fail, and how, as a table.

Why hand-assembled BPF rather than a library: no Python binding of libseccomp is well kept
on PyPI (pyseccomp's last release is from 2021; libseccomp's own bindings ship with the
distribution for the system Python, not for a venv), and the filter needs only one shape of
program: check the architecture, then one short block per denied system call. That takes a
table of numbers (`sage.npu.syscalls`, copied from the kernel's tables and checked against
the installed headers by the tests), the rules below, and a 40-line assembler.

Everything not named in RULES is allowed: the child runs Python, numpy and the simulator,
whose system calls are many and change between versions, while what a hostile kernel needs
to escape is a short, stable list. Arguments are compared on their low 32 bits only, which is
what the kernel itself reads for these int/unsigned-int arguments (open flags, clone flags
through lower_32_bits(), pids, ioctl commands, prctl options).

Calls made from the kernel's ABI of another architecture (int 0x80 on x86_64) kill the
process; x32 calls (bit 30 of the number on x86_64) fail with EPERM.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import struct
from dataclasses import dataclass

from sage.npu import syscalls

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_SYSCALL_BIT = 0x40000000

SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1  # every thread of the process gets the filter, not only the caller
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
OFFSET_NR, OFFSET_ARCH, OFFSET_ARGS = 0, 4, 16

# Flags the rules test (include/uapi/asm-generic/fcntl.h, linux/sched.h, asm-generic/ioctls.h)
OPEN_WRITE_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000  # O_WRONLY O_RDWR O_CREAT O_TRUNC O_APPEND
CLONE_THREAD = 0x00010000
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
CLONE_NEW_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
TIOCSTI, TIOCLINUX = 0x5412, 0x541C  # push bytes into a terminal's input / console control


# --- rules ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Deny:
    """The call always fails with `errno`."""
    err: int = errno.EPERM


@dataclass(frozen=True)
class DenyIfAnyBit:
    """Fails with `errno` when argument `arg` has any bit of `mask` set."""
    arg: int
    mask: int
    err: int = errno.EPERM


@dataclass(frozen=True)
class DenyIfEquals:
    """Fails with `errno` when argument `arg` is one of `values`."""
    arg: int
    values: tuple[int, ...]
    err: int = errno.EPERM


@dataclass(frozen=True)
class OnlyOwnProcess:
    """Allowed only when argument `arg` is this process's pid (or 0, "myself", if `or_zero`)."""
    arg: int
    or_zero: bool = False


@dataclass(frozen=True)
class OnlyThreads:
    """clone: allowed for a thread of this process (CLONE_THREAD, no new namespace)."""


Rule = Deny | DenyIfAnyBit | DenyIfEquals | OnlyOwnProcess | OnlyThreads

_FILE_CHANGES = (
    "truncate", "rename", "renameat", "renameat2", "unlink", "unlinkat", "mkdir", "mkdirat",
    "rmdir", "link", "linkat", "symlink", "symlinkat", "chmod", "fchmod", "fchmodat",
    "fchmodat2", "chown", "fchown", "lchown", "fchownat", "mknod", "mknodat", "utime", "utimes",
    "futimesat", "utimensat", "setxattr", "lsetxattr", "fsetxattr", "removexattr",
    "lremovexattr", "fremovexattr", "setxattrat", "removexattrat", "file_setattr",
)
_ALWAYS_DENIED = (
    # the child talks only through descriptors it inherited
    "socket", "socketpair",
    # no new programs, no new processes
    "execve", "execveat", "fork", "vfork",
    # no reaching into other processes
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_open", "pidfd_getfd",
    "pidfd_send_signal", "process_madvise", "kcmp",
    # no changing what the file system or the namespaces look like
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree", "move_mount",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "open_tree_attr",
    # anonymous files, io_uring (its requests are not seen by seccomp), kernel programs
    "memfd_create", "memfd_secret", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
    # credentials stay as lock_down left them
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid",
    "setfsgid", "setgroups", "capset",
    # the machine itself
    "reboot", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "iopl", "ioperm", "personality", "swapon", "swapoff", "acct", "settimeofday",
    "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "quotactl",
    "quotactl_fd", "syslog", "vhangup", "fanotify_init", "uselib", "lookup_dcookie",
    "name_to_handle_at",
    # System V IPC and message queues outlive the process: no residue, no reaching others'
    "shmget", "shmat", "semget", "msgget", "mq_open", "mq_unlink",
    # other children run as nobody too: no renicing them (PRIO_USER reaches them all)
    "setpriority", "ioprio_set",
    *_FILE_CHANGES,
)

RULES: dict[str, Rule] = {
    **{name: Deny() for name in _ALWAYS_DENIED},
    # opens for reading stay; anything that could write, create or truncate does not
    "open": DenyIfAnyBit(arg=1, mask=OPEN_WRITE_FLAGS, err=errno.EACCES),
    "openat": DenyIfAnyBit(arg=2, mask=OPEN_WRITE_FLAGS, err=errno.EACCES),
    "creat": Deny(errno.EACCES),
    "open_by_handle_at": Deny(errno.EACCES),
    # openat2 passes its flags in a struct the filter cannot read: ENOSYS makes libc use openat
    "openat2": Deny(errno.ENOSYS),
    # clone3 likewise; glibc's pthread_create falls back to clone on ENOSYS
    "clone3": Deny(errno.ENOSYS),
    "clone": OnlyThreads(),
    "kill": OnlyOwnProcess(arg=0),
    "tkill": OnlyOwnProcess(arg=0),
    "tgkill": OnlyOwnProcess(arg=0),
    "rt_sigqueueinfo": OnlyOwnProcess(arg=0),
    "rt_tgsigqueueinfo": OnlyOwnProcess(arg=0),
    # limits of this process only: a sibling running as nobody could be given RLIMIT_CPU 0
    "prlimit64": OnlyOwnProcess(arg=0, or_zero=True),
    # the parent-death signal must survive the kernel's code, or a daemon outlives sage
    "prctl": DenyIfEquals(arg=0, values=(PR_SET_PDEATHSIG,)),
    "ioctl": DenyIfEquals(arg=1, values=(TIOCSTI, TIOCLINUX)),
}


# --- a tiny classic-BPF assembler ----------------------------------------------------------

BPF_LD_W_ABS, BPF_RET_K = 0x20, 0x06
BPF_JEQ_K, BPF_JGE_K, BPF_JSET_K = 0x15, 0x35, 0x45


@dataclass(frozen=True)
class Insn:
    code: int
    k: int
    jt: str | None = None  # label to jump to when true; None: fall through
    jf: str | None = None


@dataclass(frozen=True)
class Label:
    name: str


def assemble(program: list[Insn | Label]) -> list[tuple[int, int, int, int]]:
    """(code, jt, jf, k) rows with the labels resolved to forward offsets."""
    where: dict[str, int] = {}
    insns: list[Insn] = []
    for item in program:
        if isinstance(item, Label):
            if item.name in where:
                raise ValueError(f"label {item.name} defined twice")
            where[item.name] = len(insns)
        else:
            insns.append(item)

    def offset(at: int, label: str | None) -> int:
        if label is None:
            return 0
        skip = where[label] - at - 1
        if not 0 <= skip <= 255:
            raise ValueError(f"jump to {label} spans {skip} instructions (classic BPF: 0..255)")
        return skip

    return [(i.code, offset(n, i.jt), offset(n, i.jf), i.k) for n, i in enumerate(insns)]


def _ret(action: int) -> Insn:
    return Insn(BPF_RET_K, action)


def _deny(err: int) -> Insn:
    return _ret(SECCOMP_RET_ERRNO | err)


def _load_arg(arg: int) -> Insn:
    return Insn(BPF_LD_W_ABS, OFFSET_ARGS + 8 * arg)  # the low half: both arches are little-endian


OWN_PID = -1  # placeholder for this process's pid in the template, filled in by `program`


def _rule_block(rule: Rule, tag: str) -> list[Insn | Label]:
    """Instructions for one call; every path ends in a return."""
    allow, deny = f"{tag}.allow", f"{tag}.deny"
    match rule:
        case Deny(err):
            return [_deny(err)]
        case DenyIfAnyBit(arg, mask, err):
            body = [_load_arg(arg), Insn(BPF_JSET_K, mask, jt=deny)]
        case DenyIfEquals(arg, values, err):
            body = [_load_arg(arg), *(Insn(BPF_JEQ_K, v, jt=deny) for v in values)]
        case OnlyOwnProcess(arg, or_zero):
            err = errno.EPERM
            body = [_load_arg(arg), *([Insn(BPF_JEQ_K, 0, jt=allow)] if or_zero else []),
                    Insn(BPF_JEQ_K, OWN_PID, jf=deny)]
        case OnlyThreads():
            err = errno.EPERM
            body = [_load_arg(0), Insn(BPF_JSET_K, CLONE_NEW_NAMESPACES, jt=deny),
                    Insn(BPF_JSET_K, CLONE_THREAD, jf=deny)]
    return [*body, Label(allow), _ret(SECCOMP_RET_ALLOW), Label(deny), _deny(err)]


@functools.cache
def template(arch: str) -> tuple[tuple[int, int, int, int], ...]:
    """The filter for `arch` with OWN_PID where the caller's pid goes. Cached: a zygote that
    calls it (through isolation.probe) before forking spares each child the assembly."""
    code: list[Insn | Label] = [
        Insn(BPF_LD_W_ABS, OFFSET_ARCH),
        Insn(BPF_JEQ_K, AUDIT_ARCH[arch], jt="native"),
        _ret(SECCOMP_RET_KILL_PROCESS),
        Label("native"),
        Insn(BPF_LD_W_ABS, OFFSET_NR),
    ]
    if arch == "x86_64":
        code += [Insn(BPF_JGE_K, X32_SYSCALL_BIT, jf="native64"), _deny(errno.EPERM), Label("native64")]
    for name, rule in RULES.items():
        nr = syscalls.number(name, arch)
        if nr is None:
            continue
        # The accumulator holds the call number on every path that reaches the next test:
        # a block that loads an argument always returns.
        code += [Insn(BPF_JEQ_K, nr, jf=f"{name}.next"), *_rule_block(rule, name),
                 Label(f"{name}.next")]
    code.append(_ret(SECCOMP_RET_ALLOW))
    return tuple(assemble(code))


def program(arch: str, own_pid: int) -> list[tuple[int, int, int, int]]:
    """The filter for `arch`, with kill/tgkill/... allowed only towards `own_pid`."""
    return [(c, jt, jf, own_pid if k == OWN_PID else k) for c, jt, jf, k in template(arch)]


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def install(own_pid: int) -> str:
    """Set no_new_privs and load the filter on every thread. Returns a description;
    OSError (with the kernel's errno) or RuntimeError (no table for this machine) if it cannot."""
    why_not = syscalls.supported()
    if why_not is not None:
        raise RuntimeError(why_not)
    rows = program(syscalls.machine(), own_pid)
    table = (_SockFilter * len(rows)).from_buffer_copy(
        struct.pack("=" + "HBBI" * len(rows), *(field for row in rows for field in row)))
    prog = _SockFprog(len(rows), table)
    syscalls.prctl(PR_SET_NO_NEW_PRIVS, 1)  # the kernel refuses a filter without it (unless CAP_SYS_ADMIN)
    failed_thread = syscalls.call("seccomp", SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC,
                                  ctypes.addressof(prog))
    if failed_thread:  # TSYNC names a thread it could not synchronize; nothing was installed
        raise RuntimeError(f"thread {failed_thread} has a seccomp filter of its own")
    return (f"{len(RULES)} calls filtered by a {len(rows)}-instruction program "
            f"({syscalls.machine()}; other ABIs killed)")
