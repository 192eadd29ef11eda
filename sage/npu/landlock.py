"""Landlock for a kernel child: the whole file system read-only (and nothing executable),
one private directory read-write, no TCP, and no signals or abstract sockets leaving it.

Landlock (Linux 5.13+) lets an unprivileged process restrict itself for good; each kernel
version adds rights, numbered by ABI version. The rights, their bits and the ABI that
introduced them come from include/uapi/linux/landlock.h; the best ABI the kernel offers is
used, and what it lacks is named in the description.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass

from sage.npu import syscalls

LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
LANDLOCK_RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38


@dataclass(frozen=True)
class Right:
    name: str
    bit: int
    since_abi: int


FS_RIGHTS = (
    Right("execute", 0, 1), Right("write_file", 1, 1), Right("read_file", 2, 1),
    Right("read_dir", 3, 1), Right("remove_dir", 4, 1), Right("remove_file", 5, 1),
    Right("make_char", 6, 1), Right("make_dir", 7, 1), Right("make_reg", 8, 1),
    Right("make_sock", 9, 1), Right("make_fifo", 10, 1), Right("make_block", 11, 1),
    Right("make_sym", 12, 1), Right("refer", 13, 2), Right("truncate", 14, 3),
    Right("ioctl_dev", 15, 5),
)
NET_RIGHTS = (Right("bind_tcp", 0, 4), Right("connect_tcp", 1, 4))
SCOPES = (Right("abstract_unix_socket", 0, 6), Right("signal", 1, 6))
READ_ONLY = ("read_file", "read_dir")  # no "execute": execve of any file fails too


def _mask(rights: tuple[Right, ...], abi: int, names: tuple[str, ...] | None = None) -> int:
    return sum(1 << r.bit for r in rights if r.since_abi <= abi and (names is None or r.name in names))


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # the kernel's struct is __attribute__((packed)): 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _attr_size(abi: int) -> int:
    # Older kernels reject a struct larger than the one they know (E2BIG).
    if abi >= 6:
        return ctypes.sizeof(_RulesetAttr)
    return _RulesetAttr.handled_access_net.offset + 8 if abi >= 4 else 8


def abi_version() -> int:
    """The kernel's Landlock ABI; OSError (ENOSYS: not built in, EOPNOTSUPP: disabled at boot)."""
    return syscalls.call("landlock_create_ruleset", None, 0, LANDLOCK_CREATE_RULESET_VERSION)


def restrict_self(private_dir: str) -> str:
    """Apply the ruleset to the calling thread and the threads it starts; a description of
    what is enforced. OSError with the kernel's errno if Landlock cannot be applied."""
    abi = abi_version()
    handled_fs = _mask(FS_RIGHTS, abi)
    attr = _RulesetAttr(handled_fs, _mask(NET_RIGHTS, abi), _mask(SCOPES, abi))
    ruleset = syscalls.call("landlock_create_ruleset", ctypes.addressof(attr), _attr_size(abi), 0)
    try:
        _allow(ruleset, "/", _mask(FS_RIGHTS, abi, READ_ONLY))
        _allow(ruleset, private_dir, handled_fs)
        # Without no_new_privs only CAP_SYS_ADMIN may restrict itself; setting it here changes
        # nothing else lock_down relies on (it keeps setuid binaries from gaining privilege).
        syscalls.prctl(PR_SET_NO_NEW_PRIVS, 1)
        syscalls.call("landlock_restrict_self", ruleset, 0)
    finally:
        os.close(ruleset)
    missing = [r.name for r in (*FS_RIGHTS, *NET_RIGHTS, *SCOPES) if r.since_abi > abi]
    return (f"ABI {abi}: file system read-only without execute, read-write under {private_dir}"
            + (", TCP bind/connect denied" if abi >= 4 else "")
            + (", signals and abstract unix sockets confined" if abi >= 6 else "")
            + (f"; this kernel cannot restrict {', '.join(missing)}" if missing else ""))


def _allow(ruleset: int, path: str, access: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = _PathBeneathAttr(access, fd)
        syscalls.call("landlock_add_rule", ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.addressof(rule), 0)
    finally:
        os.close(fd)
