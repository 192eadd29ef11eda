"""Matmul on the cube: C[M, N] = A[M, K] @ B[K, N], optionally batched.

GM -> L1 (ND -> NZ, `l1_k` of K at a time) -> `LoadData` -> L0A/L0B (`base_k` at a time)
-> `Mmad` accumulating in L0C (float32) -> `Fixpipe` -> GM, converting to the output type.
Each block computes whole `base_m` x `base_n` tiles of C, dealt out in contiguous runs.
Half inputs accumulate in float32; float32 inputs run at the cube's float32 rate (2x).
The DSL's `Mmad` has no bias operand (the hardware's BiasTable path is not simulated), so
a bias is not part of this kernel; the reference model adds it as an epilogue read.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator

from sage.kernels.library.knobs import VENDOR_CUBE_KNOBS, CubeKnobs
from sage.kernels.library.source import DTYPE_SIZE, FLOATS, HEADER, dsl_dtype, method
from sage.kernels.target import Target, target_for


class MatmulSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    dtype: str
    batched: bool = False
    trans_a: bool = False     # A arrives as [K, M] (the product reads A^T): LoadData transposes
    trans_b: bool = False     # B arrives as [N, K]
    name: str = "mm"

    @field_validator("dtype")
    @classmethod
    def _float(cls, v: str) -> str:
        if v not in FLOATS:
            raise ValueError(f"matmul takes float inputs, got {v!r}")
        return v


def matmul_source(spec: MatmulSpec, knobs: CubeKnobs = VENDOR_CUBE_KNOBS, *, target: Target | None = None,
                  with_forward: bool = True) -> str:
    """The text of a kernel file for `spec` with schedule `knobs` on `target` (the default
    preset's when None); defines `<name>_launch(a, b, c, batch, M, K, N)` and optionally `forward`."""
    target = target or target_for()
    sz = DTYPE_SIZE[spec.dtype]
    dt = dsl_dtype(spec.dtype)
    scale = 2 / sz          # K extents are for 2-byte inputs: keep the bytes, not the elements
    f = target.fractal      # the cube works on f x f fractals: M, N and K pad to multiples of f
    bk = max(f, int(knobs.base_k * scale) // f * f)
    l1k = max(bk, int(knobs.l1_k * scale) // bk * bk)
    cls = "Kernel" + "".join(p.capitalize() for p in spec.name.split("_"))
    gms = "a, b, c"
    lines = [HEADER, f"# {spec.name}: C = A @ B on the cube, {spec.dtype} in, float32 accumulate",
             f"BASE_M = {knobs.base_m}", f"BASE_N = {knobs.base_n}", f"BASE_K = {bk}", f"L1_K = {l1k}",
             f"BUFFER_NUM = {knobs.buffer_num}", f"CORES = {target.cube_cores}", f"BLOCK_DIM = {knobs.block_dim}", "", "",
             f"class {cls}:"]
    init = ["self.M = M", "self.K = K", "self.N = N", "self.bm = bm", "self.bn = bn",
            "self.n_mt = (M + bm - 1) // bm", "self.n_nt = (N + bn - 1) // bn",
            "start = GetBlockIdx() * tpb", "self.t0 = start", "self.t1 = min(T, start + tpb)",
            "self.ga = GlobalTensor()", "self.ga.SetGlobalBuffer(a)",
            "self.gb = GlobalTensor()", "self.gb.SetGlobalBuffer(b)",
            "self.gc = GlobalTensor()", "self.gc.SetGlobalBuffer(c)",
            "self.pipe = TPipe()",
            "self.qa1 = TQue(TPosition.A1, BUFFER_NUM)",
            f"self.pipe.InitBuffer(self.qa1, BUFFER_NUM, bm * L1_K * {sz})",
            "self.qb1 = TQue(TPosition.B1, BUFFER_NUM)",
            f"self.pipe.InitBuffer(self.qb1, BUFFER_NUM, L1_K * bn * {sz})",
            "self.qa2 = TQue(TPosition.A2, 2)",
            f"self.pipe.InitBuffer(self.qa2, 2, bm * BASE_K * {sz})",
            "self.qb2 = TQue(TPosition.B2, 2)",
            f"self.pipe.InitBuffer(self.qb2, 2, BASE_K * bn * {sz})",
            "self.qc = TQue(TPosition.CO1, 1)",
            "self.pipe.InitBuffer(self.qc, 1, bm * bn * 4)"]
    lines.append(method("Init", f"{gms}, M, K, N, bm, bn, tpb, T", init))
    lines.append(method("Process", "", [
        "per_mat = self.n_mt * self.n_nt",
        "for t in range(self.t0, self.t1):",
        "    bt = t // per_mat",
        "    mt = t % per_mat // self.n_nt",
        "    nt = t % self.n_nt",
        "    m0 = mt * self.bm",
        "    n0 = nt * self.bn",
        "    self.Tile(bt, m0, min(self.bm, self.M - m0), n0, min(self.bn, self.N - n0))",
    ]))
    tile = [
        f"mp = (m + {f - 1}) // {f} * {f}",
        f"np_ = (n + {f - 1}) // {f} * {f}",
        "abase = bt * self.M * self.K",
        "bbase = bt * self.K * self.N",
        "cl = self.qc.AllocTensor(float32)",
    ]
    tile += [
        "for k0 in range(0, self.K, L1_K):",
        "    kl = min(L1_K, self.K - k0)",
        f"    kp = (kl + {f - 1}) // {f} * {f}",
        f"    a1 = self.qa1.AllocTensor({dt})",
        ("    DataCopy(a1, self.ga[abase + k0 * self.M + m0], Nd2NzParams(1, kl, m, 0, self.M, kp, 1, 0))"
         if spec.trans_a else
         "    DataCopy(a1, self.ga[abase + m0 * self.K + k0], Nd2NzParams(1, m, kl, 0, self.K, mp, 1, 0))"),
        "    self.qa1.EnQue(a1)",
        f"    b1 = self.qb1.AllocTensor({dt})",
        ("    DataCopy(b1, self.gb[bbase + n0 * self.K + k0], Nd2NzParams(1, n, kl, 0, self.K, np_, 1, 0))"
         if spec.trans_b else
         "    DataCopy(b1, self.gb[bbase + k0 * self.N + n0], Nd2NzParams(1, kl, n, 0, self.N, kp, 1, 0))"),
        "    self.qb1.EnQue(b1)",
        f"    a1 = self.qa1.DeQue({dt})",
        f"    b1 = self.qb1.DeQue({dt})",
        "    for kk in range(0, kp, BASE_K):",
        "        ks = min(BASE_K, kp - kk)",
        f"        a2 = self.qa2.AllocTensor({dt})",
        # A transposed sits in L1 as [kp, mp]: a ks x mp slab, loaded transposed to mp x ks.
        ("        LoadData(a2, a1[kk * mp], LoadData2DParams(ks, mp, mp, True))" if spec.trans_a else
         "        LoadData(a2, a1[kk], LoadData2DParams(mp, ks, kp, False))"),
        "        self.qa2.EnQue(a2)",
        f"        b2 = self.qb2.AllocTensor({dt})",
        ("        LoadData(b2, b1[kk], LoadData2DParams(np_, ks, kp, True))" if spec.trans_b else
         "        LoadData(b2, b1[kk * np_], LoadData2DParams(ks, np_, np_, False))"),
        "        self.qb2.EnQue(b2)",
        f"        a2 = self.qa2.DeQue({dt})",
        f"        b2 = self.qb2.DeQue({dt})",
        "        first = k0 + kk == 0",
    ]
    tile += ["        Mmad(cl, a2, b2, MmadParams(m, n, min(ks, kl - kk), first))"]
    tile += [
        "        self.qa2.FreeTensor(a2)",
        "        self.qb2.FreeTensor(b2)",
        "    self.qa1.FreeTensor(a1)",
        "    self.qb1.FreeTensor(b1)",
    ]
    tile += [
        "self.qc.EnQue(cl)",
        "cl = self.qc.DeQue(float32)",
        "Fixpipe(self.gc[bt * self.M * self.N + m0 * self.N + n0], cl, FixpipeParams(m, n, np_, self.N))",
        "self.qc.FreeTensor(cl)",
    ]
    lines.append(method("Tile", "bt, m0, m, n0, n", tile))
    lines.append(f"@kernel\ndef {spec.name}_kernel({gms}, M, K, N, bm, bn, tpb, T):\n"
                 f"    op = {cls}()\n    op.Init({gms}, M, K, N, bm, bn, tpb, T)\n    op.Process()\n\n")
    lines.append(
        f"def {spec.name}_launch({gms}, batch, M, K, N):\n"
        "    cores = BLOCK_DIM or CORES\n"
        f"    bm = min(BASE_M, (M + {f - 1}) // {f} * {f})\n"
        f"    bn = min(BASE_N, (N + {f - 1}) // {f} * {f})\n"
        "    # Shrink the tile while cores would idle (N first, then M), never below 64.\n"
        "    while batch * ((M + bm - 1) // bm) * ((N + bn - 1) // bn) < cores and (bn > 64 or bm > 64):\n"
        "        if bn > 64 and bn >= bm:\n"
        f"            bn = max(64, (bn // 2 + {f - 1}) // {f} * {f})\n"
        "        else:\n"
        f"            bm = max(64, (bm // 2 + {f - 1}) // {f} * {f})\n"
        "    T = batch * ((M + bm - 1) // bm) * ((N + bn - 1) // bn)\n"
        "    tpb = (T + cores - 1) // cores\n"
        "    block_dim = (T + tpb - 1) // tpb\n"
        f"    {spec.name}_kernel[block_dim]({gms}, M, K, N, bm, bn, tpb, T)\n\n")
    if with_forward:
        args = "a, b"
        mk = "K, M" if spec.trans_a else "M, K"
        n = "b.shape[-2]" if spec.trans_b else "b.shape[-1]"
        if spec.batched:
            fwd = [f"    batch, {mk} = a.shape", f"    N = {n}", f"    c = empty((batch, M, N), {dt})"]
        else:
            fwd = ["    batch = 1", f"    {mk} = a.shape", f"    N = {n}", f"    c = empty((M, N), {dt})"]
        lines.append(f"def forward({args}):\n" + "\n".join(fwd) +
                     f"\n    {spec.name}_launch({gms}, batch, M, K, N)\n    return c\n")
    return "\n".join(lines)
