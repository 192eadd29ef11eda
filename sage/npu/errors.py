"""Every error a kernel can cause. The class names are stable: the agent learns from them."""

from __future__ import annotations

from sage.npu.results import ErrorInfo


class NpuError(Exception):
    """Base of kernel errors: ``type`` (class name), ``message`` and the kernel file ``line``."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line

    @property
    def type(self) -> str:
        return type(self).__name__

    def info(self) -> ErrorInfo:
        return ErrorInfo(type=self.type, message=self.message, line=self.line)

    def __str__(self) -> str:
        where = f" (kernel line {self.line})" if self.line is not None else ""
        return f"{self.type}: {self.message}{where}"


class AlignmentError(NpuError):
    """A length or local address that the hardware needs 32 B aligned is not."""


class CapacityError(NpuError):
    """InitBuffer sizes exceed the capacity of UB, L1, L0A, L0B or L0C."""


class BoundsError(NpuError):
    """An access outside a GM allocation or a local tensor."""


class QueueError(NpuError):
    """TQue misuse: DeQue of an empty queue, AllocTensor beyond depth, use after FreeTensor."""


class RaceError(NpuError):
    """Two pipes touch the same bytes with no sync between them."""


class LaunchError(NpuError):
    """A bad launch: block_dim out of range, kernel API outside a kernel, bad arguments."""


class OutputSpecError(NpuError):
    """forward() returned the wrong number, shape or dtype of outputs, or an input."""


class SandboxError(NpuError):
    """The kernel file uses something the sandbox does not allow."""


class KernelTimeout(NpuError):
    """The kernel ran out of time (or would wait forever, e.g. WaitFlag with no SetFlag)."""


class MemoryLimitError(NpuError):
    """The kernel used more host memory than allowed."""


class KernelRuntimeError(NpuError):
    """Any other exception inside kernel code, with its line."""


class KernelSyntaxError(NpuError):
    """The kernel file is not valid Python: the message quotes the line, a caret under the column."""


class CoreTypeError(NpuError):
    """Cube work on an AIV core or vector work on an AIC core (the 910B's cores are split), or a path
    that core type does not have."""


class UnsupportedError(NpuError):
    """An instruction, dtype or parameter combination the target chip does not have (CANN's
    Ascend C API reference for Atlas A2 lists what each instruction takes)."""


class ImpossibleResultError(NpuError):
    """The run claims a time no 910B could reach (below the physical floor): not scored."""


class KernelResourceError(NpuError):
    """The run made more than a run may: instruction records, distinct records, blocks, launches or
    GM allocations over the caps of the DSL card (``sim/caps.py``), which keep the process that
    judges the run bounded."""


ERROR_CLASSES = (
    AlignmentError, CapacityError, BoundsError, QueueError, RaceError, LaunchError,
    OutputSpecError, SandboxError, KernelTimeout, MemoryLimitError, KernelRuntimeError, CoreTypeError, ImpossibleResultError,
    UnsupportedError, KernelResourceError, KernelSyntaxError,
)
