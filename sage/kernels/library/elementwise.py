"""Fused elementwise kernels over a chain of ops, with row/column/scalar broadcast.

The output is viewed as [R, C] (C = the broadcast row length; R = 1 when no input is
row- or column-broadcast, so the data is one flat row). Tiles are `rows_per_tile` rows by
`col_tile` columns; tiles are dealt to blocks in contiguous runs. Each row of a tile sits
in UB padded to a whole UB block (32 B), so one vector instruction covers a whole tile
whatever C is, and `DataCopyPad` (or `DataCopy` for aligned contiguous tiles when
`copy="auto"`) moves it. Block, UB and repeat sizes and the core count come from the
`Target` (a preset).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator

from sage.kernels.chain import COMPUTE_KIND, Expr, Kind, Op, inputs_of, kind_of, op_names, render
from sage.kernels.library.knobs import UB_RESERVED, VENDOR_KNOBS, Knobs
from sage.kernels.library.source import (
    DTYPE_SIZE, HEADER, cast_line, check_dtype, compute_dtype, dsl_dtype, method, ub_helpers,
)
from sage.kernels.lowering import Lowerer, Val
from sage.kernels.target import Target, target_for
from sage.kernels.vector_ops import INT_OPS, VECTOR_OPS


class ElementwiseSpec(BaseModel):
    """What a fused elementwise kernel computes: `out = expr(x0, x1, ...)`."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    expr: Expr
    in_dtypes: tuple[str, ...]
    kinds: tuple[Kind, ...]
    out_dtype: str
    name: str = "ew"
    # Grouped broadcast: (trailing axes forming C, axes before them forming G); the output is
    # [B, G, C] and tiles stay inside one group. None: the plain [R, C] layout.
    group_axes: tuple[int, int] | None = None

    @field_validator("in_dtypes")
    @classmethod
    def _dtypes(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(check_dtype(d) for d in v)


def elementwise_source(spec: ElementwiseSpec, knobs: Knobs = VENDOR_KNOBS, *, target: Target | None = None,
                       with_forward: bool = True) -> str:
    """The text of a kernel file computing `spec` with schedule `knobs` on `target` (the
    default preset's when None).

    The file defines `<name>_launch(*inputs, out)` (host tiling + launch) and, with
    `with_forward`, a `forward(*inputs)` that allocates the output and calls it.
    """
    n_in = len(spec.in_dtypes)
    if len(spec.kinds) != n_in:
        raise ValueError("kinds and in_dtypes must have one entry per input")
    used = inputs_of(spec.expr)
    if used - set(range(n_in)):
        raise ValueError(f"expression uses inputs {sorted(used)} but only {n_in} are declared")
    if kind_of(spec.expr, list(spec.kinds)) != "full":
        raise ValueError("the chain's result must be full-shape (some input must be full, or a row and a column)")
    ct = chain_compute_dtype(spec, knobs)
    if ct == "int32":
        _check_int_ops(spec.expr)
    return _ElementwiseWriter(spec, knobs, ct, target or target_for()).write(with_forward)


def chain_compute_dtype(spec: ElementwiseSpec, knobs: Knobs) -> str:
    """The dtype the chain's arithmetic runs in. Bool inputs are 0/1 numbers: alone they
    compute in float16 (exact for 0 and 1); int32 inputs stay int32 unless the chain needs
    an op the vector unit lacks on integers (division, floor), which then runs in float32."""
    values = [d for d in spec.in_dtypes if d != "bool"]
    if not values:
        return "float16"
    ct = compute_dtype(values, knobs.fp32_compute)
    # Integer ops the vector unit lacks but float32 computes exactly for operands below 2^24
    # (floor division of such integers: one rounding of the quotient, then floor).
    non_int = op_names(spec.expr) - INT_OPS
    if ct == "int32" and non_int and all(VECTOR_OPS[n].via_float for n in non_int):
        return "float32"
    return ct


def elementwise_tiling(spec: ElementwiseSpec, knobs: Knobs = VENDOR_KNOBS,
                       target: Target | None = None) -> tuple[int, int]:
    """(TILE, ALIGN) of the kernel for (spec, knobs, target): elements per tile and the row
    alignment in elements, as its source's host code uses them."""
    writer = _ElementwiseWriter(spec, knobs, chain_compute_dtype(spec, knobs), target or target_for())
    writer.compute_body()
    return writer.tile, writer.align


def _check_int_ops(e: Expr) -> None:
    if isinstance(e, Op):
        if e.name not in INT_OPS:
            raise ValueError(f"op {e.name!r} is not supported on int32 operands")
        for a in e.args:
            _check_int_ops(a)


class _ElementwiseWriter:
    def __init__(self, spec: ElementwiseSpec, knobs: Knobs, ct: str, target: Target):
        self.spec, self.knobs, self.ct, self.target = spec, knobs, ct, target
        self.block = target.block_bytes
        # Compare works on whole vector repeats: its element count is rounded up to CMP_PAD
        # elements (one repeat of 2-byte, two of 4-byte values), so every buffer a
        # comparison reads holds CMP_PAD elements more than a tile; the lanes past the tile
        # are never stored.
        self.cmp_pad = target.repeat_bytes // 2
        self.masked = self.int_temp = False   # set by compute_body from the lowering
        # bool data on a float32 compute type goes through half (A2 has uint8 <-> half casts only)
        self.half_temp = self.ct != "float16" and "bool" in (*spec.in_dtypes, spec.out_dtype)
        self.float_temp = self.ct == "int32" and spec.out_dtype == "bool"
        self.kinds = [COMPUTE_KIND.get(k, k) for k in spec.kinds]   # how the compute sees each input
        self.grouped = spec.group_axes is not None
        self.n = len(spec.in_dtypes)
        sizes = [DTYPE_SIZE[d] for d in spec.in_dtypes] + [DTYPE_SIZE[spec.out_dtype], DTYPE_SIZE[ct]]
        self.align = self.block // min(sizes)
        self.cls = "Kernel" + "".join(p.capitalize() for p in spec.name.split("_"))

    def needs_cast(self, dtype: str) -> bool:
        return dtype != self.ct

    # -- compute body ---------------------------------------------------------------------
    def compute_body(self) -> tuple[list[str], dict[str, int]]:
        spec, ct = self.spec, self.ct
        pre: list[str] = ["s = (nc + ALIGN - 1) // ALIGN * ALIGN", "n = nr * s"]
        inputs: dict[int, Val] = {}
        counts = {"full": "n", "row": "nc", "col": "nr", "scalar": "1"}
        reads_scalar = False
        for i, (dt, kind) in enumerate(zip(spec.in_dtypes, self.kinds)):
            pre.append(f"x{i} = self.q{i}.DeQue({dsl_dtype(dt)})")
            ref = f"x{i}"
            if self.needs_cast(dt) or kind in ("col", "scalar"):
                # Column and scalar operands are read by the scalar unit; giving them a
                # vector-written copy lets one V->S flag order every read.
                pre.append(f"c{i} = self.b{i}.Get({dsl_dtype(ct)})")
                if dt == "bool" and ct == "float16":   # the bytes of uint8 0/1, which Cast widens exactly
                    pre.append(f"Cast(c{i}, x{i}.ReinterpretCast(uint8), RoundMode.CAST_NONE, {counts[kind]})")
                elif dt == "bool":   # Atlas A2 casts uint8 to half only: through the half temp
                    pre += [f"Cast(th, x{i}.ReinterpretCast(uint8), RoundMode.CAST_NONE, {counts[kind]})",
                            cast_line(f"c{i}", "th", "float16", ct, counts[kind])]
                elif self.needs_cast(dt):
                    pre.append(cast_line(f"c{i}", f"x{i}", dt, ct, counts[kind]))
                else:
                    pre.append(f"Adds(c{i}, x{i}, 0, {counts[kind]})")
                ref = f"c{i}"
            if kind == "scalar":
                reads_scalar = True
                inputs[i] = Val("scalar", f"s{i}")
            else:
                inputs[i] = Val(kind, ref)
        if reads_scalar:
            pre += ["SetFlag(HardEvent.V_S, 0)", "WaitFlag(HardEvent.V_S, 0)"]
            for i, kind in enumerate(self.kinds):
                if kind == "scalar":
                    src = f"c{i}"
                    pre.append(f"s{i} = {src}.GetValue(0)")
            pre += ["SetFlag(HardEvent.S_V, 0)", "WaitFlag(HardEvent.S_V, 0)"]
        low = Lowerer(kinds=list(self.kinds), inputs=inputs, dtype=ct)
        result = low.lower(spec.expr)
        self.masked, self.int_temp = low.uses_mask, low.int_temp
        temps = [f"t{k[0]}{i}" for k in ("full", "row", "col") for i in range(low.made[k])]
        gets = [f"{t} = self.tb_{t}.Get({dsl_dtype(ct)})" for t in temps]
        if self.masked:
            gets += ["mk = self.mkb.Get(uint8)", "pn = (n + CMP_PAD - 1) // CMP_PAD * CMP_PAD",
                     "pnc = (nc + CMP_PAD - 1) // CMP_PAD * CMP_PAD", "pnr = (nr + CMP_PAD - 1) // CMP_PAD * CMP_PAD"]
        if self.int_temp:
            gets.append("ti = self.tib.Get(int32)")
        out = dsl_dtype(spec.out_dtype)
        post = [f"y = self.qy.AllocTensor({out})"]
        if spec.out_dtype == "bool" and ct == "float16":   # 0/1 in the compute dtype -> the bytes of a bool
            post.append(f"Cast(y.ReinterpretCast(uint8), {result.ref}, RoundMode.CAST_RINT, n)")
        elif spec.out_dtype == "bool":   # Atlas A2 casts to uint8 from half only: through the half temp
            src = result.ref
            if ct == "int32":   # and int32 to float only: through a float temp first
                post.append(f"Cast(tf, {src}, RoundMode.CAST_NONE, n)")
                src = "tf"
            post += [f"Cast(th, {src}, RoundMode.CAST_RINT, n)",
                     "Cast(y.ReinterpretCast(uint8), th, RoundMode.CAST_RINT, n)"]
        elif spec.out_dtype != ct:
            post.append(cast_line("y", result.ref, ct, spec.out_dtype, "n"))
        else:
            post.append(f"Adds(y, {result.ref}, 0, n)")
        post.append("self.qy.EnQue(y)")
        post += [f"self.q{i}.FreeTensor(x{i})" for i in range(self.n)]
        made = {k: low.made[k] for k in ("full", "row", "col")}
        self._size_tile(made)
        first = (["th = self.thb.Get(half)"] if self.half_temp else []) + \
            (["tf = self.tfb.Get(float32)"] if self.float_temp else [])
        return first + pre + gets + low.lines + post, made

    def _size_tile(self, made: dict[str, int]) -> None:
        """The tile: `tile_len` elements, shrunk to what fits in UB (queues at depth
        `buffer_num`, cast copies and temps all hold one tile)."""
        spec, knobs, ct = self.spec, self.knobs, self.ct
        n_temps = sum(made.values())
        casts = sum(1 for d, k in zip(spec.in_dtypes, self.kinds) if self.needs_cast(d) or k in ("col", "scalar"))
        per_elem = knobs.buffer_num * (sum(DTYPE_SIZE[d] for d in spec.in_dtypes) + DTYPE_SIZE[spec.out_dtype])
        per_elem += DTYPE_SIZE[ct] * (n_temps + casts)
        n_bufs = knobs.buffer_num * (self.n + 1) + n_temps + self.n
        if self.int_temp:
            per_elem += 4
            n_bufs += 1
        if self.half_temp:
            per_elem += 2
            n_bufs += 1
        if self.float_temp:
            per_elem += 4
            n_bufs += 1
        # one block of alignment slack per buffer
        avail = self.target.ub_bytes - UB_RESERVED - self.block * n_bufs
        if self.masked:   # every buffer holds CMP_PAD more elements, plus one mask bit each
            avail -= self.cmp_pad * per_elem + (self.cmp_pad + knobs.tile_len) // 8 + self.block
        self.tile = max(self.align, min(knobs.tile_len, avail // per_elem) // self.align * self.align)

    # -- whole file -------------------------------------------------------------------------
    def write(self, with_forward: bool) -> str:
        spec, knobs, ct = self.spec, self.knobs, self.ct
        body, made = self.compute_body()
        # Buffers a comparison may read hold CMP_PAD elements more than a tile.
        tl = "tile + CMP_PAD" if self.masked else "tile"
        xs = [f"x{i}" for i in range(self.n)]
        gms = ", ".join(xs + ["y"])
        name = spec.name
        lines = [HEADER, f"# {spec.name}: y = {render(spec.expr)}",
                 f"# inputs {list(zip(spec.in_dtypes, spec.kinds))} -> {spec.out_dtype}; compute in {ct}",
                 f"BUFFER_NUM = {knobs.buffer_num}", f"TILE_LEN = {knobs.tile_len}",
                 f"CORES = {self.target.vector_cores}", f"BLOCK_DIM = {knobs.block_dim}", f"ALIGN = {self.align}",
                 f"# the largest tile of at most TILE_LEN elements that fits in UB",
                 f"TILE = {self.tile}"] + ([f"CMP_PAD = {self.cmp_pad}"] if self.masked else []) + ["", ""]
        lines.append(f"class {self.cls}:")
        init = [f"self.R = R", "self.C = C", "self.rpt = rpt", "self.ct = ct", "self.n_ct = n_ct",
                "start = GetBlockIdx() * tpb", "self.t0 = start", "self.t1 = min(T, start + tpb)",
                "self.pipe = TPipe()"]
        for i, kind in enumerate(spec.kinds):
            size = {"full": "R * C", "row": "C", "col": "R", "scalar": "1", "grp": "R // G * C", "mod": "G * C"}[kind]
            init += [f"self.g{i} = GlobalTensor()", f"self.g{i}.SetGlobalBuffer(x{i}, 0, {size})"]
        init += ["self.gy = GlobalTensor()", "self.gy.SetGlobalBuffer(y, 0, R * C)"]
        for i, dt in enumerate(spec.in_dtypes):
            init += [f"self.q{i} = TQue(TPosition.VECIN, BUFFER_NUM)",
                     f"self.pipe.InitBuffer(self.q{i}, BUFFER_NUM, buf_bytes({tl}, {DTYPE_SIZE[dt]}))"]
            if self.needs_cast(dt) or self.kinds[i] in ("col", "scalar"):
                init += [f"self.b{i} = TBuf(TPosition.VECCALC)",
                         f"self.pipe.InitBuffer(self.b{i}, buf_bytes({tl}, {DTYPE_SIZE[ct]}))"]
        init += ["self.qy = TQue(TPosition.VECOUT, BUFFER_NUM)",
                 f"self.pipe.InitBuffer(self.qy, BUFFER_NUM, buf_bytes({tl}, {DTYPE_SIZE[spec.out_dtype]}))"]
        for k in ("full", "row", "col"):
            for j in range(made[k]):
                t = f"t{k[0]}{j}"
                init += [f"self.tb_{t} = TBuf(TPosition.VECCALC)",
                         f"self.pipe.InitBuffer(self.tb_{t}, buf_bytes({tl}, {DTYPE_SIZE[ct]}))"]
        if self.masked:
            init += ["self.mkb = TBuf(TPosition.VECCALC)", f"self.pipe.InitBuffer(self.mkb, buf_bytes(tile + CMP_PAD, 1) // 8 + {self.block})"]
        if self.int_temp:
            init += ["self.tib = TBuf(TPosition.VECCALC)", "self.pipe.InitBuffer(self.tib, buf_bytes(tile, 4))"]
        if self.half_temp:
            init += ["self.thb = TBuf(TPosition.VECCALC)", f"self.pipe.InitBuffer(self.thb, buf_bytes({tl}, 2))"]
        if self.float_temp:
            init += ["self.tfb = TBuf(TPosition.VECCALC)", f"self.pipe.InitBuffer(self.tfb, buf_bytes({tl}, 4))"]
        params = "R, C, rpt, ct, n_ct, tpb, T, tile" + (", G, tpg" if self.grouped else "")
        if self.grouped:
            init += ["self.G = G", "self.tpg = tpg"]
        lines.append(method("Init", f"{gms}, {params}", init))
        lines.append(method("Process", "", [
            # tiles are dealt per group of G rows (tpg of them each) and never cross one
            "for t in range(self.t0, self.t1):",
            "    rt = t % self.tpg // self.n_ct",
            "    r0 = t // self.tpg * self.G + rt * self.rpt",
            "    c0 = t % self.n_ct * self.ct",
            "    nr = min(self.rpt, self.G - rt * self.rpt)",
            "    nc = min(self.ct, self.C - c0)",
            "    self.CopyIn(r0, nr, c0, nc)",
            "    self.Compute(nr, nc)",
            "    self.CopyOut(r0, nr, c0, nc)",
        ]) if self.grouped else method("Process", "", [
            "for t in range(self.t0, self.t1):",
            "    r0 = t // self.n_ct * self.rpt",
            "    c0 = t % self.n_ct * self.ct",
            "    nr = min(self.rpt, self.R - r0)",
            "    nc = min(self.ct, self.C - c0)",
            "    self.CopyIn(r0, nr, c0, nc)",
            "    self.Compute(nr, nc)",
            "    self.CopyOut(r0, nr, c0, nc)",
        ]))
        lines.append(method("CopyIn", "r0, nr, c0, nc", self.copy_in()))
        lines.append(method("Compute", "nr, nc", body))
        lines.append(method("CopyOut", "r0, nr, c0, nc", self.copy_out()))
        lines.append(ub_helpers(self.block))
        lines.append(f"@kernel\ndef {name}_kernel({gms}, {params}):\n"
                     f"    op = {self.cls}()\n    op.Init({gms}, {params})\n    op.Process()\n\n")
        lines.append(self.launch())
        if with_forward:
            lines.append(self.forward())
        return "\n".join(lines)

    def copy_in(self) -> list[str]:
        body = []
        for i, (dt, kind) in enumerate(zip(self.spec.in_dtypes, self.spec.kinds)):
            sz = DTYPE_SIZE[dt]
            body.append(f"x{i} = self.q{i}.AllocTensor({dsl_dtype(dt)})")
            if kind in ("full", "mod"):
                row0 = "r0 % self.G" if kind == "mod" else "r0"
                pad = (f"DataCopyPad(x{i}, self.g{i}[{row0} * self.C + c0], DataCopyExtParams(nr, nc * {sz}, "
                       f"(self.C - nc) * {sz}, row_gap(nc, {sz}), 0), DataCopyPadExtParams(False, 0, 0, 0))")
                aligned = f"(nc * {sz}) % {self.block} == 0 and (nr == 1 or (nc == self.C and nc % ALIGN == 0))"
                count = "nr * nc"
                src = f"self.g{i}[{row0} * self.C + c0]"
            else:
                off, cnt = {"row": ("c0", "nc"), "col": ("r0", "nr"), "scalar": ("0", "1"),
                            "grp": ("r0 // self.G * self.C + c0", "nc")}[kind]
                pad = (f"DataCopyPad(x{i}, self.g{i}[{off}], DataCopyExtParams(1, {cnt} * {sz}, 0, 0, 0), "
                       f"DataCopyPadExtParams(False, 0, 0, 0))")
                aligned = f"({cnt} * {sz}) % {self.block} == 0"
                count, src = cnt, f"self.g{i}[{off}]"
            if self.knobs.copy_mode == "auto":
                body += [f"if {aligned}:", f"    DataCopy(x{i}, {src}, {count})", "else:", f"    {pad}"]
            else:
                body.append(pad)
            body.append(f"self.q{i}.EnQue(x{i})")
        return body

    def copy_out(self) -> list[str]:
        sz = DTYPE_SIZE[self.spec.out_dtype]
        out = dsl_dtype(self.spec.out_dtype)
        pad = (f"DataCopyPad(self.gy[r0 * self.C + c0], y, DataCopyExtParams(nr, nc * {sz}, "
               f"row_gap(nc, {sz}), (self.C - nc) * {sz}, 0))")
        body = [f"y = self.qy.DeQue({out})"]
        if self.knobs.copy_mode == "auto":
            body += [f"if (nc * {sz}) % {self.block} == 0 and (nr == 1 or (nc == self.C and nc % ALIGN == 0)):",
                     "    DataCopy(self.gy[r0 * self.C + c0], y, nr * nc)", "else:", f"    {pad}"]
        else:
            body.append(pad)
        body.append("self.qy.FreeTensor(y)")
        return body

    def launch(self) -> str:
        xs = [f"x{i}" for i in range(self.n)]
        if self.grouped:
            return self._grouped_launch(xs)
        return (
            f"def {self.spec.name}_launch({', '.join(xs + ['y'])}, R, C):\n"
            f"    # Host tiling: one tile is rpt rows x ct columns, each row padded to {self.block} B in UB.\n"
            "    cores = BLOCK_DIM or CORES\n"
            "    tile = TILE\n"
            "    stride = (C + ALIGN - 1) // ALIGN * ALIGN\n"
            "    if stride <= tile:\n"
            "        ct = C\n"
            "        rpt = max(1, min(tile // stride, (R + cores - 1) // cores))\n"
            "    else:\n"
            "        ct = tile\n"
            "        rpt = 1\n"
            "        if R < cores:  # few long rows: split rows into column tiles so every core works\n"
            "            per_row = max(1, cores // R)\n"
            "            ct = min(tile, max(ALIGN, ((C + per_row - 1) // per_row + ALIGN - 1) // ALIGN * ALIGN))\n"
            "    n_ct = (C + ct - 1) // ct\n"
            "    T = (R + rpt - 1) // rpt * n_ct\n"
            "    tpb = (T + cores - 1) // cores\n"
            "    block_dim = (T + tpb - 1) // tpb\n"
            f"    {self.spec.name}_kernel[block_dim]({', '.join(xs + ['y'])}, R, C, rpt, ct, n_ct, tpb, T, tile)\n\n"
        )

    def _grouped_launch(self, xs: list[str]) -> str:
        args = ", ".join(xs + ["y"])
        return (
            f"def {self.spec.name}_launch({args}, R, C, G):\n"
            "    # Host tiling inside each group of G rows: rpt rows x ct columns per tile.\n"
            "    cores = BLOCK_DIM or CORES\n"
            "    tile = TILE\n"
            "    stride = (C + ALIGN - 1) // ALIGN * ALIGN\n"
            "    if stride <= tile:\n"
            "        ct = C\n"
            "        rpt = max(1, min(tile // stride, G, (R + cores - 1) // cores))\n"
            "    else:\n"
            "        ct = tile\n"
            "        rpt = 1\n"
            "    n_ct = (C + ct - 1) // ct\n"
            "    tpg = (G + rpt - 1) // rpt * n_ct\n"
            "    T = R // G * tpg\n"
            "    tpb = (T + cores - 1) // cores\n"
            "    block_dim = (T + tpb - 1) // tpb\n"
            f"    {self.spec.name}_kernel[block_dim]({args}, R, C, rpt, ct, n_ct, tpb, T, tile, G, tpg)\n\n"
        )

    def _grouped_forward(self, xs: list[str]) -> str:
        n_c, n_g = self.spec.group_axes
        return "\n".join([
            f"def forward({', '.join(xs)}):",
            "    # the broadcast output shape, from the operands' shapes",
            f"    shapes = [tuple(v.shape) for v in ({', '.join(xs)},)]",
            "    rank = max(len(sh) for sh in shapes)",
            "    shapes = [(1,) * (rank - len(sh)) + sh for sh in shapes]",
            "    shape = tuple(max(d) for d in zip(*shapes))",
            "    total = 1",
            "    for d in shape:",
            "        total *= d",
            "    C = 1",
            f"    for d in shape[rank - {n_c}:]:",
            "        C *= d",
            "    G = 1",
            f"    for d in shape[rank - {n_c + n_g}:rank - {n_c}]:",
            "        G *= d",
            f"    y = empty(shape, {dsl_dtype(self.spec.out_dtype)})",
            f"    {self.spec.name}_launch({', '.join(xs + ['y'])}, total // C, C, G)",
            "    return y\n"])

    def forward(self) -> str:
        kinds = self.spec.kinds
        xs = [f"x{i}" for i in range(self.n)]
        if self.grouped:
            return self._grouped_forward(xs)
        full = kinds.index("full") if "full" in kinds else None
        lines = [f"def forward({', '.join(xs)}):"]
        if full is not None:
            lines.append(f"    shape = x{full}.shape")
            lines.append(f"    total = x{full}.numel()")
        else:  # row x col outer broadcast
            r, c = kinds.index("row"), kinds.index("col")
            lines.append(f"    shape = (x{c}.numel(), x{r}.numel())")
            lines.append(f"    total = x{c}.numel() * x{r}.numel()")
        if "row" in kinds:
            lines.append(f"    C = x{kinds.index('row')}.numel()")
            lines.append("    R = total // C")
        elif "col" in kinds:
            lines.append(f"    R = x{kinds.index('col')}.numel()")
            lines.append("    C = total // R")
        else:
            lines += ["    R = 1", "    C = total"]
        lines.append(f"    y = empty(shape, {dsl_dtype(self.spec.out_dtype)})")
        lines.append(f"    {self.spec.name}_launch({', '.join(xs + ['y'])}, R, C)")
        lines.append("    return y\n")
        return "\n".join(lines)

