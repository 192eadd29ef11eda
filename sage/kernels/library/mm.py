"""Matrix products on the cube over strided operands, with an optional fused epilogue.

C[b, m, n] = sum_k A[b, m, k] B[b, k, n]. Each operand is a buffer with a batch stride
(0: shared by every batch), a row and a column stride, one of which must be 1 (a
transposed operand is loaded transposed by LoadData). GM -> L1 (ND -> NZ, `l1_k` of K at
a time) -> L0A/L0B (`base_k` at a time) -> Mmad into L0C (float32, int32 for int8) ->
Fixpipe. Each block computes whole base_m x base_n tiles of C, dealt in contiguous runs.

Without an epilogue the AIC cores write C itself (Fixpipe converts to its dtype). With
one (a tile program over C's iteration space whose first leaf is the product), the kernel
is MIX_AIC_1_2: each AIC writes its tiles into a float32 GM workspace and raises a
cross-core flag every few tiles; its two AIVs wait for the flag and run the epilogue on
their halves of the finished tiles' rows (the cube and vector units are separate cores
that share only GM).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from sage.kernels.library.knobs import VENDOR_CUBE_KNOBS, CubeKnobs, Knobs
from sage.kernels.library.source import DTYPE_SIZE, HEADER, dsl_dtype, method, suffixed
from sage.kernels.library.tile import _Writer, tile_args
from sage.kernels.library.tile_emit import Emit
from sage.kernels.library.tile_plan import plan_tile
from sage.kernels.library.tile_spec import TileSpec
from sage.kernels.target import Target, target_for

CUBE_DTYPES = {"float16", "bfloat16", "float32", "int8"}
MAX_PENDING = 15          # cross-core flag sets that may be outstanding (the hardware allows 16)


class MmOut(BaseModel):
    """A GM matrix (per batch) with contiguous columns: the product's destination."""

    model_config = ConfigDict(frozen=True)

    arg: str
    dtype: str
    numel: int
    offset: int
    batch_stride: int
    row_stride: int           # A: along M, B: along K, C: along M


class MatOperand(MmOut):
    """An operand: its columns may be strided (a transposed view)."""

    col_stride: int           # A: along K, B: along N

    @property
    def transposed(self) -> bool:
        return self.col_stride != 1


class MmSpec(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    batch: int
    m: int
    n: int
    k: int
    a: MatOperand
    b: MatOperand
    out: MmOut | None = None              # the product itself (no epilogue)
    epilogue: TileSpec | None = None      # over (batch, m, n); its leaf 0 reads the workspace `ws`
    workspace: str = "ws"


def mm_args(spec: MmSpec) -> list[str]:
    """The launcher's buffer arguments (the workspace is allocated by the launcher)."""
    args = [spec.a.arg] + ([spec.b.arg] if spec.b.arg != spec.a.arg else [])
    rest = tile_args(spec.epilogue)[1:] if spec.epilogue is not None else [spec.out.arg]
    return args + [a for a in rest if a not in args]


def mm_source(spec: MmSpec, knobs: CubeKnobs = VENDOR_CUBE_KNOBS, *, target: Target | None = None,
              epilogue_knobs: Knobs | None = None) -> str:
    target = target or target_for()
    dt = spec.a.dtype
    if dt not in CUBE_DTYPES or spec.b.dtype != dt:
        raise ValueError(f"the cube takes two operands of one of {sorted(CUBE_DTYPES)}, got {dt} and {spec.b.dtype}")
    if dt == "int8" and (spec.a.transposed or spec.b.transposed):
        raise ValueError("transposed int8 operands are not loaded by the cube path")
    sz = DTYPE_SIZE[dt]
    unit = 32 if dt == "int8" else target.fractal
    f = target.fractal
    scale = 2 / sz
    bk = max(unit, int(knobs.base_k * scale) // unit * unit)
    l1k = max(bk, int(knobs.l1_k * scale) // bk * bk)
    acc = "int32" if dt == "int8" else "float32"
    mix = spec.epilogue is not None
    lines = [HEADER, f"# {spec.name}: C[{spec.batch}, {spec.m}, {spec.n}] = A @ B on the cube ({dt} in, {acc} accumulate)"
             + (", epilogue on the AIVs (MIX_AIC_1_2)" if mix else ""),
             f"BASE_M = {knobs.base_m}", f"BASE_N = {knobs.base_n}", f"BASE_K = {bk}", f"L1_K = {l1k}",
             f"BUFFER_NUM = {knobs.buffer_num}", f"CORES = {target.cube_cores}", f"BLOCK_DIM = {knobs.block_dim}",
             f"BATCH = {spec.batch}", f"M = {spec.m}", f"N = {spec.n}", f"K = {spec.k}", f"UNIT = {unit}", "", ""]
    lines.append(_cube_class(spec, dt, sz, acc, f))
    args = mm_args(spec)
    if mix:
        ep = spec.epilogue
        assert ep is not None
        lay = plan_tile(ep, epilogue_knobs or Knobs(tile_len=4096, buffer_num=2), target)
        lines.append(suffixed(_Writer(ep, lay.knobs, target, lay).write(), "_ep"))
        lines.append(_mix_kernel(spec, args, lay))
    else:
        gms = ", ".join(args)
        lines.append(f"@kernel\ndef {spec.name}_kernel({gms}, bm, bn, tpb, T):\n"
                     f"    op = Cube{spec.name.capitalize()}()\n    op.Init({gms}, bm, bn, tpb, T)\n"
                     "    op.Process()\n\n")
    lines.append(_launcher(spec, args, f, mix))
    return "\n".join(lines)


def _cube_class(spec: MmSpec, dt: str, sz: int, acc: str, f: int) -> str:
    a, b = spec.a, spec.b
    ddt = dsl_dtype(dt)
    out = spec.out
    gms = ", ".join(mm_args(spec) if spec.epilogue is None else [a.arg] + ([b.arg] if b.arg != a.arg else []) + ["ws"])
    init = ["self.bm = bm", "self.bn = bn", "self.n_mt = (M + bm - 1) // bm", "self.n_nt = (N + bn - 1) // bn",
            "start = GetBlockIdx() * tpb", "self.t0 = start", "self.t1 = min(T, start + tpb)",
            "self.ga = GlobalTensor()", f"self.ga.SetGlobalBuffer({a.arg})",
            "self.gb = GlobalTensor()", f"self.gb.SetGlobalBuffer({b.arg})",
            "self.gc = GlobalTensor()", f"self.gc.SetGlobalBuffer({'ws' if spec.epilogue is not None else out.arg})",
            "self.pipe = TPipe()",
            "self.qa1 = TQue(TPosition.A1, BUFFER_NUM)", f"self.pipe.InitBuffer(self.qa1, BUFFER_NUM, bm * L1_K * {sz})",
            "self.qb1 = TQue(TPosition.B1, BUFFER_NUM)", f"self.pipe.InitBuffer(self.qb1, BUFFER_NUM, L1_K * bn * {sz})",
            "self.qa2 = TQue(TPosition.A2, 2)", f"self.pipe.InitBuffer(self.qa2, 2, bm * BASE_K * {sz})",
            "self.qb2 = TQue(TPosition.B2, 2)", f"self.pipe.InitBuffer(self.qb2, 2, BASE_K * bn * {sz})",
            "self.qc = TQue(TPosition.CO1, 1)", "self.pipe.InitBuffer(self.qc, 1, bm * bn * 4)"]
    if spec.epilogue is None:
        cbase, crs = f"{out.offset} + bt * {out.batch_stride} + m0 * {out.row_stride} + n0", out.row_stride
    else:
        cbase, crs = "bt * M * N + m0 * N + n0", "N"
    load_a = (f"    DataCopy(a1, self.ga[abase + k0 * {a.col_stride} + m0], Nd2NzParams(1, kl, m, 0, {a.col_stride}, kp, 1, 0))"
              if a.transposed else
              f"    DataCopy(a1, self.ga[abase + m0 * {a.row_stride} + k0], Nd2NzParams(1, m, kl, 0, {a.row_stride}, mp, 1, 0))")
    load_b = (f"    DataCopy(b1, self.gb[bbase + n0 * {b.col_stride} + k0], Nd2NzParams(1, n, kl, 0, {b.col_stride}, np_, 1, 0))"
              if b.transposed else
              f"    DataCopy(b1, self.gb[bbase + k0 * {b.row_stride} + n0], Nd2NzParams(1, kl, n, 0, {b.row_stride}, kp, 1, 0))")
    tile = [f"mp = (m + {f - 1}) // {f} * {f}", "np_ = (n + UNIT - 1) // UNIT * UNIT",
            f"abase = {a.offset} + bt * {a.batch_stride}", f"bbase = {b.offset} + bt * {b.batch_stride}",
            f"cl = self.qc.AllocTensor({acc})",
            "for k0 in range(0, K, L1_K):", "    kl = min(L1_K, K - k0)", "    kp = (kl + UNIT - 1) // UNIT * UNIT",
            f"    a1 = self.qa1.AllocTensor({ddt})", load_a, "    self.qa1.EnQue(a1)",
            f"    b1 = self.qb1.AllocTensor({ddt})", load_b, "    self.qb1.EnQue(b1)",
            f"    a1 = self.qa1.DeQue({ddt})", f"    b1 = self.qb1.DeQue({ddt})",
            "    for kk in range(0, kp, BASE_K):", "        ks = min(BASE_K, kp - kk)",
            f"        a2 = self.qa2.AllocTensor({ddt})",
            ("        LoadData(a2, a1[kk * mp], LoadData2DParams(ks, mp, mp, True))" if a.transposed else
             "        LoadData(a2, a1[kk], LoadData2DParams(mp, ks, kp, False))"),
            "        self.qa2.EnQue(a2)", f"        b2 = self.qb2.AllocTensor({ddt})",
            ("        LoadData(b2, b1[kk], LoadData2DParams(np_, ks, kp, True))" if b.transposed else
             "        LoadData(b2, b1[kk * np_], LoadData2DParams(ks, np_, np_, False))"),
            "        self.qb2.EnQue(b2)", f"        a2 = self.qa2.DeQue({ddt})", f"        b2 = self.qb2.DeQue({ddt})",
            "        Mmad(cl, a2, b2, MmadParams(m, n, min(ks, kl - kk), k0 + kk == 0))",
            "        self.qa2.FreeTensor(a2)", "        self.qb2.FreeTensor(b2)",
            "    self.qa1.FreeTensor(a1)", "    self.qb1.FreeTensor(b1)",
            "self.qc.EnQue(cl)", f"cl = self.qc.DeQue({acc})",
            f"Fixpipe(self.gc[{cbase}], cl, FixpipeParams(m, n, (n + 15) // 16 * 16, {crs}))",
            "self.qc.FreeTensor(cl)"]
    process = ["per_mat = self.n_mt * self.n_nt", "for t in range(self.t0, self.t1):", "    bt = t // per_mat",
               "    m0 = t % per_mat // self.n_nt * self.bm", "    n0 = t % self.n_nt * self.bn",
               "    self.Tile(bt, m0, min(self.bm, M - m0), n0, min(self.bn, N - n0))"]
    if spec.epilogue is not None:
        process[-1:] = ["    self.Tile(bt, m0, min(self.bm, M - m0), n0, min(self.bn, N - n0))",
                        "    if (t - self.t0 + 1) % chunk == 0 or t == self.t1 - 1:",
                        "        CrossCoreSetFlag(2, PIPE_FIX, 0)"]
    cls = f"Cube{spec.name.capitalize()}"
    return (f"class {cls}:\n" + method("Init", f"{gms}, bm, bn, tpb, T", init)
            + method("Process", "chunk=1", process) + method("Tile", "bt, m0, m, n0, n", tile))


def _mix_kernel(spec: MmSpec, args: list[str], lay) -> str:
    ep = spec.epilogue
    bases = Emit(ep, lay).bases()
    ep_args = tile_args(ep)
    cube_args = [spec.a.arg] + ([spec.b.arg] if spec.b.arg != spec.a.arg else []) + ["ws"]
    cls = f"Cube{spec.name.capitalize()}"
    body = ["KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)",
            "per_mat = ((M + bm - 1) // bm) * ((N + bn - 1) // bn)",
            "chunk = max(1, (tpb + MAX_PENDING - 1) // MAX_PENDING)",
            "if ASCEND_IS_AIC:",
            f"    op = {cls}()", f"    op.Init({', '.join(cube_args)}, bm, bn, tpb, T)", "    op.Process(chunk)",
            "else:",
            f"    ep = {_ep_class(ep)}()", f"    ep.Init({', '.join(ep_args)}, 1, 0)",
            "    blk = GetBlockIdx() // 2", "    sub = GetSubBlockIdx()",
            "    t0 = blk * tpb", "    t1 = min(T, t0 + tpb)", "    n_nt = (N + bn - 1) // bn",
            "    for t in range(t0, t1):",
            "        if (t - t0) % chunk == 0:", "            CrossCoreWaitFlag(0)",
            "        i0 = t // per_mat", "        m0 = t % per_mat // n_nt * bm", "        c0 = t % n_nt * bn",
            "        mr = min(bm, M - m0)", "        nc = min(bn, N - c0)", "        half = (mr + 1) // 2",
            "        r_lo = m0 + sub * half", "        r_hi = min(m0 + mr, r_lo + half)",
            "        for j0 in range(r_lo, r_hi, NR_ep):", "            nr = min(NR_ep, r_hi - j0)",
            f"            bs = [{', '.join(b.replace('ws', 'ws') for b in bases)}]",
            "            ep.CopyIn(bs, nr, nc)", "            ep.Compute(bs, nr, nc, j0)", "            ep.CopyOut(bs, nr, nc)"]
    return (f"MAX_PENDING = {MAX_PENDING}\n\n\n@kernel\ndef {spec.name}_kernel({', '.join(args)}, ws, bm, bn, tpb, T):\n"
            + "\n".join("    " + ln for ln in body) + "\n\n")


def _ep_class(ep: TileSpec) -> str:
    return "Kernel" + "".join(p.capitalize() for p in ep.name.split("_")) + "_ep"


def _launcher(spec: MmSpec, args: list[str], f: int, mix: bool) -> str:
    ws = f"    ws = empty(({spec.batch * spec.m * spec.n},), {'int32' if spec.a.dtype == 'int8' else 'float32'})\n" \
        if mix else ""
    call_args = ", ".join(args + (["ws"] if mix else []))
    return (
        f"def {spec.name}_launch({', '.join(args)}):\n"
        + ws +
        "    cores = BLOCK_DIM or CORES\n"
        f"    bm = min(BASE_M, (M + {f - 1}) // {f} * {f})\n"
        "    bn = min(BASE_N, (N + UNIT - 1) // UNIT * UNIT)\n"
        "    # Shrink the tile while cores would idle (N first, then M), never below 64.\n"
        "    while BATCH * ((M + bm - 1) // bm) * ((N + bn - 1) // bn) < cores and (bn > 64 or bm > 64):\n"
        "        if bn > 64 and bn >= bm:\n"
        "            bn = max(64, (bn // 2 + UNIT - 1) // UNIT * UNIT)\n"
        "        else:\n"
        f"            bm = max(64, (bm // 2 + {f - 1}) // {f} * {f})\n"
        "    T = BATCH * ((M + bm - 1) // bm) * ((N + bn - 1) // bn)\n"
        "    tpb = (T + cores - 1) // cores\n"
        f"    {spec.name}_kernel[(T + tpb - 1) // tpb]({call_args}, bm, bn, tpb, T)\n\n")
