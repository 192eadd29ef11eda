"""Linux system call numbers and a raw `syscall(2)` through ctypes, for the isolation layers.

The numbers are data, copied from the kernel's own tables (Linux 6.19):
- x86_64: arch/x86/entry/syscalls/syscall_64.tbl (the "common" and "64" rows);
- aarch64: include/uapi/asm-generic/unistd.h, the generic table arm64 uses.
Since Linux 5.1 every architecture shares the numbers from 424 on, so both columns agree
there. `None`: the architecture has no such call (arm64 never had open, fork, unlink, ...).
tests/security/test_isolation.py checks the table against the installed kernel headers.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import sys

# name: (x86_64, aarch64)
NUMBERS: dict[str, tuple[int | None, int | None]] = {
    "socket": (41, 198), "socketpair": (53, 199),
    "execve": (59, 221), "execveat": (322, 281),
    "fork": (57, None), "vfork": (58, None), "clone": (56, 220), "clone3": (435, 435),
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "mount": (165, 40), "umount2": (166, 39), "pivot_root": (155, 41), "chroot": (161, 51),
    "unshare": (272, 97), "setns": (308, 268),
    "open_tree": (428, 428), "move_mount": (429, 429), "fsopen": (430, 430),
    "fsconfig": (431, 431), "fsmount": (432, 432), "fspick": (433, 433),
    "mount_setattr": (442, 442), "open_tree_attr": (467, 467),
    "kill": (62, 129), "tkill": (200, 130), "tgkill": (234, 131),
    "rt_sigqueueinfo": (129, 138), "rt_tgsigqueueinfo": (297, 240),
    "pidfd_send_signal": (424, 424), "pidfd_open": (434, 434), "pidfd_getfd": (438, 438),
    "process_madvise": (440, 440), "kcmp": (312, 272),
    "prctl": (157, 167), "ioctl": (16, 29),
    "open": (2, None), "creat": (85, None), "openat": (257, 56), "openat2": (437, 437),
    "name_to_handle_at": (303, 264), "open_by_handle_at": (304, 265),
    "truncate": (76, 45),
    "rename": (82, None), "renameat": (264, 38), "renameat2": (316, 276),
    "unlink": (87, None), "unlinkat": (263, 35),
    "mkdir": (83, None), "mkdirat": (258, 34), "rmdir": (84, None),
    "link": (86, None), "linkat": (265, 37), "symlink": (88, None), "symlinkat": (266, 36),
    "chmod": (90, None), "fchmod": (91, 52), "fchmodat": (268, 53), "fchmodat2": (452, 452),
    "chown": (92, None), "fchown": (93, 55), "lchown": (94, None), "fchownat": (260, 54),
    "mknod": (133, None), "mknodat": (259, 33),
    "utime": (132, None), "utimes": (235, None), "futimesat": (261, None), "utimensat": (280, 88),
    "setxattr": (188, 5), "lsetxattr": (189, 6), "fsetxattr": (190, 7),
    "removexattr": (197, 14), "lremovexattr": (198, 15), "fremovexattr": (199, 16),
    "setxattrat": (463, 463), "removexattrat": (466, 466), "file_setattr": (469, 469),
    "memfd_create": (319, 279), "memfd_secret": (447, 447),
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
    "bpf": (321, 280), "perf_event_open": (298, 241), "userfaultfd": (323, 282),
    "keyctl": (250, 219), "add_key": (248, 217), "request_key": (249, 218),
    "setuid": (105, 146), "setgid": (106, 144), "setreuid": (113, 145), "setregid": (114, 143),
    "setresuid": (117, 147), "setresgid": (119, 149), "setfsuid": (122, 151),
    "setfsgid": (123, 152), "setgroups": (116, 159), "capset": (126, 91),
    "reboot": (169, 142), "kexec_load": (246, 104), "kexec_file_load": (320, 294),
    "init_module": (175, 105), "finit_module": (313, 273), "delete_module": (176, 106),
    "iopl": (172, None), "ioperm": (173, None), "personality": (135, 92),
    "swapon": (167, 224), "swapoff": (168, 225), "acct": (163, 89),
    "settimeofday": (164, 170), "clock_settime": (227, 112), "clock_adjtime": (305, 266),
    "adjtimex": (159, 171), "sethostname": (170, 161), "setdomainname": (171, 162),
    "quotactl": (179, 60), "quotactl_fd": (443, 443), "syslog": (103, 116),
    "vhangup": (153, 58), "fanotify_init": (300, 262), "uselib": (134, None),
    "lookup_dcookie": (212, 18),
    "prlimit64": (302, 261), "setpriority": (141, 140), "ioprio_set": (251, 30),
    "shmget": (29, 194), "shmat": (30, 196), "semget": (64, 190), "msgget": (68, 186),
    "mq_open": (240, 180), "mq_unlink": (241, 181),
    "getpid": (39, 172), "seccomp": (317, 277),
    "landlock_create_ruleset": (444, 444), "landlock_add_rule": (445, 445),
    "landlock_restrict_self": (446, 446),
}

# uname -m as Linux prints it -> column of NUMBERS
ARCH_COLUMN = {"x86_64": 0, "aarch64": 1}


def machine() -> str:
    """The CPU architecture this interpreter runs on ("x86_64", "aarch64", ...)."""
    return platform.machine()


def number(name: str, arch: str | None = None) -> int | None:
    """The number of `name` on `arch` (default: this machine), None where the call does not exist."""
    column = ARCH_COLUMN.get(arch or machine())
    if column is None:
        return None
    return NUMBERS[name][column]


def supported() -> str | None:
    """None if raw system calls can be made here, else why not."""
    if sys.platform != "linux":
        return f"not Linux ({sys.platform})"
    if machine() not in ARCH_COLUMN:
        return f"no system call table for {machine()} (only {', '.join(ARCH_COLUMN)})"
    if sys.byteorder != "little":
        return "big-endian Linux is not supported"
    return None


@functools.cache
def libc() -> ctypes.CDLL:
    lib = ctypes.CDLL(None, use_errno=True)
    lib.syscall.restype = ctypes.c_long
    return lib


def call(name: str, *args: int | None) -> int:
    """syscall(name, *args); OSError with the errno on failure. Pass structures as addresses
    (`ctypes.addressof`), NULL as None."""
    nr = number(name)
    if nr is None:
        raise OSError(errno.ENOSYS, f"{name} does not exist on {machine()}")
    return libc_call("syscall", nr, *args)


def libc_call(function: str, *args: int | None) -> int:
    """The C library's `function(*args)` for functions that return -1 and set errno on
    failure; OSError with that errno. Arguments are passed as machine words."""
    ctypes.set_errno(0)
    result = getattr(libc(), function)(*(_word(a) for a in args))
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"{function}{tuple(args)}: {os.strerror(err)}")
    return result


def prctl(option: int, arg2: int = 0) -> None:
    libc_call("prctl", option, arg2, 0, 0, 0)


def _word(arg: int | None) -> ctypes.c_long:
    # These functions are variadic (syscall, prctl): pass every argument as a full machine word.
    return ctypes.c_long(0 if arg is None else arg)
