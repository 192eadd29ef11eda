"""The tile program kernel: any mix of pointwise work and last-axis reductions over strided
tensors of any rank (spec and copy plans in `tile_spec.py`).

Tiles are NR rows x NC columns of the iteration space; rows sit in UB at a pitch of `s`
elements (a multiple of the 32 B block for every dtype involved), so one vector
instruction covers a tile. With reductions a tile holds whole rows (NC = the column
extent): the row stays in UB between the reduction and the work that uses its result.
Tiles are dealt to blocks in contiguous runs; each tile is copied in, computed and copied
out through queues of depth BUFFER_NUM, so with two buffers the copies of one tile
overlap the compute of the next. The compute is the `Lowerer`'s, in repeat form: no
per-row loops and no scalar reads for broadcasts and reductions.
"""

from __future__ import annotations

from sage.kernels.chain import inputs_of, render
from sage.kernels.library.knobs import VENDOR_KNOBS, Knobs
from sage.kernels.library.source import DTYPE_SIZE, HEADER, dsl_dtype, method
from sage.kernels.library.tile_parts import Emit, TileLayout, plan_tile
from sage.kernels.library.tile_spec import Access, TileSpec, leaf_kind
from sage.kernels.lowering import Lowerer, Val
from sage.kernels.target import Target, target_for


class TileTooBig(ValueError):
    """No tile of this program fits in UB (a reduced row longer than UB holds)."""


def tile_source(spec: TileSpec, knobs: Knobs = VENDOR_KNOBS, *, target: Target | None = None) -> str:
    """Definitions of the kernel `<name>_kernel` and its host launcher
    `<name>_launch(<buffer args>)` (the buffers in `tile_args(spec)` order)."""
    target = target or target_for()
    lay = plan_tile(spec, knobs, target)
    return _Writer(spec, knobs, target, lay).write()


def tile_args(spec: TileSpec) -> list[str]:
    """The launcher's buffer arguments: each distinct buffer once, leaves first."""
    seen: dict[str, None] = {}
    for leaf in spec.leaves:
        if isinstance(leaf, Access):
            seen.setdefault(leaf.arg, None)
    for out in spec.outputs:
        seen.setdefault(out.access.arg, None)
    return list(seen)


class _Writer:
    def __init__(self, spec: TileSpec, knobs: Knobs, target: Target, lay: TileLayout) -> None:
        self.spec, self.knobs, self.target, self.lay = spec, knobs, target, lay
        self.cls = "Kernel" + "".join(p.capitalize() for p in spec.name.split("_"))
        self.args = tile_args(spec)
        self.e = Emit(spec, lay)

    def write(self) -> str:
        spec, lay = self.spec, self.lay
        compute, made = self.compute_body()
        lines = [HEADER, f"# {spec.name}: tile program over dims {list(spec.dims)} (row axis {spec.row}), "
                 f"compute in {spec.compute}"]
        lines += [f"# out{j} = {render(o.expr)}" for j, o in enumerate(spec.outputs)]
        lines += lay.constants(self.knobs, self.target) + ["", ""]
        lines.append(f"class {self.cls}:")
        lines.append(method("Init", ", ".join(self.args + ["tpb"]), self.init(made)))
        lines.append(method("Process", "", self.process()))
        lines.append(method("CopyIn", "bs, nr, nc", self.e.copy_in()))
        lines.append(method("Compute", "bs, nr, nc", compute))
        lines.append(method("CopyOut", "bs, nr, nc", self.e.copy_out()))
        lines.append(self.e.helpers())
        args = ", ".join(self.args + ["tpb"])
        lines.append(f"@kernel\ndef {spec.name}_kernel({args}):\n    op = {self.cls}()\n"
                     f"    op.Init({args})\n    op.Process()\n\n")
        lines.append(f"def {spec.name}_launch({', '.join(self.args)}):\n"
                     "    cores = BLOCK_DIM or CORES\n"
                     "    tpb = (T + cores - 1) // cores\n"
                     f"    {spec.name}_kernel[(T + tpb - 1) // tpb]({', '.join(self.args)}, tpb)\n\n")
        return "\n".join(lines)

    # -- Init ---------------------------------------------------------------------------------
    def init(self, made: dict[str, int]) -> list[str]:
        body = ["self.t0 = GetBlockIdx() * tpb", "self.t1 = min(T, self.t0 + tpb)", "self.pipe = TPipe()"]
        for arg in self.args:
            body += [f"self.g_{arg} = GlobalTensor()", f"self.g_{arg}.SetGlobalBuffer({arg})"]
        body += self.e.init_buffers() + self.e.iota_buffers()
        ct, csz = dsl_dtype(self.spec.compute), DTYPE_SIZE[self.spec.compute]
        for k, count in (("full", "TILE_ELEMS"), ("row", "S_PAD"), ("col", "NR_PAD"), ("brcb", "NR_PAD * EPB")):
            for j in range(made[k]):
                t = f"t{k[0]}{j}"
                body += [f"self.tb_{t} = TBuf(TPosition.VECCALC)",
                         f"self.pipe.InitBuffer(self.tb_{t}, buf_bytes({count}, {csz}))"]
        if self.masked:
            body += ["self.mkb = TBuf(TPosition.VECCALC)", "self.pipe.InitBuffer(self.mkb, buf_bytes(TILE_ELEMS, 1) // 8 + 64)"]
        if self.int_temp:
            body += ["self.tib = TBuf(TPosition.VECCALC)", "self.pipe.InitBuffer(self.tib, buf_bytes(TILE_ELEMS, 4))"]
        body += self.e.init_tables(ct)
        return body

    # -- Process: decode each tile's position, the bases of every tensor ----------------------
    def process(self) -> list[str]:
        spec = self.spec
        body = ["for t in range(self.t0, self.t1):", "    c0 = t % N_CT * NC", "    rest = t // N_CT",
                "    j0 = rest % N_RT * NR", "    o = rest // N_RT"]
        for ax in reversed(spec.loops):
            body += [f"    i{ax} = o % {spec.dims[ax]}", f"    o = o // {spec.dims[ax]}"]
        body += ["    nc = min(NC, C - c0)", "    nr = min(NR, DR - j0)",
                 f"    bs = [{', '.join(self.e.bases())}]",
                 "    self.CopyIn(bs, nr, nc)", "    self.Compute(bs, nr, nc)", "    self.CopyOut(bs, nr, nc)"]
        return body

    # -- Compute --------------------------------------------------------------------------------
    def compute_body(self) -> tuple[list[str], dict[str, int]]:
        spec = self.spec
        pre = ["s = (nc + ALIGN - 1) // ALIGN * ALIGN", "n = nr * s"]
        inputs: dict[int, Val] = {}
        scalar_reads: list[str] = []
        for i, leaf in enumerate(spec.leaves):
            if not any(i in inputs_of(o.expr) for o in spec.outputs):
                continue
            val, lines, reads = self.e.prepare(i, leaf)
            pre += lines
            scalar_reads += reads
            inputs[i] = val
        if scalar_reads:
            pre += ["SetFlag(HardEvent.V_S, 0)", "WaitFlag(HardEvent.V_S, 0)", *scalar_reads,
                    "SetFlag(HardEvent.S_V, 0)", "WaitFlag(HardEvent.S_V, 0)"]
        kinds = [leaf_kind(spec, leaf) for leaf in spec.leaves]
        low = Lowerer(kinds=kinds, inputs=inputs, dtype=spec.compute, repeat_form=True)
        results = low.lower_all([o.expr for o in spec.outputs])
        post: list[str] = []
        for j, (out, res) in enumerate(zip(spec.outputs, results)):
            want = "col" if self.lay.out_level[j] == "col" else "full"
            if res.kind != want:
                res = low._materialize(res, want)
            post += self.e.store(j, out.access, res.ref, want)
        post += self.e.free_leaves([i for i in inputs if isinstance(spec.leaves[i], Access)])
        self.masked, self.int_temp = low.uses_mask, low.int_temp
        made = dict(low.made)
        gets = [f"t{k[0]}{j} = self.tb_t{k[0]}{j}.Get({dsl_dtype(spec.compute)})" for k in ("full", "row", "col", "brcb")
                for j in range(made[k])]
        if self.masked:
            gets += ["mk = self.mkb.Get(uint8)", "pn = (n + CMP_PAD - 1) // CMP_PAD * CMP_PAD",
                     "pnc = (nc + CMP_PAD - 1) // CMP_PAD * CMP_PAD", "pnr = (nr + CMP_PAD - 1) // CMP_PAD * CMP_PAD"]
        if self.int_temp:
            gets.append("ti = self.tib.Get(int32)")
        try:
            self.lay.size(made, self.masked, self.int_temp)
        except ValueError as exc:
            raise TileTooBig(str(exc)) from None
        return pre + gets + low.lines + post, made

