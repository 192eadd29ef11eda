"""The seccomp program as data: the syscall table against the kernel headers, and the
decisions of the x86_64 and aarch64 filters run through an independent BPF interpreter."""

from __future__ import annotations

import errno
import re
from pathlib import Path

import pytest

from sage.npu import seccomp_filter, syscalls

from .bpf import run, seccomp_data

X86_64_HEADERS = [Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"), Path("/usr/include/asm/unistd_64.h")]
GENERIC_HEADER = Path("/usr/include/asm-generic/unistd.h")
# include/uapi/linux/audit.h: EM_X86_64 (62) / EM_AARCH64 (183) | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
AUDIT_X86_64 = 62 | 0x80000000 | 0x40000000
AUDIT_AARCH64 = 183 | 0x80000000 | 0x40000000
ALLOW, KILL = 0x7FFF0000, 0x80000000
OWN_PID = 4242


def errno_action(err: int) -> int:
    return 0x00050000 | err


def header_numbers(path: Path) -> dict[str, int]:
    pattern = re.compile(r"#define __NR(?:3264)?_(\w+)\s+(\d+)\s*$")
    return {m[1]: int(m[2]) for m in map(pattern.match, path.read_text().splitlines()) if m}


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_table_matches_the_installed_kernel_headers(arch: str) -> None:
    if arch == "x86_64":
        found = [p for p in X86_64_HEADERS if p.exists()]
        if not found:
            pytest.skip("no x86_64 kernel headers installed")
        header = header_numbers(found[0])
    else:
        if not GENERIC_HEADER.exists():
            pytest.skip("no asm-generic kernel headers installed")
        header = header_numbers(GENERIC_HEADER)
    column = syscalls.ARCH_COLUMN[arch]
    compared = 0
    for name, numbers in syscalls.NUMBERS.items():
        if name in header:  # headers older than the table lack the newest calls
            assert numbers[column] == header[name], name
            compared += 1
        elif numbers[column] is not None:
            assert numbers[column] >= 448, f"{name} is missing from {arch}'s header but is not new"
    assert compared >= 100  # the header was read (each older call was compared above)


# (call, args, expected action) with the aarch64 numbers of asm-generic/unistd.h
AARCH64_CASES = [
    (63, (), ALLOW),                                       # read
    (198, (2, 1, 0), errno_action(errno.EPERM)),          # socket(AF_INET, SOCK_STREAM)
    (199, (1, 1, 0), errno_action(errno.EPERM)),          # socketpair(AF_UNIX)
    (221, (), errno_action(errno.EPERM)),                 # execve
    (56, (-100, 0, 0o0), ALLOW),                          # openat(O_RDONLY)
    (56, (-100, 0, 0o2000000), ALLOW),                    # openat(O_RDONLY | O_CLOEXEC)
    (56, (-100, 0, 0o1), errno_action(errno.EACCES)),     # O_WRONLY
    (56, (-100, 0, 0o100), errno_action(errno.EACCES)),   # O_CREAT
    (56, (-100, 0, 0o1000), errno_action(errno.EACCES)),  # O_TRUNC
    (56, (-100, 0, 0o2002), errno_action(errno.EACCES)),  # O_RDWR | O_APPEND
    (437, (), errno_action(errno.ENOSYS)),                # openat2
    (435, (), errno_action(errno.ENOSYS)),                # clone3
    (220, (0x3D0F00,), ALLOW),                            # clone as pthread_create does
    (220, (17,), errno_action(errno.EPERM)),              # clone(SIGCHLD): fork
    (220, (0x3D0F00 | 0x40000000,), errno_action(errno.EPERM)),  # a thread in a new netns
    (129, (OWN_PID, 9), ALLOW),                           # kill(self)
    (129, (OWN_PID + 1, 9), errno_action(errno.EPERM)),   # kill(other)
    (129, (0, 9), errno_action(errno.EPERM)),             # kill(own process group)
    (129, (-1, 9), errno_action(errno.EPERM)),            # kill(everyone)
    (131, (OWN_PID, OWN_PID + 3, 6), ALLOW),              # tgkill of a thread of ours
    (131, (1, 1, 9), errno_action(errno.EPERM)),          # tgkill(init)
    (167, (1, 0), errno_action(errno.EPERM)),             # prctl(PR_SET_PDEATHSIG, 0)
    (167, (15, 0), ALLOW),                                # prctl(PR_SET_NAME)
    (29, (0, 0x5412), errno_action(errno.EPERM)),         # ioctl(TIOCSTI)
    (29, (0, 0x5401), ALLOW),                             # ioctl(TCGETS)
    (117, (), errno_action(errno.EPERM)),                 # ptrace
    (40, (), errno_action(errno.EPERM)),                  # mount
    (425, (), errno_action(errno.EPERM)),                 # io_uring_setup
    (279, (), errno_action(errno.EPERM)),                 # memfd_create
    (146, (0,), errno_action(errno.EPERM)),               # setuid(0)
    (261, (0, 0, 0, 0), ALLOW),                           # prlimit64(self as 0), as setrlimit does
    (261, (OWN_PID, 0, 0, 0), ALLOW),                     # prlimit64(own pid)
    (261, (OWN_PID + 1, 0, 0, 0), errno_action(errno.EPERM)),  # prlimit64(a sibling)
    (194, (0, 4096, 0o1600), errno_action(errno.EPERM)),  # shmget
    (180, (), errno_action(errno.EPERM)),                 # mq_open
    (140, (2, 65534, 19), errno_action(errno.EPERM)),     # setpriority(PRIO_USER)
]


@pytest.mark.parametrize(("nr", "args", "expected"), AARCH64_CASES)
def test_aarch64_filter_decisions(nr: int, args: tuple[int, ...], expected: int) -> None:
    program = seccomp_filter.program("aarch64", OWN_PID)
    assert run(program, seccomp_data(nr, AUDIT_AARCH64, args)) == expected


def test_foreign_abis_are_refused() -> None:
    x86 = seccomp_filter.program("x86_64", OWN_PID)
    assert run(x86, seccomp_data(0, AUDIT_X86_64)) == ALLOW                   # read
    assert run(x86, seccomp_data(0x40000000 | 0, AUDIT_X86_64)) == errno_action(errno.EPERM)  # x32 read
    assert run(x86, seccomp_data(3, 0x40000003)) == KILL                       # i386 (int 0x80)
    assert run(x86, seccomp_data(57, AUDIT_X86_64)) == errno_action(errno.EPERM)  # fork
    assert run(x86, seccomp_data(2, AUDIT_X86_64, (0, 0o101))) == errno_action(errno.EACCES)  # open(O_WRONLY|O_CREAT)
    arm = seccomp_filter.program("aarch64", OWN_PID)
    assert run(arm, seccomp_data(63, AUDIT_X86_64)) == KILL                    # wrong arch


def test_assembler_resolves_labels_and_refuses_long_jumps() -> None:
    Insn, Label = seccomp_filter.Insn, seccomp_filter.Label
    rows = seccomp_filter.assemble([Insn(0x15, 7, jt="b", jf="a"), Label("a"), Insn(0x06, 1), Label("b"), Insn(0x06, 2)])
    assert rows == [(0x15, 1, 0, 7), (0x06, 0, 0, 1), (0x06, 0, 0, 2)]
    far = [Insn(0x15, 7, jt="end"), *(Insn(0x06, 0) for _ in range(256)), Label("end"), Insn(0x06, 1)]
    with pytest.raises(ValueError, match="spans 256"):
        seccomp_filter.assemble(far)
