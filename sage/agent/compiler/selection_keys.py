"""Selection keys computed in half precision are kept in float32.

A temporary a `topk` ranks (and nothing else reads) is the result of float math the tile
computes in float32 anyway; stored as the graph's float16 it is rounded first, and two keys
the float64 truth tells apart can become equal. On public level2/26 (MoE group scores: the
sum of each group's two best float16 scores, then the best 4 of 8 groups) 108.875 and
108.90625 both rounded to 108.875 in float16 and the kernel kept the wrong group, where the
truth, and a float32 sum (exact for two float16 values), keep the right one. The rule judges
against that truth, and a float32 key is always at least as close to it.

Only where nothing but the selection reads the key (or takes its shape, as zeros_like does)
and the selection's values are unused (they are then float32 too): every output keeps its
dtype.
"""

from __future__ import annotations

from dataclasses import replace

from sage.agent.compiler.ir import Program, Ref
from sage.agent.compiler.rewrite import HALF

SELECTIONS = ("topk",)
# readers that take only the key's shape (their own dtype is their result's)
SHAPE_ONLY = ("zeros_like", "ones_like", "empty_like", "full_like", "new_zeros", "new_ones", "new_empty", "new_full")


def wide_selection_keys(prog: Program) -> None:
    uses = prog.uses()
    outputs = {r.buf for r in prog.outputs}
    wide: set[int] = set()
    for node in prog.nodes:
        key = node.ins[0] if node.op in SELECTIONS and node.ins else None
        if key is None or key.buf in wide:
            continue
        buf = prog.buffers[key.buf]
        writers, readers = uses.writers(key.buf), uses.readers(key.buf)
        if buf.kind != "temp" or buf.dtype not in HALF or key.buf in outputs or len(writers) != 1 \
                or writers[0].inplace or any(r.op not in SELECTIONS + SHAPE_ONLY for r in readers):
            continue
        values = [r.outs[0].buf for r in readers if r.op in SELECTIONS]
        if any(uses.readers(v) or v in outputs or prog.buffers[v].dtype != buf.dtype for v in values):
            continue
        wide.update([key.buf, *values])
    if not wide:
        return
    for b in wide:
        prog.buffers[b].dtype = "float32"
    for node in prog.nodes:
        node.ins = [_widened(r, wide) for r in node.ins]
        node.outs = [_widened(r, wide) for r in node.outs]


def _widened(ref: Ref | None, wide: set[int]) -> Ref | None:
    return replace(ref, dtype="float32") if ref is not None and ref.buf in wide else ref
