"""Inclusive scans (cumsum, cumprod) along one axis of a dense tensor viewed as [O, N, I].

The scan is a recurrence over rows of a tile: acc[j] = acc[j-1] (+|*) x[j], one vector
instruction per row, so every lane of a row is an independent scan.

- I > 1 (an outer or middle axis): a unit is one o and a band of W columns; the band's N
  rows stream through UB in chunks, the last row of a chunk carried into the next.
- I == 1 (the last axis): a unit is R rows; the row is cut into chunks of C columns, each
  [R, C] tile is transposed in UB with `Gather` (UB operands must start 32 B aligned, so
  a shifted add inside a row is illegal) into [C, R], scanned as above (R lanes at a
  time, a carry of R values between chunks) and gathered back. The two byte-offset
  tables are built once per block by doubling `Adds` from 8 scalar writes.

Floating inputs accumulate in float32 (a half or bfloat16 cumsum rounds once, at the
store); int32 accumulates in int32 and widens to torch's int64 at the store, so sums
beyond the int32 range wrap (torch's would not).
"""

from __future__ import annotations

from dataclasses import dataclass

from sage.kernels.library.source import DTYPE_SIZE, HEADER, dsl_dtype
from sage.kernels.target import Target

TILE_ELEMS = 4096          # elements of one [rows, cols] tile in UB (per buffer)
MAX_ROW_LANES = 128        # rows a last-axis scan runs side by side at most
OPS = {"sum": ("Add", 0), "prod": ("Mul", 1)}
ACC = {"float32": "float32", "float16": "float32", "bfloat16": "float32", "int32": "int32"}
# (acc -> out): the cast that stores the result; absent: no cast (same dtype)
STORE_CAST = {("float32", "float16"): "CAST_RINT", ("float32", "bfloat16"): "CAST_RINT",
              ("int32", "int64"): "CAST_NONE"}


@dataclass(frozen=True)
class ScanSpec:
    name: str
    outer: int                 # O
    length: int                # N, the scanned axis
    inner: int                 # I
    dtype: str                 # x
    out_dtype: str             # out (int64 for an int32 cumsum, as torch)
    op: str = "sum"            # sum | prod
    x: str = "x"
    out: str = "out"
    x_offset: int = 0


def scan_args(spec: ScanSpec) -> list[str]:
    return [spec.x, spec.out]


def scan_check(spec: ScanSpec) -> None:
    acc = ACC.get(spec.dtype)
    if acc is None:
        raise ValueError(f"a {spec.dtype} scan (the vector unit scans float or int32)")
    if spec.op not in OPS:
        raise ValueError(f"a cumulative {spec.op}")
    if acc != spec.out_dtype and (acc, spec.out_dtype) not in STORE_CAST:
        raise ValueError(f"a {spec.dtype} scan stored as {spec.out_dtype}")


def _ceil(a: int, b: int) -> int:
    return -(-a // b) * b


def scan_layout(spec: ScanSpec, cores: int) -> tuple[int, int]:
    """(lanes, chunk): lanes scanned side by side (W columns, or R rows when transposed),
    and how many steps of the recurrence one tile holds."""
    if spec.inner == 1:
        # up to 128 rows side by side: the Adds number outer x length / lanes (a 8192 x 16384
        # cumsum took 2.1 M at 64, over the 2.5 M records a launch may make once the
        # transposes are added), while a chunk of 32 columns still moves in 64 B bursts
        lanes = min(MAX_ROW_LANES, max(8, _ceil(-(-spec.outer // cores), 8)))
        chunk = min(_ceil(spec.length, 16), max(16, TILE_ELEMS // lanes // 16 * 16))
        return lanes, chunk
    lanes = min(2048, _ceil(spec.inner, 16))
    while lanes > 16 and spec.outer * -(-spec.inner // lanes) < cores:
        lanes = _ceil(lanes // 2, 16)
    return lanes, max(1, min(spec.length, TILE_ELEMS // lanes))


def scan_source(spec: ScanSpec, target: Target, block_dim: int | None = None) -> str:
    scan_check(spec)
    acc = ACC[spec.dtype]
    lanes, chunk = scan_layout(spec, block_dim or target.vector_cores)
    transposed = spec.inner == 1
    units = -(-spec.outer // lanes) if transposed else spec.outer * -(-spec.inner // lanes)
    blocks = max(1, min(block_dim or target.vector_cores, units))
    per = -(-units // blocks)
    blocks = -(-units // per)
    es, os_, as_ = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.out_dtype], DTYPE_SIZE[acc]
    tile = lanes * chunk
    dt, ot, at = dsl_dtype(spec.dtype), dsl_dtype(spec.out_dtype), dsl_dtype(acc)
    vop, ident = OPS[spec.op]
    fill = repr(float(ident)) if acc == "float32" else str(ident)
    cast_in = spec.dtype != acc
    cast_out = (acc, spec.out_dtype) in STORE_CAST
    n, N, I, O = spec.name, spec.length, spec.inner, spec.outer
    # S: the scanned tile in acc dtype; D: where the scanned rows end up (in acc dtype)
    src_tile = "a" if cast_in else "x"
    dst_tile = "a" if cast_in or cast_out else "y"
    lines = []
    if transposed:
        lines += [f"r0 = u * {lanes}", f"rn = min({lanes}, {O} - r0)",
                  f"Duplicate(cr, {fill}, {lanes})",
                  f"for c in range(0, {N}, {chunk}):",
                  f"    k = min({chunk}, {N} - c)",
                  f"    base = {spec.x_offset} + r0 * {N} + c", "    obase = r0 * " + f"{N} + c",
                  "    rows = rn", f"    gin = ({N} - k) * {es}", f"    gout = ({N} - k) * {os_}"]
    else:
        nb = -(-I // lanes)
        lines += [f"o = u // {nb}", f"c0 = (u % {nb}) * {lanes}", f"w = min({lanes}, {I} - c0)",
                  f"Duplicate(cr, {fill}, {lanes})",
                  f"for c in range(0, {N}, {chunk}):",
                  f"    k = min({chunk}, {N} - c)",
                  f"    base = {spec.x_offset} + (o * {N} + c) * {I} + c0", f"    obase = (o * {N} + c) * {I} + c0",
                  "    rows = k", f"    gin = ({I} - w) * {es}", f"    gout = ({I} - w) * {os_}"]
    width = "k" if transposed else "w"        # elements of each GM row copied
    pitch = chunk if transposed else lanes    # UB elements per loaded row
    lines += [
        f"    x = self.qi.AllocTensor({dt})",
        f"    DataCopyPad(x, self.g_x[base], DataCopyExtParams(rows, {width} * {es}, gin, "
        f"({pitch * es} - ({width} * {es} + 31) // 32 * 32) // 32, 0), DataCopyPadExtParams(False, 0, 0, 0))",
        "    self.qi.EnQue(x)", f"    x = self.qi.DeQue({dt})", f"    y = self.qo.AllocTensor({ot})"]
    if cast_in:
        lines.append(f"    Cast(a, x, RoundMode.CAST_NONE, {tile})")
    if transposed:
        lines += [f"    Gather(t, {src_tile}, tf, 0, {tile})",
                  "    for j in range(k):",
                  f"        {vop}(t[j * {lanes}], t[j * {lanes}], cr if j == 0 else t[(j - 1) * {lanes}], {lanes})",
                  f"    DataCopy(cr, t[(k - 1) * {lanes}], {lanes})",
                  f"    Gather({dst_tile}, t, tb, 0, {tile})"]
    else:
        lines += ["    for j in range(k):",
                  f"        {vop}({dst_tile}[j * {lanes}], {src_tile}[j * {lanes}], "
                  f"cr if j == 0 else {dst_tile}[(j - 1) * {lanes}], {lanes})",
                  f"    DataCopy(cr, {dst_tile}[(k - 1) * {lanes}], {lanes})"]
    if cast_out:
        lines.append(f"    Cast(y, {dst_tile}, RoundMode.{STORE_CAST[(acc, spec.out_dtype)]}, {tile})")
    lines += ["    self.qi.FreeTensor(x)", "    self.qo.EnQue(y)", f"    y = self.qo.DeQue({ot})",
              f"    DataCopyPad(self.g_o[obase], y, DataCopyExtParams(rows, {width} * {os_}, "
              f"({pitch * os_} - ({width} * {os_} + 31) // 32 * 32) // 32, gout, 0))",
              "    self.qo.FreeTensor(y)"]
    body = "\n".join("            " + line for line in lines)
    bufs = [f"self.pipe.InitBuffer(self.qi, 2, {tile * es})", f"self.pipe.InitBuffer(self.qo, 2, {tile * os_})",
            f"self.pipe.InitBuffer(self.bc, {_ceil(lanes * as_, 32)})"]
    gets = [f"cr = self.bc.Get({at})"]
    if cast_in or cast_out:
        bufs.append(f"self.pipe.InitBuffer(self.ba, {tile * as_})")
        gets.append(f"a = self.ba.Get({at})")
    if transposed:
        bufs += [f"self.pipe.InitBuffer(self.bt, {tile * as_})", f"self.pipe.InitBuffer(self.bf, {tile * 4})",
                 f"self.pipe.InitBuffer(self.bb, {tile * 4})"]
        gets += [f"t = self.bt.Get({at})", "tf = self.bf.Get(int32)", "tb = self.bb.Get(int32)"]
    init_tables = _tables(lanes, chunk, as_) if transposed else ""
    return f'''{HEADER}
class Kernel_{n}:
    def Init(self, x, out):
        self.t0 = GetBlockIdx() * {per}
        self.t1 = min({units}, self.t0 + {per})
        self.g_x = GlobalTensor()
        self.g_x.SetGlobalBuffer(x)
        self.g_o = GlobalTensor()
        self.g_o.SetGlobalBuffer(out)
        self.pipe = TPipe()
        self.qi = TQue(TPosition.VECIN, 2)
        self.qo = TQue(TPosition.VECOUT, 2)
        self.bc = TBuf(TPosition.VECCALC)
        self.ba = TBuf(TPosition.VECCALC)
        self.bt = TBuf(TPosition.VECCALC)
        self.bf = TBuf(TPosition.VECCALC)
        self.bb = TBuf(TPosition.VECCALC)
{_indent(bufs, 2)}
    def Process(self):
        if self.t0 >= self.t1:
            return
{_indent(gets, 2)}
{init_tables}        for u in range(self.t0, self.t1):
{body}


@kernel
def {n}_kernel(x, out):
    op = Kernel_{n}()
    op.Init(x, out)
    op.Process()


def {n}_launch(x, out):
    {n}_kernel[{blocks}](x, out)
'''


def _indent(lines: list[str], level: int) -> str:
    return "\n".join("    " * level + line for line in lines)


def _tables(rows: int, cols: int, es: int) -> str:
    """tf[j*R + r] = (r*C + j) * es (row-major [R, C] -> [C, R]); tb[r*C + j] = (j*R + r) * es.
    Eight scalar writes start each table's first row; doubling Adds fill the row, then the rows."""
    return f'''        for i in range(8):
            tf.SetValue(i, i * {cols * es})
            tb.SetValue(i, i * {rows * es})
        SetFlag(HardEvent.S_V, 0)
        WaitFlag(HardEvent.S_V, 0)
''' + _doubling("tf", 8, rows, 1, cols * es) + _doubling("tf", 1, cols, rows, es) + \
        _doubling("tb", 8, cols, 1, rows * es) + _doubling("tb", 1, rows, cols, es)


def _doubling(table: str, first: int, limit: int, stride: int, step: int) -> str:
    """table[m*stride ...] = table[0 ...] + m*step for m = first .. limit, doubling each time."""
    return f'''        m = {first}
        while m < {limit}:
            Adds({table}[m * {stride}], {table}, m * {step}, min(m, {limit} - m) * {stride})
            m = m * 2
'''
