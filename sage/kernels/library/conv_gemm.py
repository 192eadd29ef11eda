"""Convolution (1-, 2- and 3-D, groups = 1) as an implicit GEMM in one MIX_AIC_1_2 launch,
with no im2col buffer: the AIVs lay the input out once, the AICs read every tap's window of
it straight from GM into L1.

Y[b, co, o] = bias[co] + sum_{tap, ci} W[co, ci, tap] * Xpad[b, ci, o * stride + tap * dilation]

1. **AIV prologue** (each AIV a share of the work, then an all-AIV barrier, then a flag to
   its AIC; CrossCoreSetFlag modes 0 and 2, CANN Ascend C API atlasascendc_api_07_0273):
   - `xq`: the zero-padded input split by stride phase, Xq[b, ci, phase, d, a, c] =
     Xpad[b, ci, d, a*s_h + p_h', c*s_w + p_w'], rows of Wq elements (a multiple of 16).
     Input rows come GM -> UB with DataCopyPad, `Gather` picks each phase's columns (the
     zero padding is a zero column of the staged rows), DataCopy writes whole rows.
   - `wt`: the weights tap-major, Wt[tap, co, ci] (a transpose by Gather), so that one
     tap's [Cout, Cin] block is a plain ND matrix for Nd2Nz.
   - `ones`: a row of ones; the bias is one more K step, A = bias as a [Cout, 1] matrix.
2. **AIC GEMM**: per output tile (b, depth slice, R grid rows of Wq columns, or one
   segment of a long row), C[Cout, R*Wq] = sum over taps and channel chunks of
   Wt[tap][:, chunk] @ Xq[b, chunk, phase(tap)][shift(tap) + tile]: the tap's B block is
   one DataCopy GM -> L1 with Nd2NzParams (nValue = channels, srcDValue = the channel pitch
   of xq, dValue = the tile's columns; Ascend C's ND2NZ path for the AIC core, Atlas A2),
   because inside one phase a tap is a constant shift of the flattened grid (CCE intrinsic
   copy_gm_to_cbuf_multi_nd2nz, cceapi_0095, CANN 8.5: row j of the ND source at src + j *
   srcDValue, a row's tail zero-filled to 32 B in L1; the rows past nValue up to the fractal
   are not written, so Wt's padded K columns are zero and the product ignores them). Weights sit in
   L1 for the whole launch. Mmad accumulates in float32 in L0C; Fixpipe writes each grid
   row's first OW columns (the rest of the row is padding) to Y, converting to its dtype.
3. **Overlap**: the prologue runs in waves of input channels (the AICs' K chunks), each
   ending in a barrier and a flag, so the AICs start on chunk 0 while later waves are laid
   out. With few input channels the column taps can become GEMM channels ("unrolled":
   k = ci * kw + j, one xq plane per column tap), chosen by an estimate (`geometry`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sage.kernels.library.conv_flags import FLAG_AIV, FLAG_WEIGHTS
from sage.kernels.library.source import DTYPE_SIZE, HEADER, dsl_dtype
from sage.kernels.target import Target

L1_BYTES = 524288 - 16384       # L1 minus headroom
L0C_BYTES = 131072
L0B_HALF = 32768                # one of two B2 buffers
UB_BYTES = 196608 - 16384


def _ceil(n: int, unit: int) -> int:
    return -(-n // unit) * unit


def conv_out_len(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output positions of a convolution along one axis (torch's formula, floor mode)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


@dataclass(frozen=True)
class ConvSpec:
    name: str
    batch: int
    cin: int
    cout: int
    size: tuple[int, int, int]          # D, H, W (1 for missing leading dims)
    kernel: tuple[int, int, int]
    stride: tuple[int, int, int]
    padding: tuple[int, int, int]
    dilation: tuple[int, int, int]
    dtype: str
    bias: bool = True
    x: str = "x"
    weight: str = "w"
    b: str = "b"
    out: str = "out"

    @property
    def out_size(self) -> tuple[int, ...]:
        return tuple(map(conv_out_len, self.size, self.kernel, self.stride, self.padding, self.dilation))


@dataclass(frozen=True)
class Geometry:
    hq: int
    wq: int
    dp: int
    phases: int
    grid: int            # pitch of one (b, ci, phase) plane of xq (its D x Hq x Wq grid, then slack)
    taps: tuple[tuple[int, int], ...]    # (phase, flat shift) per weight tap
    mp: int              # Cout padded to 16
    kp: int              # Cin padded to 16
    kc: int              # channels per Mmad
    nt: int              # tile columns
    rows: int            # grid rows per tile (1 in segment mode)
    segs: int            # column segments per row (1 in row mode)
    tiles: int
    blocks: int
    tpb: int
    rr: int              # grid rows per AIV prologue unit
    ws: int              # staged row pitch (UB)
    units: int
    upv: int             # prologue units per AIV
    nq: int              # weight rows co per AIV
    groups: tuple        # B copies per tile: (phase, shift, columns, ((tap, column offset), ...))
    gcols: int           # the widest group copy
    pp: int              # planes per prologue unit (1-D), else 1
    cv: int              # channels as the GEMM sees them (cin, or kw * cin unrolled)
    variants: tuple      # column start of each column plane the prologue writes per row phase
    pl: int              # xq planes per GEMM channel (phases of a tap)
    unroll: bool         # column taps are channels
    waves: int           # prologue waves: the AICs start on chunk w once wave w is in xq
    wave_ch: int         # input channels per wave
    nv: int              # AIVs of the launch
    defer_weights: bool  # the weights' flag goes after each AIV's first input unit


HBM_BYTES_PER_CYCLE = 1.6e12 / 1.8e9     # docs/hardware.md chips: ~1.6 TB/s at 1800 MHz


def geometry(spec: ConvSpec, cube_cores: int) -> Geometry:
    """The layout with the smaller estimate (cube cycles per core + the prologue's HBM
    traffic): plain, or with the column taps unrolled into channels where that is allowed."""
    options = []
    for unroll in (False, True):
        try:
            g = _geometry(spec, cube_cores, unroll)
        except ValueError:
            if not unroll:
                raise
            continue
        options.append((_estimate(spec, g), unroll, g))
    return min(options, key=lambda o: (o[0], o[1]))[2]


def _estimate(spec: ConvSpec, g: Geometry) -> float:
    """Cycles: the Mmads of the busiest core (docs/hardware.md's cube formula) plus the bytes the
    prologue reads and writes at the chip's HBM rate."""
    es = DTYPE_SIZE[spec.dtype]
    k0 = 32 // es
    steps = len(g.taps) * sum(-(-min(g.kc, g.cv - k) // k0) for k in range(0, g.cv, g.kc))
    cube = g.tpb * (g.mp // 16) * (g.nt // 16) * steps * (2 if es == 4 else 1)
    xq = spec.batch * spec.cin * g.phases * g.dp * g.hq * g.wq * es
    x = spec.batch * spec.cin * math.prod(spec.size) * es
    return cube + (xq + x) / HBM_BYTES_PER_CYCLE


def _geometry(spec: ConvSpec, cube_cores: int, unroll: bool) -> Geometry:
    es = DTYPE_SIZE[spec.dtype]
    (d, h, w), (kd, kh, kw) = spec.size, spec.kernel
    (sd, sh, sw), (pd, ph, pw), (dd, dh, dw) = spec.stride, spec.padding, spec.dilation
    od, oh, ow = spec.out_size
    if min(od, oh, ow) < 1:
        raise ValueError("an empty output")
    if sd != 1 or dd != 1:
        raise ValueError("depth stride and dilation other than 1")
    if spec.cout > 128:
        raise ValueError(f"{spec.cout} output channels (one M tile of at most 128 is written)")
    hq = -(-(h + 2 * ph) // sh)
    dp = d + 2 * pd
    one_d = d == 1 and h == 1 and hq == 1 and dp == 1
    # Unrolled, the column taps become channels (cv = kw * cin, k = ci * kw + j), the prologue
    # writing one plane per column tap: few input channels no longer waste most of each K
    # step, and the grid has no columns for the filter's width, for kw times the layout.
    if unroll and (one_d or kw == 1 or spec.cin * kw > 64):
        raise ValueError("the column taps are not unrolled for this convolution")
    if unroll:
        wq = _ceil(ow, 16)
        cv, variants, col_taps = spec.cin * kw, tuple(j * dw for j in range(kw)), 1
    else:
        wq = _ceil(max(-(-(w + 2 * pw) // sw), ow + (kw - 1) * dw // sw), 16)
        cv, variants, col_taps = spec.cin, tuple(range(sw)), kw
    taps, keyed = [], []
    for a in range(kd):
        for i in range(kh):
            for j in range(col_taps):
                phase = (i * dh % sh) * (1 if unroll else sw) + j * dw % sw
                taps.append((phase, (a * hq + i * dh // sh) * wq + j * dw // sw))
                keyed.append(((a, j, i * dh % sh), phase, a * hq * wq + j * dw // sw, i * dh // sh))
    mp, kp = _ceil(spec.cout, 16), _ceil(cv, 16)
    nt_max = min(512, L0C_BYTES // (mp * 4) // 16 * 16)
    best = None
    cands = [(r, r * wq, 1) for r in range(1, oh + 1) if r * wq <= nt_max]
    cands += [(1, nt, -(-ow // nt)) for nt in range(32, min(nt_max, wq - 16) + 1, 16)]   # row segments
    for rows, nt, segs in cands:
        tiles = spec.batch * od * -(-oh // rows) * segs
        blocks = min(cube_cores, tiles)
        per = -(-tiles // blocks)
        if per > 1 and 2 * mp * nt * 4 > L0C_BYTES:
            continue            # several tiles per core want two accumulators (Fixpipe under Mmad)
        cost = per * (nt + 96)          # + a tile's fixed cost, in columns
        if best is None or cost < best[0]:
            best = (cost, rows, nt, segs, tiles, blocks)
    _, rows, nt, segs, tiles, blocks = best
    # With many channels, at least two K chunks: two prologue waves, the AICs starting on the
    # first while the second is laid out (worth the extra copies only for large K)
    kc = min(kp, L0B_HALF // (nt * es) // 16 * 16, _ceil(-(-cv // 2), 16) if cv >= 64 else kp)
    if kc < 16:
        raise ValueError("a tile row does not fit L0B")
    groups = _groups(keyed, wq, nt, segs == 1)
    gcols = max(c for _, _, c, _ in groups)
    l1 = len(taps) * mp * kp * es + mp * 16 * es + 16 * nt * es + 2 * kc * gcols * es
    if l1 > L1_BYTES:
        raise ValueError(f"the weights ({len(taps)} taps of {spec.cout} x {spec.cin}) do not fit L1 with a tile")
    tpb = -(-tiles // blocks)
    blocks = -(-tiles // tpb)
    nv = 2 * blocks
    # staged row: zeros, the input row at the aligned column lead >= p_w, zeros: long enough
    # that every column a phase gathers (padding included) falls inside it
    lead = _ceil(pw, 32 // es)
    ws = _ceil(max(lead + w, lead + (wq - 1) * sw + max(variants) - pw + 1), 32 // es)
    # 1-D: a plane is one row, so a prologue unit takes pp planes (rows of x) at once
    planes = spec.batch * spec.cin
    rr_best = None
    for rr in range(1, (planes if one_d else hq) + 1):
        ub = 2 * rr * sh * ws * es + 2 * sh * len(variants) * rr * wq * es + len(variants) * rr * wq * 4
        if ub > UB_BYTES - 24576:
            break
        units = -(-planes // rr) if one_d else planes * dp * -(-hq // rr)
        cost = -(-units // nv) * (rr * wq * sh * sw + 800)
        if rr_best is None or cost < rr_best[0]:
            rr_best = (cost, rr, units)
    if rr_best is None:
        raise ValueError(f"a staged input row of {w} does not fit in UB")
    _, rr, units = rr_best
    pp = rr if one_d else 1
    nq = -(-spec.cout // nv)
    if nq * len(taps) * kp * (2 * es + 4) > 24576:
        raise ValueError("the weights' transpose share does not fit in UB")
    # input channels per prologue wave: a K chunk's worth (unrolled, kw GEMM channels each)
    wave_ch = -(-kc // kw) if unroll else kc
    wave0_units = spec.batch * dp * (1 if one_d else -(-hq // rr)) * -(-min(wave_ch, spec.cin) // pp)
    # a plane's pitch in xq leaves room for the widest copy past its last row: a tile's copy
    # may run past the rows it needs (into columns no output uses) but never into another
    # plane, which a later wave of the prologue may be writing at that moment
    grid = dp * hq * wq + _ceil(gcols, 16)
    return Geometry(hq, wq, dp, sh * len(variants), grid, tuple(taps), mp, kp, kc, nt, rows, segs, tiles,
                    blocks, tpb, rr, ws, units, -(-units // nv), nq, groups, gcols, pp, cv, variants,
                    sh if unroll else sh * sw, unroll, -(-spec.cin // wave_ch), wave_ch, nv,
                    -(-wave0_units // nv) >= 2)


def _groups(keyed: list, wq: int, nt: int, whole_rows: bool) -> tuple:
    """Taps that differ only in their row shift (same depth tap, column tap and row phase) share
    one B copy of the tile's rows plus the extra rows they reach: each then starts at a whole
    row of it (Wq columns, a multiple of 16: a fractal-aligned LoadData). A tile that is a
    segment of a row copies per tap. Each group: (phase, shift, columns, ((tap, column), ...))."""
    if not whole_rows:
        return tuple((ph, base + r * wq, nt, ((t, 0),)) for t, (_, ph, base, r) in enumerate(keyed))
    out: dict = {}
    for t, (key, ph, base, r) in enumerate(keyed):
        out.setdefault(key, (ph, base, []))[2].append((t, r))
    groups = []
    for ph, base, members in out.values():
        lo, hi = min(r for _, r in members), max(r for _, r in members)
        groups.append((ph, base + lo * wq, nt + (hi - lo) * wq, tuple((t, (r - lo) * wq) for t, r in members)))
    return tuple(groups)


def supported(spec: ConvSpec, cube_cores: int = 24) -> bool:
    if spec.dtype not in ("float32", "float16"):
        return False
    try:
        geometry(spec, cube_cores)
    except ValueError:
        return False
    return True


def conv_args(spec) -> list[str]:
    """The kernel's tensor arguments (a ConvSpec or a DepthwiseSpec: x, weight, b, out, bias)."""
    return [spec.x, spec.weight, spec.b, spec.out] if spec.bias else [spec.x, spec.weight, spec.out]


def conv_source(spec: ConvSpec, target: Target) -> str:
    from sage.kernels.library.conv_gemm_aic import aic_text
    from sage.kernels.library.conv_gemm_aiv import aiv_text

    if spec.dtype not in ("float32", "float16"):
        raise ValueError(f"a {spec.dtype} convolution (float32 and float16 are written)")
    g = geometry(spec, target.cube_cores)
    n, dt = spec.name, dsl_dtype(spec.dtype)
    args = conv_args(spec)
    params = ", ".join(args)
    kk = len(g.taps)
    xq_len = spec.batch * spec.cin * g.phases * g.grid + g.gcols + g.wq + 64
    bias_arg = spec.b if spec.bias else "None"
    # With two or more units a wave per AIV, the barrier completes while each AIV does its
    # first unit (Input then tells its AIC); with one, the AICs would load the weights only
    # after that unit, on their critical path: wait here.
    weights_ready = "" if g.defer_weights else (f"        CrossCoreWaitFlag({FLAG_AIV})\n"
                                                 f"        CrossCoreSetFlag(2, PIPE_MTE3, {FLAG_WEIGHTS})")
    return f'''{HEADER}
GROUPS_{n} = {[list(gr) for gr in g.groups]!r}
{aiv_text(spec, g)}
{aic_text(spec, g)}

@kernel
def {n}_kernel({params}, xq, wt, ones):
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)
    if ASCEND_IS_AIV:
        pre = Pre_{n}()
        pre.Init({spec.x}, {spec.weight}, {bias_arg}, xq, wt, ones)
        pre.Weights()
        pre.Ones()
        # the weights (and ones) first: the AICs load them while the AIVs lay out the input
        CrossCoreSetFlag(0, PIPE_MTE3, {FLAG_AIV})
{weights_ready}
        pre.Input()          # in waves of input channels, each ending in a barrier and a flag
    else:
        CrossCoreWaitFlag({FLAG_WEIGHTS})
        op = Cube_{n}()
        op.Init({bias_arg}, {spec.out}, xq, wt, ones)
        op.Process()


def {n}_launch({params}):
    xq = empty(({xq_len},), {dt})
    wt = empty(({kk * spec.cout * g.kp},), {dt})
    ones = empty(({g.nt},), {dt})
    {n}_kernel[{g.blocks}]({params}, xq, wt, ones)
'''


def flops(spec: ConvSpec) -> int:
    return 2 * spec.batch * spec.cout * spec.cin * math.prod(spec.kernel) * math.prod(spec.out_size)
