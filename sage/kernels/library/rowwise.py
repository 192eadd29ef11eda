"""Last-axis row kernels: reductions (sum/mean/max/min), softmax / log-softmax, layer norm
and RMS norm.

The input is viewed as [R, C] and each block takes a contiguous run of rows. Two paths:

- rows fit in UB (C padded to a UB block <= the tile): a tile holds `rpt` whole rows; each row is
  reduced with `ReduceSum`/`ReduceMax` (the result read back by the scalar unit) and
  transformed in place, then the tile is written out;
- long rows: each row is streamed in chunks, once per pass (softmax reads a row three times:
  max, sum of exponentials, output; layer norm twice: moments, output), accumulating
  per-lane partials with `Add`/`Max` and reducing them once per row.

Arithmetic is in float32 for half inputs when `fp32_compute` (the vendor default).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from sage.kernels.library.knobs import UB_RESERVED, VENDOR_KNOBS, Knobs
from sage.kernels.library.source import (
    DTYPE_SIZE, FLOATS, FOLD_OPS, HEADER, cast_line, compute_dtype, dsl_dtype, method, ub_helpers,
)
from sage.kernels.target import Target, target_for

RowOp = Literal[
    "sum", "mean", "max", "min", "softmax", "log_softmax", "layer_norm", "rms_norm",
]
REDUCTIONS = {"sum", "mean", "max", "min"}


class RowSpec(BaseModel):
    """A last-axis row operator. Norms take `affine` weight (and for layer norm, bias) of
    length C after the input."""

    model_config = ConfigDict(frozen=True)

    op: RowOp
    dtype: str
    affine: bool = False
    eps: float = 1e-5
    name: str = "row"

    @field_validator("dtype")
    @classmethod
    def _float(cls, v: str) -> str:
        if v not in FLOATS:
            raise ValueError(f"row kernels take float inputs, got {v!r}")
        return v


def row_source(spec: RowSpec, knobs: Knobs = VENDOR_KNOBS, *, target: Target | None = None,
               with_forward: bool = True) -> str:
    """The text of a kernel file for `spec` with schedule `knobs` on `target` (the default
    preset's when None); defines `<name>_launch(x, [w, b,] y, R, C)` and optionally `forward`."""
    return _RowWriter(spec, knobs, target or target_for()).write(with_forward)


def row_tiling(spec: RowSpec, knobs: Knobs = VENDOR_KNOBS, target: Target | None = None) -> tuple[int, int]:
    """(TILE, ALIGN) of the kernel for (spec, knobs, target), as its source's host code uses them."""
    w = _RowWriter(spec, knobs, target or target_for())
    return w.tile, w.align


class _RowWriter:
    def __init__(self, spec: RowSpec, knobs: Knobs, target: Target):
        self.spec, self.knobs, self.target = spec, knobs, target
        self.block = target.block_bytes
        self.ct = compute_dtype([spec.dtype], knobs.fp32_compute)
        self.dt = spec.dtype
        self.sz, self.csz = DTYPE_SIZE[self.dt], DTYPE_SIZE[self.ct]
        self.align = self.block // min(self.sz, self.csz)
        self.reduce = spec.op in REDUCTIONS
        self.params = []
        if spec.affine and spec.op in ("layer_norm", "rms_norm"):
            self.params = ["w", "b"] if spec.op == "layer_norm" else ["w"]
        self.cls = "Kernel" + "".join(p.capitalize() for p in spec.name.split("_"))
        # UB per tile element: input and output queues, the fp32 row copy, one temp, two
        # per-lane accumulators, and the affine parameters with their fp32 copies.
        self.per_elem = knobs.buffer_num * 2 * self.sz + self.csz * (4 + len(self.params)) + self.sz * len(self.params)
        n_bufs = 2 * knobs.buffer_num + 6 + 3 * len(self.params)
        self.ub_avail = target.ub_bytes - UB_RESERVED - self.block * n_bufs
        self.tile = max(self.align, min(knobs.tile_len, self.ub_avail // self.per_elem) // self.align * self.align)

    # -- pieces shared by both paths -------------------------------------------------------
    def reduce_line(self, kind: str, dst: str, src: str, count: str) -> list[str]:
        fn = {"sum": "ReduceSum", "max": "ReduceMax", "min": "ReduceMin"}[kind]
        fold: list[str] = []
        if self.knobs.fold_reduce:
            # ReduceSum/ReduceMax pay a cross-lane step per vector repeat (~7 cycles) plus a
            # second level; halving the row with Add/Max/Min (~2 cycles a repeat) down to one
            # repeat first does the same work in a third of the vector time. Accumulators of
            # the long-row path are dead once reduced and fold in place; in the rows-fit path
            # `self.acc` is free scratch of a whole tile.
            half = FOLD_OPS[kind]
            buf = src if src in ("self.acc", "self.acc2") else "self.acc"
            fold = [f"fr, fn = fold_rows({half}, {buf}, {src}, {count}, {self.target.repeat_bytes // self.csz})"]
            src, count = "fr", "fn"
        return fold + [f"{fn}(self.red, {src}, self.work, {count})",
                "SetFlag(HardEvent.V_S, 0)", "WaitFlag(HardEvent.V_S, 0)",
                f"{dst} = self.red.GetValue(0)",
                # the next reduction rewrites `red` on V: order it after this scalar read
                "SetFlag(HardEvent.S_V, 0)", "WaitFlag(HardEvent.S_V, 0)"]

    def to_compute(self, dst: str, src: str, count: str) -> str:
        return cast_line(dst, src, self.dt, self.ct, count) if self.dt != self.ct else f"Adds({dst}, {src}, 0, {count})"

    def from_compute(self, dst: str, src: str, count: str) -> str:
        return cast_line(dst, src, self.ct, self.dt, count) if self.dt != self.ct else f"Adds({dst}, {src}, 0, {count})"

    def row_body(self, xr: str, count: str) -> list[str]:
        """Transforms one fp32 row in place (softmax, norms) or leaves its result in `v`."""
        op, eps, C = self.spec.op, self.spec.eps, count
        if op in ("sum", "mean"):
            body = self.reduce_line("sum", "v", xr, C)
            return body + (["v = v / self.C"] if op == "mean" else [])
        if op in ("max", "min"):
            return self.reduce_line(op, "v", xr, C)
        if op in ("softmax", "log_softmax"):
            body = self.reduce_line("max", "m", xr, C)
            body.append(f"Adds({xr}, {xr}, -m, {C})")
            if op == "softmax":
                body.append(f"Exp({xr}, {xr}, {C})")
                body += self.reduce_line("sum", "ssum", xr, C)
                body.append(f"Muls({xr}, {xr}, 1.0 / ssum, {C})")
            else:
                body.append(f"Exp(self.tmp, {xr}, {C})")
                body += self.reduce_line("sum", "ssum", "self.tmp", C)
                body.append(f"Adds({xr}, {xr}, -math.log(ssum), {C})")
            return body
        if op == "layer_norm":
            body = self.reduce_line("sum", "mean", xr, C)
            body += ["mean = mean / self.C", f"Adds({xr}, {xr}, -mean, {C})", f"Mul(self.tmp, {xr}, {xr}, {C})"]
            body += self.reduce_line("sum", "var", "self.tmp", C)
            body.append(f"Muls({xr}, {xr}, 1.0 / math.sqrt(var / self.C + {eps!r}), {C})")
        else:  # rms_norm
            body = [f"Mul(self.tmp, {xr}, {xr}, {C})"] + self.reduce_line("sum", "ms", "self.tmp", C)
            body.append(f"Muls({xr}, {xr}, 1.0 / math.sqrt(ms / self.C + {eps!r}), {C})")
        if "w" in self.params:
            body.append(f"Mul({xr}, {xr}, self.wc, {C})")
        if "b" in self.params:
            body.append(f"Add({xr}, {xr}, self.bc, {C})")
        return body

    # -- file -------------------------------------------------------------------------------
    def write(self, with_forward: bool) -> str:
        spec, knobs = self.spec, self.knobs
        gms = ", ".join(["x", *self.params, "y"])
        lines = [HEADER, f"# {spec.name}: last-axis {spec.op} of {self.dt} rows, compute in {self.ct}",
                 f"BUFFER_NUM = {knobs.buffer_num}", f"TILE_LEN = {knobs.tile_len}", f"CORES = {self.target.vector_cores}",
                 f"BLOCK_DIM = {knobs.block_dim}", f"ALIGN = {self.align}",
                 f"# UB: {self.ub_avail} bytes for tiles at {self.per_elem} bytes per tile element",
                 f"TILE = {self.tile}", "", "",
                 f"class {self.cls}:"]
        lines.append(method("Init", f"{gms}, R, C, rpt, rpb, tile", self.init()))
        lines.append(method("Process", "", [
            "if self.wide:",
            "    for r in range(self.r0, self.r1):",
            "        self.ProcessLongRow(r)",
            "    return",
            "# The row loop stalls the scalar unit on each reduction result, so the next",
            "# tile's copy is issued before this tile's compute (software prefetch).",
            "r0 = self.r0",
            "if r0 < self.r1:",
            "    self.CopyIn(r0 * self.C, min(self.rpt, self.r1 - r0), self.C)",
            "while r0 < self.r1:",
            "    nr = min(self.rpt, self.r1 - r0)",
            "    nxt = r0 + nr",
            "    if BUFFER_NUM > 1 and nxt < self.r1:",
            "        self.CopyIn(nxt * self.C, min(self.rpt, self.r1 - nxt), self.C)",
            "    self.Compute(nr)",
            "    self.CopyOut(r0, nr)",
            "    if BUFFER_NUM == 1 and nxt < self.r1:",
            "        self.CopyIn(nxt * self.C, min(self.rpt, self.r1 - nxt), self.C)",
            "    r0 = nxt",
        ]))
        lines.append(method("CopyIn", "off, nr, nc", [
            f"x = self.qx.AllocTensor({dsl_dtype(self.dt)})",
            f"DataCopyPad(x, self.gx[off], DataCopyExtParams(nr, nc * {self.sz}, (self.C - nc) * {self.sz}, "
            f"row_gap(nc, {self.sz}), 0), DataCopyPadExtParams(False, 0, 0, 0))",
            "self.qx.EnQue(x)",
        ]))
        lines.append(method("Compute", "nr", self.compute_fit()))
        lines.append(method("CopyOut", "r0, nr", self.copy_out_fit()))
        lines.append(method("ProcessLongRow", "r", self.long_row()))
        lines.append(method("ChunkIn", "r, c0, nc", [
            "self.CopyIn(r * self.C + c0, 1, nc)",
            f"x = self.qx.DeQue({dsl_dtype(self.dt)})",
            self.to_compute("self.xc", "x", "nc"),
            "self.qx.FreeTensor(x)",
        ]))
        lines.append(method("ChunkOut", "r, c0, nc", [
            f"y = self.qy.AllocTensor({dsl_dtype(self.dt)})",
            self.from_compute("y", "self.xc", "nc"),
            "self.qy.EnQue(y)",
            f"y = self.qy.DeQue({dsl_dtype(self.dt)})",
            f"DataCopyPad(self.gy[r * self.C + c0], y, DataCopyExtParams(1, nc * {self.sz}, 0, 0, 0))",
            "self.qy.FreeTensor(y)",
        ]))
        lines.append(method("LoadParam", "q, g, dst, c0, nc", [
            f"p = q.AllocTensor({dsl_dtype(self.dt)})",
            f"DataCopyPad(p, g[c0], DataCopyExtParams(1, nc * {self.sz}, 0, 0, 0), DataCopyPadExtParams(False, 0, 0, 0))",
            "q.EnQue(p)",
            f"p = q.DeQue({dsl_dtype(self.dt)})",
            self.to_compute("dst", "p", "nc"),
            "q.FreeTensor(p)",
        ]))
        lines.append(ub_helpers(self.block) + (_FOLD if knobs.fold_reduce else ""))
        lines.append(f"@kernel\ndef {spec.name}_kernel({gms}, R, C, rpt, rpb, tile):\n"
                     f"    op = {self.cls}()\n    op.Init({gms}, R, C, rpt, rpb, tile)\n    op.Process()\n\n")
        lines.append(self.launch())
        if with_forward:
            lines.append(self.forward())
        return "\n".join(lines)

    def init(self) -> list[str]:
        dt, ct = dsl_dtype(self.dt), dsl_dtype(self.ct)
        out_len = "R" if self.reduce else "R * C"
        body = ["self.R = R", "self.C = C", "self.rpt = rpt", "self.tile = tile", "self.r0 = GetBlockIdx() * rpb",
                "self.r1 = min(R, self.r0 + rpb)", "self.wide = (C + ALIGN - 1) // ALIGN * ALIGN > tile",
                "self.pipe = TPipe()", "self.gx = GlobalTensor()", "self.gx.SetGlobalBuffer(x, 0, R * C)",
                "self.gy = GlobalTensor()", f"self.gy.SetGlobalBuffer(y, 0, {out_len})",
                "self.qx = TQue(TPosition.VECIN, BUFFER_NUM)",
                f"self.pipe.InitBuffer(self.qx, BUFFER_NUM, buf_bytes(tile, {self.sz}))",
                "self.qy = TQue(TPosition.VECOUT, BUFFER_NUM)",
                f"self.pipe.InitBuffer(self.qy, BUFFER_NUM, buf_bytes(tile, {self.sz}))"]
        for name in ("xc", "tmp", "acc", "acc2"):
            body += [f"self.b_{name} = TBuf(TPosition.VECCALC)",
                     f"self.pipe.InitBuffer(self.b_{name}, buf_bytes(tile, {self.csz}))",
                     f"self.{name} = self.b_{name}.Get({ct})"]
        body += ["self.b_red = TBuf(TPosition.VECCALC)", "self.pipe.InitBuffer(self.b_red, 64)",
                 f"self.red = self.b_red.Get({ct})",
                 "self.b_work = TBuf(TPosition.VECCALC)", "self.pipe.InitBuffer(self.b_work, 1024)",
                 f"self.work = self.b_work.Get({ct})"]
        for p in self.params:
            body += [f"self.g{p} = GlobalTensor()", f"self.g{p}.SetGlobalBuffer({p}, 0, C)",
                     f"self.q{p} = TQue(TPosition.VECIN, 1)",
                     f"self.pipe.InitBuffer(self.q{p}, 1, buf_bytes(tile, {self.sz}))",
                     f"self.b_{p}c = TBuf(TPosition.VECCALC)",
                     f"self.pipe.InitBuffer(self.b_{p}c, buf_bytes(tile, {self.csz}))",
                     f"self.{p}c = self.b_{p}c.Get({ct})"]
        if self.params:
            # Short rows: the affine parameters are loaded once per block and kept in UB.
            body.append("if not self.wide:")
            for p in self.params:
                body += [f"    self.LoadParam(self.q{p}, self.g{p}, self.{p}c, 0, C)"]
        return body

    def compute_fit(self) -> list[str]:
        body = ["s = (self.C + ALIGN - 1) // ALIGN * ALIGN", f"x = self.qx.DeQue({dsl_dtype(self.dt)})",
                self.to_compute("self.xc", "x", "nr * s"), "self.qx.FreeTensor(x)"]
        if self.reduce:
            body.append(f"y = self.qy.AllocTensor({dsl_dtype(self.dt)})")
        body.append("for r in range(nr):")
        body += ["    " + ln for ln in self.row_body("self.xc[r * s]", "self.C")]
        if self.reduce:
            body.append("    y.SetValue(r, v)")
            body += ["SetFlag(HardEvent.S_MTE3, 0)", "WaitFlag(HardEvent.S_MTE3, 0)"]
        else:
            body += [f"y = self.qy.AllocTensor({dsl_dtype(self.dt)})", self.from_compute("y", "self.xc", "nr * s")]
        body.append("self.qy.EnQue(y)")
        return body

    def copy_out_fit(self) -> list[str]:
        body = [f"y = self.qy.DeQue({dsl_dtype(self.dt)})"]
        if self.reduce:
            # The results were written by the scalar unit, which the VECOUT queue does not order
            # (its producer is V): the scalar unit waits for this copy before it reuses the buffer.
            body += [f"DataCopyPad(self.gy[r0], y, DataCopyExtParams(1, nr * {self.sz}, 0, 0, 0))",
                     "SetFlag(HardEvent.MTE3_S, 0)", "WaitFlag(HardEvent.MTE3_S, 0)"]
        else:
            body.append(f"DataCopyPad(self.gy[r0 * self.C], y, DataCopyExtParams(nr, self.C * {self.sz}, "
                        f"row_gap(self.C, {self.sz}), 0, 0))")
        body.append("self.qy.FreeTensor(y)")
        return body

    def long_row(self) -> list[str]:
        """Streams one long row in chunks of `tile` elements, one pass per statistic."""
        op = self.spec.op
        ch = ["n_ch = (self.C + self.tile - 1) // self.tile"]
        loop = "for k in range(n_ch):"
        chunk = ["    c0 = k * self.tile", "    nc = min(self.tile, self.C - c0)", "    self.ChunkIn(r, c0, nc)"]

        def accumulate(fn: str, acc: str, src: str) -> list[str]:
            return ["    if k == 0:", f"        Adds({acc}, {src}, 0, nc)", "    else:",
                    f"        {fn}({acc}, {acc}, {src}, nc)"]

        def finish(kind: str, dst: str, acc: str) -> list[str]:
            # The first chunk is the longest, so the accumulator holds min(tile, C) lanes.
            return self.reduce_line(kind, dst, acc, "min(self.tile, self.C)")

        if op in REDUCTIONS:
            kind = "sum" if op in ("sum", "mean") else op
            fn = FOLD_OPS[kind]
            ch += [loop, *chunk, *accumulate(fn, "self.acc", "self.xc"), *finish(kind, "v", "self.acc")]
            if op == "mean":
                ch.append("v = v / self.C")
            ch += [f"y = self.qy.AllocTensor({dsl_dtype(self.dt)})", "y.SetValue(0, v)",
                   "SetFlag(HardEvent.S_MTE3, 0)", "WaitFlag(HardEvent.S_MTE3, 0)", "self.qy.EnQue(y)",
                   f"y = self.qy.DeQue({dsl_dtype(self.dt)})",
                   f"DataCopyPad(self.gy[r], y, DataCopyExtParams(1, {self.sz}, 0, 0, 0))",
                   "SetFlag(HardEvent.MTE3_S, 0)", "WaitFlag(HardEvent.MTE3_S, 0)", "self.qy.FreeTensor(y)"]
            return ch
        if op in ("softmax", "log_softmax"):
            ch += [loop, *chunk, *accumulate("Max", "self.acc", "self.xc"), *finish("max", "m", "self.acc")]
            ch += [loop, *chunk, "    Adds(self.xc, self.xc, -m, nc)", "    Exp(self.xc, self.xc, nc)",
                   *accumulate("Add", "self.acc", "self.xc"), *finish("sum", "ssum", "self.acc")]
            ch += [loop, *chunk, "    Adds(self.xc, self.xc, -m, nc)"]
            if op == "softmax":
                ch += ["    Exp(self.xc, self.xc, nc)", "    Muls(self.xc, self.xc, 1.0 / ssum, nc)"]
            else:
                ch += ["    Adds(self.xc, self.xc, -math.log(ssum), nc)"]
            ch.append("    self.ChunkOut(r, c0, nc)")
            return ch
        # Norms: one pass for sum and sum of squares, one pass to normalise.
        eps = self.spec.eps
        ch += [loop, *chunk, "    Mul(self.tmp, self.xc, self.xc, nc)",
               *accumulate("Add", "self.acc2", "self.tmp")]
        if op == "layer_norm":
            ch += accumulate("Add", "self.acc", "self.xc")
            ch += finish("sum", "mean", "self.acc") + finish("sum", "sq", "self.acc2")
            ch += ["mean = mean / self.C", f"rstd = 1.0 / math.sqrt(max(sq / self.C - mean * mean, 0.0) + {eps!r})"]
        else:
            ch += finish("sum", "sq", "self.acc2")
            ch += ["mean = 0.0", f"rstd = 1.0 / math.sqrt(sq / self.C + {eps!r})"]
        ch += [loop, *chunk, "    Adds(self.xc, self.xc, -mean, nc)", "    Muls(self.xc, self.xc, rstd, nc)"]
        for p, fn in zip(self.params, ("Mul", "Add")):
            ch += [f"    self.LoadParam(self.q{p}, self.g{p}, self.{p}c, c0, nc)",
                   f"    {fn}(self.xc, self.xc, self.{p}c, nc)"]
        ch.append("    self.ChunkOut(r, c0, nc)")
        return ch

    def launch(self) -> str:
        gms = ", ".join(["x", *self.params, "y"])
        return (
            f"def {self.spec.name}_launch({gms}, R, C):\n"
            "    cores = BLOCK_DIM or CORES\n"
            "    tile = TILE\n"
            "    stride = (C + ALIGN - 1) // ALIGN * ALIGN\n"
            "    rpb = (R + cores - 1) // cores\n"
            "    rpt = max(1, min(tile // stride, rpb)) if stride <= tile else 1\n"
            "    block_dim = (R + rpb - 1) // rpb\n"
            f"    {self.spec.name}_kernel[block_dim]({gms}, R, C, rpt, rpb, tile)\n\n"
        )

    def forward(self) -> str:
        args = ", ".join(["x", *self.params])
        out_shape = "x.shape[:-1]" if self.reduce else "x.shape"
        return (
            f"def forward({args}):\n"
            "    C = x.shape[-1]\n"
            "    R = x.numel() // C\n"
            f"    y = empty({out_shape}, {dsl_dtype(self.dt)})\n"
            f"    {self.spec.name}_launch({', '.join(['x', *self.params, 'y'])}, R, C)\n"
            "    return y\n"
        )


_FOLD = '''
def fold_rows(fn, buf, src, n, lanes):
    # Halves n (a multiple of `lanes` at each step) with one vector op per level; the tail
    # beyond 2h is merged into the first part. Returns the buffer and count left to reduce.
    cur = src
    while n >= 2 * lanes:
        h = n // 2 // lanes * lanes
        fn(buf, cur, cur[h], h)
        off = 2 * h
        while off < n:
            c = min(n - off, h)
            fn(buf, buf, cur[off], c)
            off += c
        cur = buf
        n = h
    return cur, n

'''
