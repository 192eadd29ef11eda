"""Depthwise 2-D convolution (groups = channels, one k_h x k_w filter per channel) on the
vector cores, in one launch with no padded copy or im2col buffer in GM.

y[b, c, oh, ow] = bias[c] + sum_{i, j} w[c, i, j] * x[b, c, oh*s_h + i*d_h - p_h, ow*s_w + j*d_w - p_w]

A unit of work is R output rows of one (b, c) plane; each AIV takes a contiguous range of
units. Per unit the input rows it needs come GM -> UB once, and every tap is a
multiply-accumulate into a float32 accumulator
(`Axpy`; half inputs go half -> float in the Axpy itself, Atlas A2 allows that pair), so
the sum is rounded once to the output dtype, as torch's CPU kernel does.

- **Padding is done by the copy.** Vector operands must start 32 B aligned (docs/hardware.md),
  so a tap cannot read the input at a 1-element shift in UB. Stride 1: the copy lands the
  rows so that UB column u holds padded input column u; the left zeros come from
  DataCopyPad's leftPadding (at most 32 B a row, CANN Ascend C API "DataCopyPad(ISASI)",
  atlasascendc_api_07_0265: UB start 32 B aligned, GM start unaligned, left/right padding
  filled with paddingValue), the right ones from the UB slot zeroed once at start (every
  unit writes the same columns), and padding rows are zeroed by Duplicate. One Gather per
  filter column j makes copy j (column u = padded column u + j*d_w, the shift being
  Gather's base address), and tap (i, j) is one Axpy over R rows at row offset i*d_h of it.
- **Other strides** pick their taps with `Gather` (byte offsets into UB, Atlas A2 Gather
  takes half/float): one offset table of R x OW_p entries built once per core, the tap's
  position in the byte base argument.
- Input slots and output slots are double-buffered with explicit flags (MTE2 -> V -> MTE3
  and back), so the copies of unit t+1 overlap the taps of unit t.
"""

from __future__ import annotations

from dataclasses import dataclass

from sage.kernels.library.conv_gemm import conv_out_len
from sage.kernels.library.source import DTYPE_SIZE, HEADER, dsl_dtype
from sage.kernels.target import Target

WEIGHT_BYTES = 8192             # UB kept for the weights and biases (float32, plus half staging)
UB_BYTES = 196608 - WEIGHT_BYTES
ROW_OVERHEAD = 6                # a unit's fixed cost in output rows (copies' setup, flags): the split's tie-break


@dataclass(frozen=True)
class DepthwiseSpec:
    name: str
    batch: int
    channels: int
    h: int
    w: int
    kh: int
    kw: int
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    dtype: str                   # input, weight, bias and output
    bias: bool = True
    x: str = "x"
    weight: str = "w"
    b: str = "b"
    out: str = "out"

    @property
    def out_hw(self) -> tuple[int, int]:
        return (conv_out_len(self.h, self.kh, self.stride[0], self.padding[0], self.dilation[0]),
                conv_out_len(self.w, self.kw, self.stride[1], self.padding[1], self.dilation[1]))

    @property
    def shifted(self) -> bool:
        """Stride 1: taps are row offsets into per-column shifted copies (no Gather)."""
        return self.stride == (1, 1)


def _ceil(n: int, unit: int) -> int:
    return -(-n // unit) * unit


@dataclass(frozen=True)
class _Geometry:
    rows: int          # R, output rows per unit
    rows_in: int       # input rows a unit reads
    pitch: int         # UB row pitch of the input copies (elements)
    opitch: int        # UB row pitch of the accumulator
    units: int
    per: int           # units per block
    blocks: int
    slot_in: int       # elements of one input slot
    base: int          # stride 1: row pitch of the copied (padded) rows the shifted copies gather from


def geometry(spec: DepthwiseSpec, cores: int) -> _Geometry:
    es = DTYPE_SIZE[spec.dtype]
    (sh, sw), (ph, pw), (dh, dw) = spec.stride, spec.padding, spec.dilation
    oh, ow = spec.out_hw
    if oh < 1 or ow < 1:
        raise ValueError("an empty output")
    unit = 32 // es                     # elements per 32 B block
    if spec.shifted:
        if pw * es > 32:
            raise ValueError(f"padding {pw} is more than DataCopyPad's 32 B of left padding")
        pitch = _ceil(max(ow, spec.w + pw), max(unit, 8))
        opitch = pitch
        copies = spec.kw
        # the padded rows as copied (column u = padded column u), wide enough for every shift
        base = _ceil(max(pitch + (spec.kw - 1) * dw, pw + spec.w + unit), unit)
    else:
        pitch = _ceil(_ceil(pw, unit) + spec.w + pw, unit)     # data at the aligned column ceil(p_w)
        opitch = _ceil(ow, 16)
        copies = 1
        base = 0
    planes = spec.batch * spec.channels
    best = None
    for parts in range(1, oh + 1):
        r = -(-oh // parts)
        r_in = (r - 1) * sh + (spec.kh - 1) * dh + 1
        # two input slots, two fp32 accumulators, two output slots (half), gather scratch
        need = 2 * r * opitch * 4 + (2 * r * opitch * es if es != 4 else 0)
        if spec.shifted:        # two base slots, the shifted copies, their gather table
            need += 2 * r_in * base * es + copies * r_in * pitch * es + r_in * pitch * 4
        else:
            need += 2 * r_in * pitch * es
        if not spec.shifted:
            need += r * opitch * (4 + es)
        if need > UB_BYTES:
            continue
        units = planes * -(-oh // r)
        blocks = min(cores, units)
        cost = -(-units // blocks) * (r + ROW_OVERHEAD)
        if best is None or cost < best[0]:
            best = (cost, r, r_in, units)
    if best is None:
        raise ValueError(f"an output row of {ow} with {spec.kh} filter rows does not fit in UB")
    _, r, r_in, units = best
    per = -(-units // min(cores, units))
    slot = r_in * base if spec.shifted else r_in * pitch
    return _Geometry(r, r_in, pitch, opitch, units, per, -(-units // per), slot, base)


def supported(spec: DepthwiseSpec, cores: int = 48) -> bool:
    """The kernel takes this convolution: float32/float16, a non-empty output, padding within
    DataCopyPad's 32 B, rows and weights that fit in UB."""
    if spec.dtype not in ("float32", "float16") or min(spec.batch, spec.channels) < 1:
        return False
    try:
        geometry(spec, cores)
    except ValueError:
        return False
    return _weight_bytes(spec) <= WEIGHT_BYTES


def _weight_bytes(spec: DepthwiseSpec) -> int:
    """UB for the weights and biases as float32 (plus their half staging)."""
    es = DTYPE_SIZE[spec.dtype]
    nw = _ceil(spec.channels * spec.kh * spec.kw, 32 // es) + (spec.channels if spec.bias else 0)
    return _ceil(nw * 4, 32) + (_ceil(nw * es, 32) if es != 4 else 0)


def depthwise_args(spec: DepthwiseSpec) -> list[str]:
    from sage.kernels.library.conv_gemm import conv_args

    return conv_args(spec)       # the same tensor arguments: x, w, (b,) out


def depthwise_source(spec: DepthwiseSpec, target: Target) -> str:
    from sage.kernels.library.conv_depthwise_text import copies, offsets, pad_rows, shift_copies, shift_table, taps

    if spec.dtype not in ("float32", "float16"):
        raise ValueError(f"a {spec.dtype} depthwise convolution (float32 and float16 are written)")
    g = geometry(spec, target.vector_cores)
    es, dt, n = DTYPE_SIZE[spec.dtype], dsl_dtype(spec.dtype), spec.name
    half = es == 2
    c, kk = spec.channels, spec.kh * spec.kw
    wb = _ceil(c * kk, 32 // es)                     # bias offset in the staged (and float) weights
    nw = wb + (c if spec.bias else 0)                # weights then biases, as float32 in UB
    if _weight_bytes(spec) > WEIGHT_BYTES:
        raise ValueError(f"{c} channels x {kk} taps of weights do not fit the UB weight area")
    oh, ow = spec.out_hw
    (sh, sw), (ph, pw), (dh, dw) = spec.stride, spec.padding, spec.dilation
    r, r_in, p, op = g.rows, g.rows_in, g.pitch, g.opitch
    acc_n = r * op
    args = ", ".join(depthwise_args(spec))
    load_w = [f"DataCopyPad(stage, self.g_w[0], DataCopyExtParams(1, {c * kk * es}, 0, 0, 0), "
              "DataCopyPadExtParams(False, 0, 0, 0))"]
    if spec.bias:
        load_w.append(f"DataCopyPad(stage[{wb}], self.g_b[0], DataCopyExtParams(1, {c * es}, 0, 0, 0), "
                      "DataCopyPadExtParams(False, 0, 0, 0))")
    if half:
        load_w += ["SetFlag(HardEvent.MTE2_V, 0)", "WaitFlag(HardEvent.MTE2_V, 0)",
                   f"Cast(wf, stage, RoundMode.CAST_NONE, {nw})", "SetFlag(HardEvent.V_S, 0)",
                   "WaitFlag(HardEvent.V_S, 0)"]
    else:
        load_w += ["SetFlag(HardEvent.MTE2_S, 0)", "WaitFlag(HardEvent.MTE2_S, 0)"]
    load_w_text = "\n        ".join(load_w)
    bias_line = (f"Duplicate(acc, wf.GetValue({wb} + ch), {acc_n})" if spec.bias else f"Duplicate(acc, 0.0, {acc_n})")
    return f'''{HEADER}
class Kernel_{n}:
    def Init(self, {args}):
        self.t0 = GetBlockIdx() * {g.per}
        self.t1 = min({g.units}, self.t0 + {g.per})
        self.g_x = GlobalTensor()
        self.g_x.SetGlobalBuffer({spec.x})
        self.g_w = GlobalTensor()
        self.g_w.SetGlobalBuffer({spec.weight})
        {f"self.g_b = GlobalTensor(){chr(10)}        self.g_b.SetGlobalBuffer({spec.b})" if spec.bias else "pass"}
        self.g_o = GlobalTensor()
        self.g_o.SetGlobalBuffer({spec.out})
        self.pipe = TPipe()
        {f"self.wbuf = TBuf(TPosition.VECCALC){chr(10)}        self.pipe.InitBuffer(self.wbuf, {_ceil(nw * 4, 32)})" if half else "pass"}
        self.sbuf = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.sbuf, {_ceil(nw * es, 32)})
        # one buffer per slot: each is its own tracked allocation
        self.xb = [TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC)]
        self.ab = [TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC)]
        self.ob = [TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC)]
        for k in range(2):
            self.pipe.InitBuffer(self.xb[k], {g.slot_in * es})
            self.pipe.InitBuffer(self.ab[k], {acc_n * 4})
            {f"self.pipe.InitBuffer(self.ob[k], {acc_n * es})" if half else "pass"}
        {f"self.gbuf = TBuf(TPosition.VECCALC){chr(10)}        self.pipe.InitBuffer(self.gbuf, {acc_n * es}){chr(10)}        self.ibuf = TBuf(TPosition.VECCALC){chr(10)}        self.pipe.InitBuffer(self.ibuf, {acc_n * 4})" if not spec.shifted else
           f"self.shb = TBuf(TPosition.VECCALC){chr(10)}        self.pipe.InitBuffer(self.shb, {spec.kw * r_in * p * es}){chr(10)}        self.tbl = TBuf(TPosition.VECCALC){chr(10)}        self.pipe.InitBuffer(self.tbl, {r_in * p * 4})"}

    def Process(self):
        if self.t0 >= self.t1:
            return
        stage = self.sbuf.Get({dt})
        wf = {"self.wbuf.Get(float32)" if half else "stage"}
        {load_w_text}
        # zero both input slots once: columns no copy writes stay the zero padding
        Duplicate(self.xb[0].Get({dt}), 0.0, {g.slot_in})
        Duplicate(self.xb[1].Get({dt}), 0.0, {g.slot_in})
{offsets(spec, g) if not spec.shifted else shift_table(spec, g)}
        SetFlag(HardEvent.V_MTE2, 0)
        SetFlag(HardEvent.V_MTE2, 1)
        SetFlag(HardEvent.MTE3_V, 0)
        SetFlag(HardEvent.MTE3_V, 1)
        for t in range(self.t0, self.t1):
            s = (t - self.t0) % 2
            plane = t // {-(-oh // r)}
            oh0 = t % {-(-oh // r)} * {r}
            rr = min({r}, {oh} - oh0)
            ih0 = oh0 * {sh} - {ph}
            lo = max(0, -ih0)
            hi = min({(r - 1) * sh + (spec.kh - 1) * dh + 1}, {spec.h} - ih0)
            xin = self.xb[s].Get({dt})
            WaitFlag(HardEvent.V_MTE2, s)
{copies(spec, g)}
            SetFlag(HardEvent.MTE2_V, s)
            ch = plane % {c}
            acc = self.ab[s].Get(float32)
            WaitFlag(HardEvent.MTE2_V, s)
            WaitFlag(HardEvent.MTE3_V, s)
{pad_rows(spec, g)}
{shift_copies(spec, g)}
            {bias_line}
{taps(spec, g)}
            {"pass" if spec.shifted else "SetFlag(HardEvent.V_MTE2, s)"}
            {f"res = self.ob[s].Get({dt}){chr(10)}            Cast(res, acc, RoundMode.CAST_RINT, {acc_n})" if half else "res = acc"}
            SetFlag(HardEvent.V_MTE3, s)
            WaitFlag(HardEvent.V_MTE3, s)
            DataCopyPad(self.g_o[plane * {oh * ow} + oh0 * {ow}], res,
                        DataCopyExtParams(rr, {ow * es}, {(op * es - _ceil(ow * es, 32)) // 32}, 0, 0))
            SetFlag(HardEvent.MTE3_V, s)
        WaitFlag(HardEvent.V_MTE2, 0)
        WaitFlag(HardEvent.V_MTE2, 1)
        WaitFlag(HardEvent.MTE3_V, 0)
        WaitFlag(HardEvent.MTE3_V, 1)


@kernel
def {n}_kernel({args}):
    op = Kernel_{n}()
    op.Init({args})
    op.Process()


def {n}_launch({args}):
    {n}_kernel[{g.blocks}]({args})
'''
