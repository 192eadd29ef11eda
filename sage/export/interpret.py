"""A reference interpreter of the IR subset emit.py writes: an independent reading of the exported
text, to check that it computes what the kernel computes (the vendor pipeline checks legality,
not meaning).

It reads the text alone, never the recording: every op is parsed from its line and run with
numpy, block after block on one set of GM arrays, `hivm.hir.get_block_idx` giving the block.
Local memory starts filled with a NaN-like byte pattern, so a read of bytes no op wrote shows
in the output. A line outside the subset raises InterpretError: the interpreter grows with the
emitter, never guesses.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np

TYPES = {"f16": np.float16, "f32": np.float32, "bf16": ml_dtypes.bfloat16, "i8": np.int8, "i16": np.int16,
         "i32": np.int32, "i64": np.int64, "i1": np.bool_, "index": np.int64}
BITS = {"f16": np.uint16, "bf16": np.uint16, "f32": np.uint32}
UNINITIALISED = 0xFF   # all-ones bytes: NaN in every float type
BINARY = {"vadd": np.add, "vsub": np.subtract, "vmul": np.multiply, "vdiv": np.divide, "vmax": np.maximum,
          "vmin": np.minimum, "vand": np.bitwise_and, "vor": np.bitwise_or}
UNARY = {"vexp": np.exp, "vln": np.log, "vabs": np.abs, "vrec": lambda a: np.divide(1, a, dtype=a.dtype),
         "vsqrt": np.sqrt, "vrsqrt": lambda a: np.divide(1, np.sqrt(a), dtype=a.dtype),
         "vrelu": lambda a: np.maximum(a, 0).astype(a.dtype), "vnot": np.invert}
SCALAR_OPS = {"arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply, "arith.divf": np.divide,
              "math.powf": np.power}
SCALAR_UNARY = {"arith.negf": np.negative, "math.sqrt": np.sqrt, "math.exp": np.exp, "math.log": np.log,
                "math.absf": np.abs}
ROUNDING = {"rint": np.rint, "round": lambda a: np.trunc(a + np.copysign(0.5, a)), "floor": np.floor,
            "ceil": np.ceil, "trunc": np.trunc}
REDUCE = {"sum": np.sum, "max": np.max, "min": np.min}

_MEMREF = re.compile(r"memref<(\d+)x([a-z]+\d*)")


class InterpretError(Exception):
    pass


def _names(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _operands(rest: str, key: str) -> list[str]:
    """The SSA names of `ins(%a, %b : ...)` or `outs(...)`."""
    i = rest.find(f"{key}(")
    if i < 0:
        return []
    return _names(rest[i + len(key) + 1:rest.index(" : ", i)])


def _constant(literal: str, typ: str):
    if typ in BITS and literal.startswith("0x"):
        return np.array(int(literal, 16), dtype=BITS[typ]).view(TYPES[typ])[()]
    return TYPES[typ](int(literal))


def run(text: str, args: list[np.ndarray], blocks: int, name: str | None = None) -> None:
    """Run entry function `name` (default: the first) for blocks 0..blocks-1 on `args` (flat arrays,
    written in place)."""
    lines = [ln.split(" loc(")[0].strip() for ln in text.splitlines()]
    start = "func.func @" if name is None else f"func.func @{name}("
    head = next((ln for ln in lines if ln.startswith(start)), None)
    if head is None:
        raise InterpretError(f"no func.func {name or ''} in the IR")
    params = re.findall(r"(%arg\d+): memref<(\d+)x(\w+), #gm>", head)
    if len(params) != len(args):
        raise InterpretError(f"the function takes {len(params)} arguments, {len(args)} given")
    args = [a.view(np.int8) if a.dtype == np.bool_ else a for a in args]   # bool is i8 in the IR (ops.py)
    for (name, n, typ), a in zip(params, args):
        if a.size != int(n) or a.dtype != np.dtype(TYPES[typ]):
            raise InterpretError(f"{name} is memref<{n}x{typ}>, given {a.dtype}[{a.size}]")
    body = lines[lines.index(head) + 1:]
    for block in range(blocks):
        env = {name: a for (name, _, _), a in zip(params, args)}
        _block(body, env, block)


def _block(body: list[str], env: dict, block: int) -> None:
    active = [True]                       # one entry per open region: does it run?
    conds: list[bool] = []
    for line in body:
        if line.startswith("scf.if "):
            c = active[-1] and bool(env[line.split()[1]])   # (its test is not computed where the region is skipped)
            conds.append(c)
            active.append(active[-1] and c)
            continue
        if line == "} else {":
            active[-1] = active[-2] and not conds[-1]
            continue
        if line == "}":
            if len(active) == 1:
                return                    # the function's end
            active.pop()
            conds.pop()
            continue
        if not active[-1] or not line or line == "return":
            continue
        _op(line, env, block)


def _op(line: str, env: dict, block: int) -> None:
    m = re.match(r"(%\w+) = (\S+) (.*)$", line)
    if m:
        name, op, rest = m.groups()
        env[name] = _value(op, rest, env, block)
        return
    m = re.match(r"memref\.store (%\w+), (%\w+)\[(%\w+)\]", line)
    if m:
        value, dst, idx = m.groups()
        env[dst][int(env[idx])] = env[value]
        return
    m = re.match(r"hivm\.hir\.(\w+) (.*)$", line)
    if not m:
        raise InterpretError(f"not in the exported subset: {line}")
    op, rest = m.groups()
    ins = [env[n] for n in _operands(rest, "ins")]
    (dst,) = [env[n] for n in _operands(rest, "outs")]
    if op in ("load", "store", "copy"):
        dst[...] = ins[0]
    elif op in BINARY:
        dst[...] = BINARY[op](ins[0], ins[1]).astype(dst.dtype)
    elif op in UNARY:
        dst[...] = UNARY[op](ins[0]).astype(dst.dtype)
    elif op == "vbrc":
        dst[...] = ins[0]
    elif op == "vcast":
        mode = re.search(r"round_mode = <(\w+)>", rest).group(1)
        src = ins[0].astype(np.float64)
        dst[...] = (ROUNDING[mode](src) if np.dtype(dst.dtype).kind in "iu" else src).astype(dst.dtype)
    elif op == "vreduce":
        fn = REDUCE[re.match(r"<(\w+)>", rest).group(1)]
        if "reduce_dims = [1]" in rest:      # rows of a 2-D view, one result per row
            dst[...] = fn(ins[0], axis=1, keepdims=True)
        else:
            dst[0] = fn(ins[0])
    else:
        raise InterpretError(f"not in the exported subset: hivm.hir.{op}")


def _value(op: str, rest: str, env: dict, block: int):
    if op == "hivm.hir.get_block_idx":
        return np.int64(block)
    if op == "arith.index_cast":
        return np.int64(env[rest.split()[0]])
    if op == "arith.constant":
        literal, typ = (t.strip() for t in rest.split(":"))
        return _constant(literal, typ)
    if op == "arith.cmpi":
        pred, a, b = re.match(r"(\w+), (%\w+), (%\w+)", rest).groups()
        return {"uge": env[a] >= env[b], "ult": env[a] < env[b]}[pred]
    if op == "arith.andi":
        a, b = re.match(r"(%\w+), (%\w+)", rest).groups()
        return bool(env[a]) and bool(env[b])
    if op == "affine.apply":
        stride, base, arg = re.match(r"affine_map<\(d0\) -> \(d0 \* (-?\d+) \+ (-?\d+)\)>\((%\w+)\)", rest).groups()
        return np.int64(int(env[arg]) * int(stride) + int(base))
    if op == "memref.alloc()":
        n = int(_MEMREF.search(rest).group(1))
        return np.full(n, UNINITIALISED, dtype=np.uint8)
    if op == "memref.view":
        buf, off = re.match(r"(%\w+)\[(%\w+)\]", rest).groups()
        dims, typ = re.search(r"to memref<((?:\d+x)+)(\w+)", rest).groups()
        shape = [int(d) for d in dims.split("x") if d]
        start, size = int(env[off]), int(np.prod(shape)) * np.dtype(TYPES[typ]).itemsize
        if start + size > env[buf].size:
            raise InterpretError(f"view of bytes [{start}, {start + size}) outside {buf} of {env[buf].size}")
        return env[buf][start:start + size].view(TYPES[typ]).reshape(shape)
    if op == "memref.reinterpret_cast":
        src, off, rows, cols, pitch = re.match(
            r"(%\w+) to offset: \[(%\w+|\d+)\], sizes: \[(\d+), (\d+)\], strides: \[(\d+), 1\]", rest).groups()
        start = int(off) if off.isdigit() else int(env[off])
        a, rows, cols, pitch = env[src], int(rows), int(cols), int(pitch)
        if start < 0 or start + (rows - 1) * pitch + cols > a.size:
            raise InterpretError(f"rows from {start} ({rows} x {cols}, pitch {pitch}) outside {src} of {a.size}")
        return np.lib.stride_tricks.as_strided(a[start:], (rows, cols), (pitch * a.itemsize, a.itemsize))
    m = re.match(r"(%\w+)\[0, 0\] \[(\d+), (\d+)\] \[1, 1\]", rest) if op == "memref.subview" else None
    if m:
        return env[m.group(1)][:int(m.group(2)), :int(m.group(3))]
    if op == "memref.subview":
        src, off, n = re.match(r"(%\w+)\[(%\w+)\] \[(\d+)\] \[1\]", rest).groups()
        start = int(env[off])
        if start < 0 or start + int(n) > env[src].size:
            raise InterpretError(f"subview [{start}, {start + int(n)}) outside {src} of {env[src].size} elements")
        return env[src][start:start + int(n)]
    if op == "memref.load":
        src, idx = re.match(r"(%\w+)\[(%\w+)\]", rest).groups()
        return env[src][int(env[idx])].copy()
    if op in ("arith.extf", "arith.truncf"):
        src, typ = re.match(r"(%\w+) : \w+ to (\w+)", rest).groups()
        return TYPES[typ](env[src])
    if op in SCALAR_OPS:
        a, b = re.match(r"(%\w+), (%\w+)", rest).groups()
        return np.float32(SCALAR_OPS[op](np.float32(env[a]), np.float32(env[b])))
    if op in SCALAR_UNARY:
        return np.float32(SCALAR_UNARY[op](np.float32(env[rest.split()[0]])))
    raise InterpretError(f"not in the exported subset: {op}")


def run_exported(exported, tensors: list[np.ndarray]) -> list[np.ndarray]:
    """Run an export's functions in launch order on forward()'s tensors (`tensors`, in argument order:
    allocation id k < len(tensors) is tensor k, sage.npu.execute); every other GM tensor starts as NaN
    bytes. Returns forward()'s outputs, flat."""
    gm = {}
    for buf, (dtype, n, is_input) in exported.gm.items():
        if is_input:
            if buf >= len(tensors):
                raise InterpretError(f"tensor {buf} of forward() was not given")
            gm[buf] = np.ascontiguousarray(tensors[buf]).reshape(-1).copy()
        else:
            gm[buf] = np.full(n * dtype.itemsize, UNINITIALISED, np.uint8).view(dtype)
    for f in exported.functions:
        run(exported.text, [gm[b] for b in f.args], f.blocks, f.name)
    return [gm[b] for b in exported.outputs]
