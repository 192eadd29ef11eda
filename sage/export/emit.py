"""The recorded blocks of one launch -> AscendNPU IR text (docs/export.md).

The IR has one `func.func` per launch of forward(), marked `hacc.entry` / `#hacc.function_kind<DEVICE>` (the form of the
`ascendnpu-ir` package README and of docs/source/en/developer_guide/dialects/HACCDialect.md in
https://github.com/Ascend/AscendNPU-IR) whose arguments are the launch's GM tensors, flat.

Blocks whose recorded programs agree in everything but their GM offsets form a group; within a
group each GM offset must be affine in the block index (base + stride * idx), and the group's
body is emitted once with the offsets computed from `hivm.hir.get_block_idx`. Groups that
cover ranges of block indices become an `scf.if` chain on the index (the tail block of an
uneven split is its own group). Anything else is refused in one line.

Each UB buffer (a TQue or TBuf buffer of InitBuffer) is a `memref.alloc` of its bytes as i8
in `#hivm.address_space<ub>`; a tensor on it is a `memref.view` at its byte offset, so two
dtypes on one buffer alias as they do on the chip. Every op carries `loc("kernel.py":line:1)`,
so the vendor's diagnostics name the kernel line. Loops are unrolled (the recording runs them);
synchronisation is left to the vendor pipeline's sync insertion.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sage.export.ops import Op, Operand, Refused, mlir_type, translate
from sage.export.record import Launch, Recording, record
from sage.npu.hardware import HardwareSpec

# traced scalar operations -> MLIR (the math.* ones come named from sage/export/scalars.py)
ARITH = {"add": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf", "div": "arith.divf", "neg": "arith.negf",
         "pow": "math.powf"}
_NUMPY = {"f16": "float16", "f32": "float32", "bf16": "uint16", "i8": "int8", "i16": "int16", "i32": "int32",
          "i64": "int64"}   # (bf16's size is what counts here)
MAX_OPS = 20_000      # ops of the emitted text, all groups together: beyond, the unrolled text is too long


@dataclass
class Function:
    """One launch's entry function: its name, block count and GM arguments (allocation ids)."""
    name: str
    blocks: int
    args: list[int]


@dataclass
class Exported:
    """An export: the IR `text`, or the one-line `refusal` saying why not."""
    text: str | None = None
    refusal: str | None = None
    kernel: str = ""                                      # the functions' names
    blocks: int = 0                                       # over all launches
    groups: int = 0
    ops: int = 0
    lines: dict[int, int] = field(default_factory=dict)   # IR line -> kernel line
    functions: list[Function] = field(default_factory=list)   # in launch order
    # GM allocation id -> (dtype, elements, an input of forward()); ids count forward()'s tensor
    # arguments first, in order (sage.npu.execute); `outputs`: the ids forward() returns
    gm: dict[int, tuple[np.dtype, int, bool]] = field(default_factory=dict)
    outputs: list[int] = field(default_factory=list)


def _affine(blocks: list[int], offsets: list[list[int]]) -> list[tuple[int, int]]:
    """Per GM offset, (base, stride) with offset = base + stride * block over the group, or Refused."""
    first = offsets[0]
    if len(blocks) == 1:
        return [(o, 0) for o in first]
    span = blocks[1] - blocks[0]
    fits = []
    for k, o0 in enumerate(first):
        step, rem = divmod(offsets[1][k] - o0, span)
        if rem:
            raise Refused(f"GM offsets of blocks {blocks[0]} and {blocks[1]} are not affine in the block index")
        base = o0 - step * blocks[0]
        for b, offs in zip(blocks, offsets):
            if offs[k] != base + step * b:
                raise Refused(f"GM offset {offs[k]} of block {b} is not affine in the block index "
                              f"(blocks {blocks[0]} and {blocks[1]} give {base} + {step} * idx)")
        fits.append((base, step))
    return fits


class _Writer:
    def __init__(self, filename: str, gm: list[tuple[int, np.dtype, int, bool]]) -> None:
        self.filename, self.gm = filename, gm
        self.out: list[str] = []
        self.lines: dict[int, int] = {}
        self.n = 0

    def emit(self, indent: int, text: str, line: int | None = None, loc: bool = True) -> None:
        """One IR line; with the kernel `line` it is remembered, and written as the op's location
        unless `loc` is False (a region's own location goes after its closing brace)."""
        if line is not None:
            if loc:
                text += f' loc("{self.filename}":{line}:1)'
            self.lines[len(self.out) + 1] = line
        self.out.append("  " * indent + text)

    def fresh(self, stem: str) -> str:
        self.n += 1
        return f"%{stem}{self.n}"

    def gm_type(self, k: int) -> str:
        return f"memref<{self.gm[k][2]}x{mlir_type(self.gm[k][1])}, #gm>"

    def body(self, indent: int, ops: list[Op], fits: list[tuple[int, int]], idx: str) -> None:
        allocs: dict = {}
        fit = iter(fits)
        for op in ops:
            for o in op.ins + op.outs:
                if not o.gm and o.where not in allocs:
                    allocs[o.where] = self.fresh("ub")
                    self.emit(indent, f"{allocs[o.where]} = memref.alloc() : memref<{o.where[2]}xi8, #ub>")
        loads: dict[int, tuple[str, str]] = {}   # op index of a GetValue -> (its SSA value, its type)
        for k, op in enumerate(ops):
            names = [self.view(indent, o, allocs, next(fit) if o.gm else None, idx) for o in op.ins + op.outs]
            if op.form == "sload":
                c, s = self.fresh("c"), self.fresh("s")
                self.emit(indent, f"{c} = arith.constant {op.attrs} : index")
                self.emit(indent, f"{s} = memref.load {names[0]}[{c}] : {self.type_of(op.ins[0])}", op.line)
                loads[k] = (s, op.ins[0].dtype)
                continue
            ins, outs = names[:len(op.ins)], names[len(op.ins):]
            in_types = [self.type_of(o) for o in op.ins]
            if op.scalar is not None:
                ins.append(self.scalar(indent, op, loads))
                in_types.append(op.scalar[1])
            if op.form == "sstore":
                c = self.fresh("c")
                self.emit(indent, f"{c} = arith.constant {op.attrs} : index")
                self.emit(indent, f"memref.store {ins[-1]}, {outs[0]}[{c}] : {self.type_of(op.outs[0])}", op.line)
                continue
            head = f"hivm.hir.{op.name}" if op.name != "vreduce" else f"hivm.hir.vreduce {op.attrs}"
            tail = op.attrs if op.name != "vreduce" else f" reduce_dims = [{1 if op.ins[0].rows > 1 else 0}]"
            outs_t = ", ".join(self.type_of(o) for o in op.outs)
            ins_text = f"ins({', '.join(ins)} : {', '.join(in_types)}) " if ins else ""
            self.emit(indent, f"{head} {ins_text}outs({', '.join(outs)} : {outs_t}){tail}", op.line)

    def scalar(self, indent: int, op: Op, loads: dict) -> str:
        """The SSA value of an op's scalar operand: a constant, or computed from values read from tensor data."""
        value, typ = op.scalar
        if isinstance(value, tuple):      # ("expr", e)
            s = self.expression(indent, value[1], loads, op.line)
            if typ != "f32":
                t = self.fresh("s")
                self.emit(indent, f"{t} = arith.truncf {s} : f32 to {typ}", op.line)
                s = t
            return s
        s = self.fresh("s")
        self.emit(indent, f"{s} = arith.constant {_literal(value, typ)} : {typ}")
        return s

    def expression(self, indent: int, e: tuple, loads: dict, line: int | None) -> str:
        """The f32 SSA value of a traced scalar expression (sage/export/scalars.py); Python computed it in
        double, the chip's scalar unit computes in float."""
        kind = e[0]
        if kind == "const":
            s = self.fresh("s")
            self.emit(indent, f"{s} = arith.constant {_literal(e[1], 'f32')} : f32")
            return s
        if kind == "load":
            value, typ = loads[e[1]]
            if typ == "f32":
                return value
            s = self.fresh("s")
            self.emit(indent, f"{s} = arith.extf {value} : {typ} to f32", line)
            return s
        args = [self.expression(indent, a, loads, line) for a in e[1:]]
        s = self.fresh("s")
        name = ARITH.get(kind, kind)
        self.emit(indent, f"{s} = {name} {', '.join(args)} : f32", line)
        return s

    def type_of(self, o: Operand) -> str:
        if o.rows > 1:
            space = "offset: ?>, #gm" if o.gm else ">, #ub"
            return f"memref<{o.rows}x{o.count}x{o.dtype}, strided<[{o.pitch}, 1]{', ' if o.gm else ''}{space}>"
        if o.gm:
            return f"memref<{o.count}x{o.dtype}, strided<[1], offset: ?>, #gm>"
        return f"memref<{o.count}x{o.dtype}, #ub>"

    def view(self, indent: int, o: Operand, allocs: dict, fit: tuple[int, int] | None, idx: str) -> str:
        v = self.fresh("v")
        if not o.gm:
            c = self.fresh("c")
            self.emit(indent, f"{c} = arith.constant {o.off} : index")
            if o.rows == 1:
                self.emit(indent, f"{v} = memref.view {allocs[o.where]}[{c}][] : memref<{o.where[2]}xi8, #ub> to "
                                  f"{self.type_of(o)}")
                return v
            # rows `pitch` apart: a 1-D view from the first row's start to the last row's end, recast
            span = (o.rows - 1) * o.pitch + o.count
            if o.off + span * np.dtype(_NUMPY[o.dtype]).itemsize > o.where[2]:
                raise Refused(f"{o.rows} rows {o.pitch} elements apart from byte {o.off} run past the end of a UB "
                              f"buffer of {o.where[2]} bytes")
            w = self.fresh("v")
            flat = f"memref<{span}x{o.dtype}, #ub>"
            self.emit(indent, f"{w} = memref.view {allocs[o.where]}[{c}][] : memref<{o.where[2]}xi8, #ub> to {flat}")
            self.emit(indent, f"{v} = memref.reinterpret_cast {w} to offset: [0], sizes: [{o.rows}, {o.count}], "
                              f"strides: [{o.pitch}, 1] : {flat} to {self.type_of(o)}")
            return v
        base, step = fit
        off = self.fresh("o")
        self.emit(indent, f"{off} = affine.apply affine_map<(d0) -> (d0 * {step} + {base})>({idx})")
        if o.rows == 1:
            self.emit(indent, f"{v} = memref.subview %arg{o.where}[{off}] [{o.count}] [1] : {self.gm_type(o.where)} "
                              f"to {self.type_of(o)}")
        else:
            self.emit(indent, f"{v} = memref.reinterpret_cast %arg{o.where} to offset: [{off}], sizes: [{o.rows}, "
                              f"{o.count}], strides: [{o.pitch}, 1] : {self.gm_type(o.where)} to {self.type_of(o)}")
        return v


def _literal(value, typ: str) -> str:
    """An exact MLIR literal: floats by their bit pattern (MLIR's decimal form needs a '.')."""
    if typ in ("f16", "f32", "bf16"):
        import ml_dtypes
        dtype = {"f16": np.float16, "f32": np.float32, "bf16": ml_dtypes.bfloat16}[typ]
        bits = np.array(value, dtype=dtype).view(np.uint16 if typ != "f32" else np.uint32)
        return f"0x{int(bits):X}"
    return str(int(value))


def _function(w: _Writer, launch: Launch, index: int, name: str) -> tuple[int, int]:
    """One launch as an entry function; (its ops, its block groups)."""
    gm_index = {buf: k for k, (buf, *_) in enumerate(launch.gm_args)}
    programs = {b: [translate(c, gm_index, (index, b)) for c in calls] for b, calls in sorted(launch.blocks.items())}
    groups: dict[tuple, list[int]] = {}
    for b, ops in programs.items():
        groups.setdefault(tuple(op.shape() for op in ops), []).append(b)
    if len(programs) < launch.block_dim:   # blocks that made no data call: an empty branch
        groups.setdefault((), []).extend(b for b in range(launch.block_dim) if b not in programs)
    total = sum(len(programs[bs[0]]) if bs[0] in programs else 0 for bs in groups.values())
    w.gm = launch.gm_args
    params = ", ".join(f"%arg{k}: {w.gm_type(k)}" for k in range(len(launch.gm_args)))
    w.emit(1, f"func.func @{name}({params}) attributes {{hacc.entry, hacc.function_kind = "
              f"#hacc.function_kind<DEVICE>}} {{", launch.line, loc=False)
    w.emit(2, "%bi = hivm.hir.get_block_idx -> i64")
    w.emit(2, "%idx = arith.index_cast %bi : i64 to index")
    ordered = sorted(groups.values(), key=lambda bs: bs[0])
    for k, blocks in enumerate(ordered):
        ops = programs.get(blocks[0], [])
        fits = _affine(blocks, [[o for op in programs[b] for o in op.gm_offsets()] for b in blocks]) if ops else []
        indent = 2
        if len(ordered) > 1:
            if blocks != list(range(blocks[0], blocks[-1] + 1)):
                raise Refused(f"blocks {blocks[0]}, {blocks[1]}, ... run one program but are not a range of indices")
            cond = w.fresh("in")
            lo, hi = w.fresh("c"), w.fresh("c")
            w.emit(2 + k, f"{lo} = arith.constant {blocks[0]} : index")
            w.emit(2 + k, f"{hi} = arith.constant {blocks[-1] + 1} : index")
            a, b2 = w.fresh("ge"), w.fresh("lt")
            w.emit(2 + k, f"{a} = arith.cmpi uge, %idx, {lo} : index")
            w.emit(2 + k, f"{b2} = arith.cmpi ult, %idx, {hi} : index")
            w.emit(2 + k, f"{cond} = arith.andi {a}, {b2} : i1")
            w.emit(2 + k, f"scf.if {cond} {{")
            indent = 3 + k
        w.body(indent, ops, fits, "%idx")
        if len(ordered) > 1:
            w.emit(2 + k, "} else {")
    for k in reversed(range(len(ordered))):
        if len(ordered) > 1:
            w.emit(2 + k, "}")
    w.emit(2, "return")
    w.emit(1, "}")
    return total, len(ordered)


def emit_module(rec: Recording, filename: str) -> Exported:
    """Every launch of forward(), in order, as one entry function each."""
    w = _Writer(filename, [])
    w.emit(0, "#gm = #hivm.address_space<gm>")
    w.emit(0, "#ub = #hivm.address_space<ub>")
    w.emit(0, "module {")
    functions, ops, groups, gm = [], 0, 0, {}
    seen: dict[str, int] = {}
    for i, launch in enumerate(rec.launches):
        seen[launch.name] = seen.get(launch.name, 0) + 1
        name = launch.name if seen[launch.name] == 1 else f"{launch.name}_{seen[launch.name] - 1}"
        n, g = _function(w, launch, i, name)
        ops, groups = ops + n, groups + g
        if ops > MAX_OPS:
            raise Refused(f"the unrolled program has over {MAX_OPS} ops: rolling loops back is not done yet")
        functions.append(Function(name, launch.block_dim, [buf for buf, *_ in launch.gm_args]))
        gm.update({buf: (np.dtype(dtype), n, is_input) for buf, dtype, n, is_input in launch.gm_args})
    w.emit(0, "}")
    return Exported(text="\n".join(w.out) + "\n", kernel=", ".join(f.name for f in functions),
                    blocks=sum(f.blocks for f in functions), groups=groups, ops=ops, lines=w.lines,
                    functions=functions, gm=gm, outputs=rec.outputs)


def export_kernel(source: str, args: list, kwargs: dict | None, *, spec: HardwareSpec,
                  filename: str = "kernel.py") -> Exported:
    """Run the kernel on one case's inputs and write its launch as AscendNPU IR, or say why not."""
    rec: Recording = record(source, args, kwargs, spec=spec, filename=filename)
    if rec.error is not None:
        where = f" (line {rec.error.line})" if rec.error.line else ""
        return Exported(refusal=f"the kernel fails on this case: {rec.error.type}{where}: "
                                f"{rec.error.message.splitlines()[0] if rec.error.message else ''}")
    if rec.taint is not None:
        what, line = rec.taint
        return Exported(refusal=f"line {line} uses a value read from tensor data in {what}: control flow on tensor "
                                f"data is not exported")
    if rec.host_reads:
        return Exported(refusal="forward() reads tensor data back (read_back): a launch that depends on tensor "
                                "data is not exported")
    if not rec.launches:
        return Exported(refusal="forward() launches no kernel")
    missing = [b for b in rec.outputs if not any(b == buf for launch in rec.launches for buf, *_ in launch.gm_args)]
    if missing:
        return Exported(refusal="an output of forward() is not an argument of any launch (a host-side view or copy)")
    try:
        return emit_module(rec, filename)
    except Refused as exc:
        return Exported(refusal=str(exc))
