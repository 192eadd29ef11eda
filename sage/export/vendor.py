"""The vendor compiler's verdict on exported IR: `bishengir-compile` of the `ascendnpu-ir` wheel.

The wheel (PyPI `ascendnpu-ir` 1.2.0, CPython 3.11 manylinux only) installs the binary inside
the package, `ascendnpuir/bin/bishengir-compile`, not on PATH. It runs the whole HIVM pipeline
(memory planning, sync insertion, multi-buffering) on a CPU and then calls CANN's `hivmc` for
the device binary; without CANN it stops there with "External hivmc run fails". That stop,
and no other error, is a pass: everything the pipeline checks has been checked.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

INSTALL_HINT = "pip install 'sage-npu[export]' (CPython 3.11 only: the one wheel ascendnpu-ir publishes)"
TIMEOUT_S = 300
# The vendor's messages when the pipeline ran to its end and only CANN's binary step is missing
HIVMC_MISSING = ("External hivmc run fails", "Cannot find hivmc")
# Its generic closing lines, which say nothing of their own
GENERIC = ("Failed to run BiShengHIR pipeline", "Failed to run BiShengIR pipeline")
_DIAG = re.compile(r'loc\("(?P<file>[^"]*)":(?P<line>\d+):(?P<col>\d+)\):\s*error:\s*(?P<msg>.*)')


@dataclass
class CheckResult:
    passed: bool
    line: str               # the one-line verdict
    output: str = ""        # the vendor's whole output


def compiler_path() -> Path | None:
    """Where the wheel put `bishengir-compile`, or None when the package is not installed."""
    spec = importlib.util.find_spec("ascendnpuir")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        binary = Path(folder) / "bin" / "bishengir-compile"
        if binary.is_file():
            return binary
    return None


def unavailable_reason() -> str | None:
    """None when the check can run here, else one line saying why not and how to get it."""
    if compiler_path() is not None:
        return None
    py = "%d.%d" % tuple(sys.version_info[:2])
    if sys.implementation.name != "cpython" or py != "3.11":
        return (f"the vendor check is unavailable: ascendnpu-ir publishes a wheel for CPython 3.11 only "
                f"(this is {sys.implementation.name} {py})")
    return f"the vendor check is unavailable: bishengir-compile is not installed; {INSTALL_HINT}"


def verdict(output: str, ir_name: str, lines: dict[int, int], kernel_file: str) -> CheckResult:
    """One line from the vendor's output: a pass, or its first own error with the kernel line."""
    errors = []
    for m in _DIAG.finditer(output):
        msg = m.group("msg").strip()
        if any(g in msg for g in GENERIC) or any(h in msg for h in HIVMC_MISSING):
            continue
        errors.append((m.group("file"), int(m.group("line")), msg))
    if not errors and any(h in output for h in HIVMC_MISSING):
        return CheckResult(True, "passes (stopped only at hivmc)", output)
    if not errors:
        last = [ln for ln in output.splitlines() if ln.strip()]
        return CheckResult(False, f"vendor compiler failed: {last[-1] if last else 'no output'}", output)
    file, line, msg = errors[0]
    if file == kernel_file or Path(file).name == Path(kernel_file).name:
        where = f"{kernel_file} line {line}"
    elif Path(file).name == Path(ir_name).name and line in lines:
        where = f"{kernel_file} line {lines[line]} (IR line {line})"
    elif Path(file).name == Path(ir_name).name:
        where = f"IR line {line}"
    else:
        where = f"{file}:{line}"
    return CheckResult(False, f"refused at {where}: {msg}", output)


def check_ir(text: str, *, target: str, kernel_file: str = "kernel.py", lines: dict[int, int] | None = None,
             extra: tuple[str, ...] = ()) -> CheckResult:
    """Run the vendor pipeline on IR `text` for `target` (e.g. Ascend910B2)."""
    binary = compiler_path()
    if binary is None:
        return CheckResult(False, unavailable_reason() or "the vendor check is unavailable")
    with tempfile.TemporaryDirectory(prefix="sage-export-") as tmp:
        ir = Path(tmp) / "kernel.mlir"
        ir.write_text(text, encoding="utf-8")
        try:
            done = subprocess.run([str(binary), str(ir), "-enable-hivm-compile=true", f"--target={target}",
                                   "-o", str(Path(tmp) / "kernel.o"), *extra], capture_output=True, text=True,
                                  timeout=TIMEOUT_S, cwd=tmp)
        except subprocess.TimeoutExpired:
            return CheckResult(False, f"vendor compiler did not finish in {TIMEOUT_S} s")
        except OSError as exc:
            return CheckResult(False, f"vendor compiler could not run: {exc.strerror or exc}")
    output = done.stdout + done.stderr
    if done.returncode == 0:
        return CheckResult(True, "passes (device binary built)", output)
    return verdict(output, str(ir), lines or {}, kernel_file)


# sage preset -> the vendor compiler's --target (its `--help` lists the names)
TARGETS = {"ascend910b2": "Ascend910B2", "ascend910b4": "Ascend910B4"}


def target_of(preset: str) -> str | None:
    return TARGETS.get(preset)
