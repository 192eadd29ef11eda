"""The repeat-form loops of a tile program, written for both shapes a tile can have.

A tile of `nr` rows of `nc` columns (row pitch `s`) runs a broadcast or a row reduction as
one instruction per 256 B chunk of the columns, each repeating over the rows (`lowering.py`,
"repeat forms"): ceil(nc / LANES) instructions. For a tile of few long rows that is many
instructions of few repeats: level1/10_layer_norm's fp16 [16, 1024, 4096] case ran one row
of 4096 per tile, 64 instructions per broadcast and 63 per reduction fold, and its launch
made 2.5 M instruction records. There each row is one instruction repeating over its
chunks (plus one for a partial last chunk), and a reduction is a `WholeReduce` of each
row's chunks into one value per chunk, then one `WholeReduce` of those over every row.
Which form a site takes is the compiler's choice, on each form's cost (`repeat_cost.py`);
the kernel text has only the chosen one.

Operand kinds: "full" (one value per element, row pitch `s`), "row" (one row, the same for
every row of the tile), "brcb" (one value per row, each filling one 32 B block: `Brcb`'s
layout, read with block stride 0). Repeat parameters follow Ascend C's
`BinaryRepeatParams(dstBlkStride, src0BlkStride, src1BlkStride, dstRepStride,
src0RepStride, src1RepStride)`, strides in 32 B blocks:
https://www.hiascend.com/document/detail/en/canncommercial/800/apiref/ascendcopapi/atlasascendc_api_07_0013.html
"""

from __future__ import annotations

# The row pitch of a tile in 32 B blocks of the compute dtype.
PITCH = "s // EPB"
# a 256 B repeat is 8 blocks of 32 B
_REP_BLOCKS = "8"


def broadcast_lines(op: str, dst: str, srcs: list[tuple[str, str]], scalar: str | None, form: str) -> list[str]:
    """`op` over a tile in `form` ("rows" or "cols"): `dst` full, each source (ref, kind);
    `scalar` the scalar argument of a unary-with-scalar form (`Adds(d, x, 0, ...)`), else
    None for a binary form. The row form is for LANES <= NC <= 255 * LANES (an 8-bit repeat count); a last
    column tile narrower than one repeat (nc < LANES) has only its partial chunk."""
    if form == "cols":
        return ["for k in range(0, nc, LANES):",
                "    " + _call(op, f"{dst}[k]", [_column_operand(x, k) for x, k in srcs],
                               scalar, "min(LANES, nc - k)", "nr", "1", PITCH)]
    q = "nc // LANES * LANES"
    return ["for r in range(nr):",
            "    if nc >= LANES:",
            "        " + _call(op, f"{dst}[r * s]", [_row_operand(x, k, "") for x, k in srcs],
                               scalar, "LANES", "nc // LANES", "1", _REP_BLOCKS),
            "    if nc % LANES:",
            "        " + _call(op, f"{dst}[r * s + {q}]", [_row_operand(x, k, f" + {q}") for x, k in srcs],
                               scalar, "nc % LANES", "1", "1", _REP_BLOCKS)]


def reduce_lines(whole: str, fold: str, col: str, src: str, acc: str, order: str, form: str) -> list[str]:
    """Each row's first `nc` columns of `src` reduced into `col` (one value per row), with
    `fold` (Add/Max/Min) and `whole` (WholeReduceSum/Max/Min) in `form`; `acc` a full buffer
    the partial results may go to (may be `src` itself: each row's partials are written over
    its first chunk, which the row's first repeat has read). The row form is for
    NC <= LANES * LANES (one row's partials fit one repeat)."""
    p = PITCH
    lines = ["if nc <= LANES:", f"    {whole}({col}, {src}, nc, nr, 1, 1, {p}{order})", "else:"]
    if form == "rows":
        q = "nc // LANES"
        return lines + [
            "    for r in range(nr):",
            f"        {whole}({acc}[r * s], {src}[r * s], LANES, {q}, 1, 1, {_REP_BLOCKS}{order})",
            "        if nc % LANES:",
            f"            {whole}({acc}[r * s + {q}], {src}[r * s + {q} * LANES], nc % LANES, 1, 1, 1, "
            f"{_REP_BLOCKS}{order})",
            f"    {whole}({col}, {acc}, (nc + LANES - 1) // LANES, nr, 1, 1, {p}{order})"]
    if acc != src:
        lines.append(f"    Adds({acc}, {src}, 0, LANES, nr, UnaryRepeatParams(1, 1, {p}, {p}))")
    lines.append("    for k in range(LANES, nc, LANES):")
    lines.append(f"        {fold}({acc}, {acc}, {src}[k], min(LANES, nc - k), nr, BinaryRepeatParams(1, 1, 1, {p}, {p}, {p}))")
    lines.append(f"    {whole}({col}, {acc}, LANES, nr, 1, 1, {p}{order})")
    return lines


def _row_operand(ref: str, kind: str, at: str) -> tuple[str, str, str]:
    """(operand, block stride, repeat stride) of a source in the row form (one row r)."""
    if kind == "full":
        return f"{ref}[r * s{at}]", "1", _REP_BLOCKS
    if kind == "row":
        return (f"{ref}[{at.removeprefix(' + ')}]" if at else ref), "1", _REP_BLOCKS
    return f"{ref}[r * EPB]", "0", "0"          # brcb: row r's block, every lane reads it


def _column_operand(ref: str, kind: str) -> tuple[str, str, str]:
    """(operand, block stride, repeat stride) in the column form (chunk k, every row)."""
    if kind == "full":
        return f"{ref}[k]", "1", PITCH
    if kind == "row":
        return f"{ref}[k]", "1", "0"
    return ref, "0", "1"                          # brcb: row j's block at repeat j


def _call(op: str, dst: str, srcs: list[tuple[str, str, str]], scalar: str | None, mask: str, repeats: str,
          dst_blk: str, dst_rep: str) -> str:
    refs = ", ".join(x for x, _, _ in srcs)
    blks = ", ".join(b for _, b, _ in srcs)
    reps = ", ".join(r for _, _, r in srcs)
    if scalar is not None:
        return f"{op}({dst}, {refs}, {scalar}, {mask}, {repeats}, UnaryRepeatParams({dst_blk}, {blks}, {dst_rep}, {reps}))"
    return f"{op}({dst}, {refs}, {mask}, {repeats}, BinaryRepeatParams({dst_blk}, {blks}, {dst_rep}, {reps}))"


__all__ = ["PITCH", "broadcast_lines", "reduce_lines"]
