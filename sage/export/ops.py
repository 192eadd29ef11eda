"""One recorded DSL call -> one HIVM operation (or a one-line refusal).

The HIVM names and forms are those of the dialect reference, docs/source/en/developer_guide/
dialects/HIVMDialect.md of https://github.com/Ascend/AscendNPU-IR: `hivm.hir.load` / `store`
(GM <-> UB), the elementwise `hivm.hir.v*` ops (vector-vector and vector-scalar forms),
`vcast` with its `round_mode`, `vbrc` of a scalar and `vreduce <op> ... reduce_dims = [0]`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

import numpy as np

from sage.export.record import Call, Gm, Ub
from sage.export.scalars import Traced, loads_of

# DSL name -> HIVM op, by operand form
BINARY = {"Add": "vadd", "Sub": "vsub", "Mul": "vmul", "Div": "vdiv", "Max": "vmax", "Min": "vmin",
          "And": "vand", "Or": "vor"}
SCALAR = {"Adds": "vadd", "Muls": "vmul", "Maxs": "vmax", "Mins": "vmin"}
UNARY = {"Exp": "vexp", "Ln": "vln", "Abs": "vabs", "Reciprocal": "vrec", "Sqrt": "vsqrt", "Rsqrt": "vrsqrt",
         "Relu": "vrelu", "Not": "vnot"}
REDUCE = {"ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min"}
WHOLE = {"WholeReduceSum": "sum", "WholeReduceMax": "max", "WholeReduceMin": "min"}
# sage's RoundMode -> HIVM's RoundMode (CAST_NONE is "exact where possible, else to nearest even")
ROUND = {"CAST_NONE": "rint", "CAST_RINT": "rint", "CAST_FLOOR": "floor", "CAST_CEIL": "ceil",
         "CAST_ROUND": "round", "CAST_TRUNC": "trunc", "CAST_ODD": "odd"}
# bool tensors are bytes of 0/1 in GM and UB alike: i8 (the DSL's bool_ is one byte)
MLIR_TYPES = {"bool": "i8", "float16": "f16", "float32": "f32", "bfloat16": "bf16", "int8": "i8", "uint8": "i8", "int16": "i16",
              "uint16": "i16", "int32": "i32", "uint32": "i32", "int64": "i64"}


class Refused(Exception):
    """The kernel cannot be exported (yet); the message is one line saying why."""


def mlir_type(dtype: np.dtype) -> str:
    try:
        return MLIR_TYPES[np.dtype(dtype).name]
    except KeyError:
        raise Refused(f"element type {np.dtype(dtype).name} has no AscendNPU IR counterpart here") from None


@dataclass(frozen=True)
class Operand:
    """A memref operand of `count` elements: GM (`where` = argument index, `off` element offset) or
    local memory (`where` = buffer key, `off` byte offset). With `rows` > 1, `rows` rows of `count`
    elements, `pitch` elements apart (a multi-row DataCopyPad)."""
    gm: bool
    where: object
    off: int
    count: int
    dtype: str
    rows: int = 1
    pitch: int = 0


@dataclass(frozen=True)
class Op:
    """One HIVM operation: its `form` picks the text (emit.py), `name` the op, `ins`/`outs` memrefs,
    `scalar` a (value, mlir type) input, `attrs` the text after the operands."""
    form: str
    name: str
    ins: tuple[Operand, ...]
    outs: tuple[Operand, ...]
    scalar: tuple | None
    attrs: str
    line: int | None

    def shape(self) -> tuple:
        """Everything but the GM offsets: blocks whose ops agree on this differ only in where in GM they work."""
        strip = lambda o: (o.gm, o.where, None if o.gm else o.off, o.count, o.dtype, o.rows, o.pitch)  # noqa: E731
        return (self.form, self.name, tuple(map(strip, self.ins)), tuple(map(strip, self.outs)), self.scalar,
                self.attrs, self.line)

    def gm_offsets(self) -> list[int]:
        return [o.off for o in self.ins + self.outs if o.gm]


def _count(value, call: Call) -> int:
    if value.__class__ is not int or value < 0:
        raise Refused(f"{call.name} (line {call.line}) with a mask/repeat form is not exported yet: give an element "
                      f"count")
    return value


def _operand(arg, count: int, gm_index: dict[int, int], call: Call) -> Operand:
    if isinstance(arg, Gm):
        if arg.buf not in gm_index:
            raise Refused(f"{call.name} (line {call.line}) touches a GM tensor that is not an argument of the launch")
        return Operand(True, gm_index[arg.buf], arg.off, count, mlir_type(arg.dtype))
    if isinstance(arg, Ub):
        if arg.slot[0] != "UB":
            raise Refused(f"{call.name} (line {call.line}) works on {arg.slot[0]}: only UB (the vector core) is "
                          f"exported yet")
        return Operand(False, arg.slot, arg.off, count, mlir_type(arg.dtype))
    raise Refused(f"{call.name} (line {call.line}): an operand that is not a tensor ({type(arg).__name__})")


def _strip(expr: tuple, block: tuple, call: Call) -> tuple:
    """A traced expression with its loads named by their index in this block's program."""
    for leaf in loads_of(expr):
        if leaf[1] != block:
            raise Refused(f"{call.name} (line {call.line}) uses a value another block read from tensor data")
    if expr[0] == "load":
        return ("load", expr[2])
    if expr[0] == "const":
        return expr
    return (expr[0], *(_strip(e, block, call) for e in expr[1:]))


def _scalar(value, dtype: str, call: Call, block: tuple) -> tuple:
    if isinstance(value, Traced):
        if dtype not in ("f16", "f32", "bf16"):
            raise Refused(f"{call.name} (line {call.line}): a value read from tensor data as the scalar of a "
                          f"{dtype} op is not exported yet")
        return (("expr", _strip(value._sage_expr, block, call)), dtype)
    if isinstance(value, enum.Enum) or not isinstance(value, (int, float, np.number)) or isinstance(value, bool):
        raise Refused(f"{call.name} (line {call.line}): scalar {value!r} is not a number")
    return (float(value) if dtype[0] in "fb" else int(value), dtype)


REPEAT_KEYS = {2: (("dstBlkStride", "dstRepStride"), ("srcBlkStride", "srcRepStride")),
               3: (("dstBlkStride", "dstRepStride"), ("src0BlkStride", "src0RepStride"),
                   ("src1BlkStride", "src1RepStride"))}


def _repeated(call: Call, tensors: tuple, mask, repeat, params, gm_index: dict[int, int]) -> list[Operand]:
    """The operands of a vector call's repeat form (`mask` elements per repeat, `repeat` repeats, each
    operand's repeats RepStride x 32 B apart): 2-D views, rows = repeats, or 1-D when every operand's
    repeats are back to back. Block strides other than 1 and bit masks are refused."""
    if mask.__class__ is not int or repeat.__class__ is not int or not isinstance(params, dict) or mask < 1:
        raise Refused(f"{call.name} (line {call.line}) with a bit mask is not exported yet")
    keys = REPEAT_KEYS[len(tensors)]
    if any(params.get(blk) != 1 for blk, _ in keys):
        raise Refused(f"{call.name} (line {call.line}) with block strides other than 1 is not exported yet")
    pitches = []
    for t, (_, rep) in zip(tensors, keys):
        size = t.dtype.itemsize
        if (params[rep] * 32) % size or params[rep] * 32 // size < mask:
            raise Refused(f"{call.name} (line {call.line}) with overlapping repeats is not exported yet")
        pitches.append(params[rep] * 32 // size)
    if repeat == 1 or all(p == mask for p in pitches):
        return [_operand(t, mask * repeat, gm_index, call) for t in tensors]
    return [replace(_operand(t, mask, gm_index, call), rows=repeat, pitch=p) for t, p in zip(tensors, pitches)]


def _whole(call: Call, gm_index: dict[int, int]) -> Op:
    """WholeReduceSum/Max/Min(dst, src, mask, repeat, dstRepStride=1, srcBlkStride=1, srcRepStride=8[, order]):
    per repeat the first `mask` lanes reduced, result i at dst[i * dstRepStride] (sage/npu/ascendc/reduce.py):
    a `vreduce` over the last axis of a (repeat x mask) view into a (repeat x 1) view."""
    dst, src, mask, repeat, *rest = call.args
    dst_rep, src_blk, src_rep, order = (list(rest) + [1, 1, 8, None][len(rest):])[:4]
    if call.name != "WholeReduceSum" and getattr(order, "name", None) != "ORDER_ONLY_VALUE":
        raise Refused(f"{call.name} (line {call.line}) with indices (order other than ORDER_ONLY_VALUE) is not "
                      f"exported yet")
    if mask.__class__ is not int or repeat.__class__ is not int or src_blk != 1 or dst_rep.__class__ is not int:
        raise Refused(f"this argument form of {call.name} (line {call.line}) is not exported yet")
    size = src.dtype.itemsize
    pitch = src_rep * 32 // size
    if (src_rep * 32) % size or pitch < mask or dst_rep < 1:
        raise Refused(f"{call.name} (line {call.line}) with overlapping repeats is not exported yet")
    op = WHOLE[call.name]
    if repeat == 1:
        return Op("vector", "vreduce", (_operand(src, mask, gm_index, call),), (_operand(dst, 1, gm_index, call),),
                  None, f"<{op}>", call.line)
    ins = replace(_operand(src, mask, gm_index, call), rows=repeat, pitch=pitch)
    outs = replace(_operand(dst, 1, gm_index, call), rows=repeat, pitch=dst_rep)
    return Op("vector", "vreduce", (ins,), (outs,), None, f"<{op}>", call.line)


def _place(arg) -> str:
    return "GM" if isinstance(arg, Gm) else arg.slot[0] if isinstance(arg, Ub) else type(arg).__name__


def _copy_shape(call: Call, dst, src) -> tuple[int, int, int, int]:
    """(rows, elements per row, GM row pitch, UB row pitch) of one DataCopy/DataCopyPad, pitches in
    elements. DataCopy's parameters count 32 B blocks on both sides; DataCopyPad's row length and GM
    stride count bytes, its UB stride 32 B blocks, and each UB row starts on a 32 B boundary
    (sage/npu/ascendc/datamove.py)."""
    params = call.args[2]
    isz = src.dtype.itemsize
    if call.name == "DataCopy" and isinstance(params, int):
        n = _count(params, call)
        return 1, n, n, n
    if call.name == "DataCopyPad" and call.args[3:] and isinstance(call.args[3], dict) and call.args[3].get("isPad"):
        raise Refused(f"DataCopyPad (line {call.line}) with padding is not exported yet")
    if not isinstance(params, dict) or "blockCount" not in params:
        raise Refused(f"{call.name} (line {call.line}): unrecognised copy parameters")
    rows = params["blockCount"]
    to_gm = isinstance(dst, Gm)
    gm_gap, ub_gap = (params["dstStride"], params["srcStride"]) if to_gm else (params["srcStride"], params["dstStride"])
    if call.name == "DataCopy":
        length, gm_gap, ub_gap = params["blockLen"] * 32, gm_gap * 32, ub_gap * 32
        ub_row = length
    else:
        length, ub_gap = params["blockLen"], ub_gap * 32
        ub_row = -(-length // 32) * 32
    if length % isz or gm_gap % isz or ub_gap % isz:
        raise Refused(f"{call.name} (line {call.line}) moves a part of an element")
    return rows, length // isz, (length + gm_gap) // isz, (ub_row + ub_gap) // isz


def _copy(call: Call, form: str, src, dst, gm_index: dict[int, int]) -> Op:
    rows, n, gm_pitch, ub_pitch = _copy_shape(call, dst, src)
    if rows == 1 or (gm_pitch == n and ub_pitch == n):       # one contiguous run
        ops = [_operand(a, rows * n, gm_index, call) for a in (src, dst)]
    else:
        ops = [replace(_operand(a, n, gm_index, call), rows=rows, pitch=gm_pitch if isinstance(a, Gm) else ub_pitch)
               for a in (src, dst)]
    return Op("copy", form, (ops[0],), (ops[1],), None, "", call.line)


def translate(call: Call, gm_index: dict[int, int], block: tuple) -> Op:
    """The HIVM op of one recorded call of `block` ((launch, block index)), or Refused."""
    name, args, line = call.name, call.args, call.line
    if name == "LocalTensor.GetValue" and len(args) == 2 and isinstance(args[0], Ub) and args[1].__class__ is int:
        if args[0].dtype.kind != "f":
            raise Refused(f"line {line} reads an integer from tensor data ({name}): values and control flow that "
                          f"depend on it are not exported")
        return Op("sload", "load", (_operand(args[0], args[1] + 1, gm_index, call),), (), None, str(args[1]), line)
    if name == "LocalTensor.SetValue" and len(args) == 3 and isinstance(args[0], Ub) and args[1].__class__ is int:
        view = _operand(args[0], args[1] + 1, gm_index, call)
        return Op("sstore", "store", (), (view,), _scalar(args[2], view.dtype, call, block), str(args[1]), line)
    if name.endswith(".GetValue"):
        raise Refused(f"line {line} reads tensor data into a scalar ({name}): values and control flow that depend "
                      f"on tensor data are not exported")
    if name == "DataCopy" or name == "DataCopyPad":
        dst, src = args[0], args[1]
        for arg in (dst, src):
            if isinstance(arg, Ub) and arg.slot[0] != "UB":
                raise Refused(f"{name} (line {line}) to or from {arg.slot[0]} (the cube path) is not exported yet")
        if isinstance(dst, Ub) and isinstance(src, Gm):
            return _copy(call, "load", src, dst, gm_index)
        if isinstance(dst, Gm) and isinstance(src, Ub):
            return _copy(call, "store", src, dst, gm_index)
        if isinstance(dst, Ub) and isinstance(src, Ub) and name == "DataCopy" and isinstance(args[2], int):
            return _copy(call, "copy", src, dst, gm_index)   # UB -> UB on the vector pipe
        raise Refused(f"{name} (line {line}) from {_place(src)} to {_place(dst)} is not exported yet")
    if name in BINARY and len(args) == 6:
        dst, a, b = _repeated(call, args[:3], args[3], args[4], args[5], gm_index)
        return Op("vector", BINARY[name], (a, b), (dst,), None, "", line)
    if name in SCALAR and len(args) == 6:
        dst, src = _repeated(call, (args[0], args[1]), args[3], args[4], args[5], gm_index)
        return Op("vector", SCALAR[name], (src,), (dst,), _scalar(args[2], src.dtype, call, block), "", line)
    if name in UNARY and len(args) == 5:
        dst, src = _repeated(call, args[:2], args[2], args[3], args[4], gm_index)
        return Op("vector", UNARY[name], (src,), (dst,), None, "", line)
    if name in BINARY and len(args) == 4:
        n = _count(args[3], call)
        return Op("vector", BINARY[name], tuple(_operand(a, n, gm_index, call) for a in args[1:3]),
                  (_operand(args[0], n, gm_index, call),), None, "", line)
    if name in SCALAR and len(args) == 4:
        n = _count(args[3], call)
        src = _operand(args[1], n, gm_index, call)
        return Op("vector", SCALAR[name], (src,), (_operand(args[0], n, gm_index, call),),
                  _scalar(args[2], src.dtype, call, block), "", line)
    if name in UNARY and len(args) == 3:
        n = _count(args[2], call)
        return Op("vector", UNARY[name], (_operand(args[1], n, gm_index, call),),
                  (_operand(args[0], n, gm_index, call),), None, "", line)
    if name == "Duplicate" and len(args) == 3:
        n = _count(args[2], call)
        dst = _operand(args[0], n, gm_index, call)
        return Op("vector", "vbrc", (), (dst,), _scalar(args[1], dst.dtype, call, block), "", line)
    if name == "Cast" and len(args) == 4:
        n = _count(args[3], call)
        mode = getattr(args[2], "name", None)
        if mode not in ROUND:
            raise Refused(f"Cast (line {line}): unknown round mode {args[2]!r}")
        return Op("vector", "vcast", (_operand(args[1], n, gm_index, call),), (_operand(args[0], n, gm_index, call),),
                  None, f" round_mode = <{ROUND[mode]}>", line)
    if name in REDUCE and len(args) == 4:   # (dst, src, work, count): the work buffer is the vendor's to plan
        n = _count(args[3], call)
        return Op("vector", "vreduce", (_operand(args[1], n, gm_index, call),), (_operand(args[0], 1, gm_index, call),),
                  None, f"<{REDUCE[name]}>", line)
    if name in WHOLE and len(args) >= 4:
        return _whole(call, gm_index)
    known = name in BINARY or name in SCALAR or name in UNARY or name in REDUCE or name in ("Duplicate", "Cast")
    form = "this argument form of " if known else ""
    raise Refused(f"{form}{name} (line {line}) is not exported yet")
