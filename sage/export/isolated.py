"""`sage export` on a kernel file from anywhere: the export runs in a locked-down child.

Kernel code is hostile (docs/security.md). The export has to run the kernel to record what
it does, so the command does it the way `sage npu run` does: in a child forked for the
purpose and locked down by `sage.npu.isolation.lock_down` (no network, no exec or fork,
read-only files, an unprivileged uid, rlimits, seccomp) before the kernel's first line
runs. The child sends back only text: the IR and the few figures the command prints, as
JSON checked here against a model, within a size cap and a deadline. Nothing the child
sends is unpickled or run.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
import traceback
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError

from sage.npu.isolation import lock_down, read_until_eof

if TYPE_CHECKING:
    from sage.npu.hardware import HardwareSpec

MAX_REPLY_BYTES = 64 << 20          # the IR is capped at 20,000 ops: a few MB at most
ADDRESS_SPACE_BYTES = 4 << 30       # what the kernel may map on top of the child's start


class ExportSummary(BaseModel):
    """What the command needs of an export (`emit.Exported`), as the child reports it."""

    text: str | None = None
    refusal: str | None = None
    kernel: str = ""
    blocks: int = Field(0, ge=0)
    groups: int = Field(0, ge=0)
    ops: int = Field(0, ge=0)
    launches: int = Field(0, ge=0)
    lines: dict[int, int] = Field(default_factory=dict)


def export_isolated(source: str, args: list[Any], kwargs: dict[str, Any] | None, *, spec: HardwareSpec,
                    filename: str, cpu_seconds: float = 120.0, wall_seconds: float = 180.0) -> ExportSummary:
    """`export_kernel` in a locked-down child; never raises for anything the kernel does."""
    read_end, write_end = os.pipe()
    parent = os.getpid()
    with tempfile.TemporaryDirectory(prefix="sage-export-") as private_dir:
        pid = os.fork()
        if pid == 0:
            _child(source, args, kwargs, spec, filename, private_dir, write_end, parent, cpu_seconds)
        os.close(write_end)
        try:
            reply = read_until_eof(read_end, time.monotonic() + wall_seconds, MAX_REPLY_BYTES)
        finally:
            os.close(read_end)
            os.kill(pid, signal.SIGKILL)       # done or not, it has nothing more to say
            _, status = os.waitpid(pid, 0)
    if reply is None:
        return ExportSummary(refusal=f"the export did not finish within {wall_seconds:g} s (or sent more than "
                                     f"{MAX_REPLY_BYTES >> 20} MB)")
    if not reply:
        return ExportSummary(refusal=f"the export's child ended without a reply (wait status {status}): the kernel "
                                     "exhausted its CPU time or memory, or was stopped by the sandbox")
    try:
        return ExportSummary.model_validate_json(reply)
    except ValidationError as exc:
        return ExportSummary(refusal=f"the export's child sent a malformed reply ({exc.error_count()} error(s))")


def _child(source: str, args: list[Any], kwargs: dict[str, Any] | None, spec: HardwareSpec, filename: str,
           private_dir: str, write_end: int, parent: int, cpu_seconds: float) -> None:
    """Never returns: the child must not run the caller's code after its fork."""
    try:
        from sage.export import export_kernel

        with open("/proc/self/statm") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        lock_down(private_dir=private_dir, keep_fds=[write_end], cpu_seconds=cpu_seconds,
                  address_space_bytes=mapped + ADDRESS_SPACE_BYTES, file_size_bytes=0, expected_parent=parent)
        done = export_kernel(source, args, kwargs, spec=spec, filename=filename)
        summary = ExportSummary(text=done.text, refusal=done.refusal, kernel=done.kernel, blocks=done.blocks,
                                groups=done.groups, ops=done.ops, launches=len(done.functions), lines=done.lines)
        data = summary.model_dump_json().encode()
        view = memoryview(data)
        while view:
            view = view[os.write(write_end, view):]
        os._exit(0)
    except BaseException:  # a bug of the export itself: shown on stderr, and the child ends either way
        traceback.print_exc()
        os._exit(1)


__all__ = ["ExportSummary", "export_isolated"]
