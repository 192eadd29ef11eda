"""Ready kernel files from the library: the vendor kernels as task solutions.

For every task whose reference is exactly one library operator on its own inputs (an
elementwise chain, a last-axis reduction / softmax / norm, a matmul), `library_kernel_file`
writes a kernel file that runs the vendor's library kernel: one variant per distinct
kernel over the task's cases, chosen at run time from the operands' dtypes and shapes. Its speedup
over the reference model is therefore about 1 by construction (the same kernel, the same
launch overhead): the folder is a baseline for `sage bench npukernelbench --kernels DIR`
and an end-to-end check that the library is correct on the suite's shapes. The files are
generated, never committed: they follow the library and the suite.

    python -m sage.bench.reference.kernel_files OUT_DIR
    sage bench npukernelbench --kernels OUT_DIR
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from sage.bench.reference.plan import plan_call
from sage.kernels import HEADER, TooManyLaunches, dsl_dtype, record_forward
from sage.npu.hardware import load_preset


def _namespaced(source: str, suffix: str) -> str:
    """The source with every top-level name suffixed, so variants can share one file."""
    tree = ast.parse(source)
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    body = source.replace(HEADER, "", 1)
    for name in sorted(set(names), key=len, reverse=True):
        body = re.sub(rf"\b{re.escape(name)}\b", f"{name}_{suffix}", body)
    return body


def library_kernel_file(task, preset: str = "ascend910b2") -> str | None:
    """A kernel file covering every case of `task` with library kernels, or None when some
    case is not exactly one library operator on the forward's own tensors. Each distinct
    library kernel is one variant; `forward` picks it by the operands' dtypes and shapes."""
    from sage.bench.evaluate import select_cases

    hw = load_preset(preset)
    model, cases = select_cases(task, None)
    sources: list[str] = []
    routes: list[tuple[list[str], list[str], list[tuple[int, ...]], int, tuple[int, ...]]] = []
    for _, case in cases:
        args = [a.clone() if isinstance(a, torch.Tensor) else a for a in case]
        try:
            calls, outputs = record_forward(model, args, max_launches=1)
        except TooManyLaunches:
            return None
        launched = [c for c in calls if not c.free]
        if len(launched) != 1 or len(outputs) != 1:
            return None
        plan = plan_call(launched[0], hw)
        if plan.source != "simulated" or plan.kernel is None or plan.epilogue_bytes:
            return None
        origins = [t.origin for t in plan.operands]
        if any(o is None for o in origins) or outputs[0].numel != launched[0].outputs[0].numel:
            return None            # the kernel would need a tensor the forward does not receive
        if plan.kernel.source not in sources:
            sources.append(plan.kernel.source)
        routes.append(([str(o) for o in origins], [t.dtype for t in plan.operands],
                       [tuple(t.shape) for t in plan.operands], sources.index(plan.kernel.source),
                       tuple(outputs[0].shape)))
    lines = [HEADER, f"# Library kernels (the vendor schedule) for {task.key}: one variant per distinct kernel,",
             "# chosen by the operands' dtypes and shapes (the task's cases).", ""]
    lines += [_namespaced(src, f"v{i}") for i, src in enumerate(sources)]
    fwd = ["def forward(*args, **params):"]
    for origins, dtypes, shapes, variant, out_shape in routes:
        cond = " and ".join(f"{_arg(o)}.dtype == {dsl_dtype(d)} and {_arg(o)}.shape == {sh!r}"
                            for o, d, sh in zip(origins, dtypes, shapes))
        fwd += [f"    if {cond}:",
                f"        return forward_v{variant}({', '.join(_arg(o) for o in origins)}).view({out_shape!r})"]
    fwd.append("    raise ValueError('no library variant for these inputs: this file covers the task cases only')")
    lines.append("\n".join(fwd) + "\n")
    return "\n".join(lines)


def _arg(origin: str) -> str:
    kind, _, ref = origin.partition(":")
    return f"args[{ref}]" if kind == "arg" else f"params[{ref!r}]"


def write_library_kernels(out_dir: Path, tasks=None, preset: str = "ascend910b2",
                          levels: list[int] | None = None) -> list[Path]:
    """Writes OUT_DIR/<task key>.py for every task a library kernel covers (of `levels`, if
    given); returns the files. A task whose model or inputs cannot be made gets no file."""
    from sage.bench.tasks import SUITE_DIR, ReferenceUnavailable, TaskLoadError, load_tasks

    if tasks is None:
        # Unchecked: library_kernel_file makes each task's model and inputs once, and a
        # checked load would make them a second time (the suite's inputs are large).
        tasks, _ = load_tasks(SUITE_DIR, check_inputs=False)
    written = []
    with one_torch_thread():
        for task in tasks:
            if levels is not None and task.level not in levels:
                continue
            try:
                text = library_kernel_file(task, preset)
            except (TaskLoadError, ReferenceUnavailable):
                continue
            if text is None:
                continue
            path = Path(out_dir) / f"{task.key}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """torch on one thread for the block: only the inputs' shapes and dtypes matter here, and
    intra-op threads making them cost more CPU than they save wall time on a small machine
    (the suite's inputs on 2 threads: 24 CPU s against 8 on one)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m sage.bench.reference.kernel_files OUT_DIR", file=sys.stderr)
        sys.exit(2)
    for p in write_library_kernels(Path(sys.argv[1])):
        print(p)
