"""Export of DSL kernels to AscendNPU IR, and the vendor compiler's verdict on it (docs/export.md).

Public names: `export_kernel` (a kernel file and one case's inputs -> IR text or a one-line
refusal) and `check_ir` (the IR through `bishengir-compile`'s pipeline -> a one-line verdict).
"""

from sage.export.emit import Exported, export_kernel
from sage.export.vendor import CheckResult, check_ir, compiler_path, unavailable_reason

__all__ = ["Exported", "export_kernel", "CheckResult", "check_ir", "compiler_path", "unavailable_reason"]
