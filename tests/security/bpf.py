"""A classic-BPF interpreter for seccomp programs, written from the kernel's documentation
(Documentation/networking/filter.rst), so the tests can run the aarch64 filter on an x86_64
machine and check each decision against hand-written expectations."""

from __future__ import annotations

import struct


def seccomp_data(nr: int, arch: int, args: tuple[int, ...] = ()) -> bytes:
    """struct seccomp_data { int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]; }"""
    padded = (*args, *(0,) * (6 - len(args)))
    return struct.pack("<iIQ6Q", nr, arch, 0, *(a & (2**64 - 1) for a in padded))


def run(program: list[tuple[int, int, int, int]], data: bytes) -> int:
    """The value the program returns for `data` (only the opcodes a seccomp filter uses)."""
    accumulator, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        pc += 1
        if code == 0x20:  # ld [k]: a 32-bit word of seccomp_data
            accumulator = struct.unpack_from("<I", data, k)[0]
        elif code == 0x06:  # ret k
            return k
        elif code in (0x15, 0x35, 0x45):  # jeq / jge / jset, against k
            taken = {0x15: accumulator == k, 0x35: accumulator >= k, 0x45: bool(accumulator & k)}[code]
            pc += jt if taken else jf
        else:
            raise ValueError(f"opcode {code:#x} not expected in this filter")
