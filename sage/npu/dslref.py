"""Generate docs/dsl.md, the DSL reference card, from the exported API and the default preset.

    .venv/bin/python -m sage.npu.dslref > docs/dsl.md

Signatures and descriptions come from the code (``inspect`` and docstrings), costs from the
preset, so the card cannot drift from what the simulator does (a test compares the file).
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re

import numpy as np

from sage.npu import ascendc, errors
from sage.npu.hardware import HardwareSpec, load_preset
from sage.npu.isa.card import legality_lines
from sage.npu.sim import caps
from sage.npu.sim.runtrace import MAX_TRACE_BYTES

EXAMPLE = '''\
from sage.npu.ascendc import *        # the only import allowed (plus `math`)

BUFFER_NUM = 2

class KernelAdd:
    def Init(self, x, y, z, block_len, tile_len):
        self.tile_len = tile_len
        self.tile_num = block_len // tile_len
        off = block_len * GetBlockIdx()
        self.x_gm = GlobalTensor(); self.x_gm.SetGlobalBuffer(x, off, block_len)
        self.y_gm = GlobalTensor(); self.y_gm.SetGlobalBuffer(y, off, block_len)
        self.z_gm = GlobalTensor(); self.z_gm.SetGlobalBuffer(z, off, block_len)
        self.pipe = TPipe()
        self.in_x = TQue(TPosition.VECIN, BUFFER_NUM)
        self.in_y = TQue(TPosition.VECIN, BUFFER_NUM)
        self.out_z = TQue(TPosition.VECOUT, BUFFER_NUM)
        nbytes = tile_len * sizeof(float16)
        self.pipe.InitBuffer(self.in_x, BUFFER_NUM, nbytes)
        self.pipe.InitBuffer(self.in_y, BUFFER_NUM, nbytes)
        self.pipe.InitBuffer(self.out_z, BUFFER_NUM, nbytes)

    def Process(self):
        for i in range(self.tile_num):
            self.CopyIn(i); self.Compute(i); self.CopyOut(i)

    def CopyIn(self, i):
        xl = self.in_x.AllocTensor(float16); yl = self.in_y.AllocTensor(float16)
        DataCopy(xl, self.x_gm[i * self.tile_len], self.tile_len)
        DataCopy(yl, self.y_gm[i * self.tile_len], self.tile_len)
        self.in_x.EnQue(xl); self.in_y.EnQue(yl)

    def Compute(self, i):
        xl = self.in_x.DeQue(float16); yl = self.in_y.DeQue(float16)
        zl = self.out_z.AllocTensor(float16)
        Add(zl, xl, yl, self.tile_len)
        self.out_z.EnQue(zl)
        self.in_x.FreeTensor(xl); self.in_y.FreeTensor(yl)

    def CopyOut(self, i):
        zl = self.out_z.DeQue(float16)
        DataCopy(self.z_gm[i * self.tile_len], zl, self.tile_len)
        self.out_z.FreeTensor(zl)

@kernel                                  # extern "C" __global__ __aicore__
def add_custom(x, y, z, block_len, tile_len):
    op = KernelAdd()
    op.Init(x, y, z, block_len, tile_len)
    op.Process()

def forward(x, y):                       # host side: same arguments as Model.forward
    z = empty_like(x)
    block_dim = 48
    add_custom[block_dim](x, y, z, x.numel() // block_dim, 2048)   # kern[blockDim](...), like <<<blockDim>>>
    return z
'''

# (heading, intro, exported names) in the order of the card
SECTIONS = [
    ("Host side (`forward`)",
     "`forward` gets GM handles (`GmHandle`: `shape`, `dtype`, `numel()`, `size(d)`, `dim()`, "
     "`view(*shape)`/`reshape`/`flatten()`) and plain Python values (a list of tensors, like `torch.cat`'s "
     "argument, arrives as a list of GM handles); model parameters come as keyword "
     "arguments named like `named_parameters()` with dots as underscores. Reading data on the host "
     "(indexing, `item()`, arithmetic) is a LaunchError. It allocates outputs, launches kernels with "
     "`kern[block_dim](args)` (each launch pays the launch overhead) and returns a handle or a tuple of "
     "fresh allocations (returning an input is an OutputSpecError).",
     ["kernel", "empty", "empty_like", "read_back", "sizeof"]),
    ("Blocks and memory",
     "Kernel APIs work only inside a launch. `TPosition` (alias `QuePosition`): VECIN/VECOUT/VECCALC in UB, "
     "A1/B1 in L1, A2 in L0A, B2 in L0B, CO1 in L0C. `InitBuffer` carves consecutive 32 B-aligned buffers "
     "whose total per memory must fit. A queue syncs its producer and consumer pipes only (VECIN MTE2->V, "
     "VECOUT V->MTE3, A1/B1 MTE2->MTE1, A2/B2 MTE1->M, CO1 M->FIX): `EnQue` = SetFlag on the producer, "
     "`DeQue` = WaitFlag blocking the whole consumer pipe, `FreeTensor` = SetFlag on the consumer, the next "
     "`AllocTensor` of that buffer = WaitFlag on the producer. Any other pipe touching the buffer needs its "
     "own flags. Two buffers = double buffering. A `TBuf` has no sync: pipes sharing it need SetFlag/WaitFlag. "
     "`LocalTensor`: `t[offset]` view, `GetSize()`. `GlobalTensor`: `gt[i]` view, `GetSize()`, "
     "`GetValue`/`SetValue` (scalar GM access).",
     ["GetBlockIdx", "GetBlockNum", "TPipe.InitBuffer", "TQue", "TQue.AllocTensor", "TQue.EnQue", "TQue.DeQue",
      "TQue.FreeTensor", "TQueBind", "TBuf", "TBuf.Get", "GlobalTensor.SetGlobalBuffer", "LocalTensor.GetValue",
      "LocalTensor.SetValue", "LocalTensor.ReinterpretCast"]),
    ("Cores: AIV (vector) and AIC (cube)",
     "A 910B splits each AI Core into AIC (cube, L1, L0A/B/C, MTE1/M/FIX) and AIV (vector, UB, MTE2/MTE3) cores; "
     "they share only GM. A kernel that uses one side is vector-only (block_dim AIV cores) or cube-only (AIC "
     "cores); more blocks than cores run in waves (block_dim <= 65535). A kernel using both declares "
     "`KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)` first: each block is one AIC and two AIVs running the "
     "same kernel function; `if ASCEND_IS_AIC:` / `if ASCEND_IS_AIV:` pick each side's code (on an AIV "
     "GetBlockIdx() is block*2+GetSubBlockIdx()). Hand data over through a GM workspace with "
     "CrossCoreSetFlag/CrossCoreWaitFlag. Blocks touching the same GM bytes need SyncAll or cross-core flags "
     "between them (else RaceError), atomics aside.",
     ["KERNEL_TASK_TYPE_DEFAULT", "KernelType", "ASCEND_IS_AIC", "GetSubBlockIdx", "GetTaskRation",
      "CrossCoreSetFlag", "CrossCoreWaitFlag", "SyncAll"]),
    ("Data movement",
     "GM->UB and GM->L1 run on MTE2, UB->GM and UB->L1 on MTE3, UB->UB on V. `DataCopy` needs the "
     "byte length and the local address 32 B aligned; use `DataCopyPad` for rows of any length "
     "(`DataCopyPadParams` = `DataCopyPadExtParams`).",
     ["DataCopy", "DataCopyParams", "DataCopyPad", "DataCopyExtParams", "DataCopyPadExtParams", "SetAtomicAdd",
      "SetAtomicMax", "SetAtomicMin", "SetAtomicNone"]),
    ("Vector (V pipe)",
     "Operands live in UB, start 32 B aligned and share one dtype (except Cast, Compare masks, Gather "
     "offsets). Level-2 form: `Op(dst, src..., count)`; mask/repeat form: `Op(dst, src..., mask, "
     "repeatTimes, RepeatParams)`: mask = active lanes per 256 B repeat (int or [low64, high64]), "
     "strides in 32 B blocks (dense: blk 1, rep 8). Arithmetic is done in the operand dtype: fp16 "
     "rounds every instruction (and reductions) to fp16 — cast to fp32 for accurate sums. [a+br] = cost "
     "head a + slope b x repeats in cycles (16-bit / 32-bit types where they differ).",
     [("Add", "Sub", "Mul", "Div", "Max", "Min", "And", "Or"), ("Adds", "Muls", "Maxs", "Mins", "LeakyRelu"),
      ("Exp", "Ln", "Abs", "Reciprocal", "Sqrt", "Rsqrt", "Relu", "Not"), "Duplicate", "Axpy", "Cast", "RoundMode",
      "Compare", "CompareScalar", "CMPMODE", "Select", "SELMODE", "Gather", "ReduceSum", "ReduceMax", "ReduceMin",
      "WholeReduceSum", "WholeReduceMax", "WholeReduceMin", "ReduceOrder", "BlockReduceSum", "BlockReduceMax",
      "Brcb", "Sort", "TopK", "MrgSort", "BinaryRepeatParams", "UnaryRepeatParams", "BrcbRepeatParams"]),
    ("High-level APIs (vector instruction sequences)",
     "Each issues the vector instructions of Ascend C's A2 implementation (PipeBarrier(PIPE_V) between steps): "
     "their cost and numerics. half or float. `sharedTmpBuffer`: UB bytes not overlapping the operands, or left "
     "out (`Gelu(dst, src, n)`) for the UB InitBuffer left free. Work runs in chunks the temp holds.",
     ["Gelu", "FasterGelu", "FasterGeluV2", "Sigmoid", "Silu", "Swish", "Tanh", "Erf", "Log", "Log2", "Log10",
      "Sign", "Sin", "Cos", "SoftMax", "SoftMaxShapeInfo", "LayerNorm", "LayerNormShapeInfo"]),
    ("Legality on Atlas A2 (else UnsupportedError)",
     "From CANN's Ascend C API reference for Atlas A2 (sage/npu/isa/atlas_a2.toml cites each page).",
     "legality"),
    ("Cube (M, MTE1, FIX pipes)",
     "Path: GM -DataCopy(Nd2NzParams)-> L1 (A1/B1) -LoadData-> L0A/L0B (A2/B2) -Mmad-> L0C (CO1) "
     "-Fixpipe-> GM. Values are kept row-major; tiles are padded to 16 rows and to 16 columns (32 for "
     "int8) with zeros. Any cube instruction makes the kernel a cube kernel: block_dim <= AIC cores.",
     ["Nd2NzParams", "LoadData", "LoadData2DParams", "Mmad", "MmadParams", "Fixpipe", "FixpipeParams", "Matmul"]),
    ("Sync",
     "Pipes run in parallel, each in order. Two pipes touching the same bytes (local, or GM within a "
     "block) need a sync edge (queue, flag or barrier), else RaceError. A scalar "
     "`GetValue` of data V/MTE2 wrote needs V_S/MTE2_S first; after `SetValue`, vector use needs S_V. "
     "`PipeType`: PIPE_S PIPE_V PIPE_M PIPE_MTE1 PIPE_MTE2 PIPE_MTE3 PIPE_FIX PIPE_ALL. "
     "Ids 0..7 = " + " ".join(f"EVENT_ID{i}" for i in range(8)) + ". `HardEvent.SRC_DST` for any two "
     "pipes, e.g. MTE2_V V_MTE3 MTE3_MTE2 V_MTE2 V_S S_V MTE2_S MTE1_M M_FIX.",
     ["SetFlag", "WaitFlag", "PipeBarrier"]),
    ("Debugging",
     "Like `print`, their output is captured (64 KB a run) and shown with the result (`sage npu run -v`, "
     "`printed` in --json), never on stdout. Not timed, no sync needed.",
     ["printf", "DumpTensor"]),
]

COST_OF = {"Add": "vadd", "Sub": "vsub", "Mul": "vmul", "Div": "vdiv", "Max": "vmax", "Min": "vmin", "And": "vand",
           "Or": "vor", "Adds": "vadds", "Muls": "vmuls", "Maxs": "vmaxs", "Mins": "vmins", "LeakyRelu": "vmuls",
           "Exp": "vexp", "Ln": "vln", "Abs": "vabs", "Reciprocal": "vrec", "Sqrt": "vsqrt", "Rsqrt": "vrsqrt",
           "Relu": "vrelu", "Not": "vnot", "Duplicate": "vector_dup", "Axpy": "vaxpy", "Cast": "vconv",
           "Compare": "vcmp", "CompareScalar": "vcmps", "Select": "vsel", "Gather": "vgather", "ReduceSum": "vcadd",
           "ReduceMax": "vcmax", "ReduceMin": "vcmin", "WholeReduceSum": "vcadd", "WholeReduceMax": "vcmax",
           "WholeReduceMin": "vcmin", "BlockReduceSum": "vcgadd", "BlockReduceMax": "vcmax", "Brcb": "vbrcb",
           "Sort": "vsort", "TopK": "vsort", "MrgSort": "vmrgsort"}


def _obj(name: str):
    obj = ascendc
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _fmt(value) -> str:
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, np.dtype):
        return value.name
    return repr(value)


def _params(obj) -> str:
    parts = []
    for p in inspect.signature(obj).parameters.values():
        if p.name == "self":
            continue
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            parts.append(f"*{p.name}")
            continue
        parts.append(p.name if p.default is inspect.Parameter.empty else f"{p.name}={_fmt(p.default)}")
    return "(" + ", ".join(parts) + ")"


def _signature(name: str, obj) -> str:
    if not callable(obj):  # a value kernels test, such as ASCEND_IS_AIC
        return name
    if inspect.isclass(obj) and issubclass(obj, enum.Enum):
        return f"{name}: " + " ".join(obj.__members__)
    if dataclasses.is_dataclass(obj):
        return name + "(" + ", ".join(f"{f.name}={_fmt(f.default)}" for f in dataclasses.fields(obj)) + ")"
    return name + _params(obj)


def _doc(obj) -> str:
    if dataclasses.is_dataclass(obj) and obj.__doc__.startswith(obj.__name__ + "("):
        return ""  # dataclass without a docstring of its own
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _costs(spec: HardwareSpec) -> str:
    t, s, cube = spec.transfer, spec.scalar, spec.cube
    bpc = spec.bytes_per_cycle
    lines = [
        f"- Clock {spec.chip.clock_mhz:g} MHz. A launch's device time = slowest core + "
        f"{spec.launch.device_fixed_us:g} us fixed; the host also spends {spec.launch.host_dispatch_us:g} us enqueuing "
        "each launch, overlapped with the device (so a chain of short launches is host-bound); blocks beyond the "
        "cores run in waves.",
        f"- Scalar: {s.issue_cycles:g} cycles to issue each instruction (in program order); an instruction starts "
        f"at max(its pipe free, issued, sync waits). LocalTensor GetValue/SetValue {s.local_access_cycles:g} cycles, "
        f"GlobalTensor GetValue/SetValue {s.gm_access_cycles:g}, SetFlag/WaitFlag {s.flag_cycles:g}.",
        f"- Vector: head + slope x repeats, repeats = ceil(count x sizeof / {spec.vector.repeat_bytes}); the head is "
        "paid only when the V pipe was idle (back-to-back instructions hide it; PipeBarrier(PIPE_V) exposes "
        "it). 16-bit column for 8/16-bit types, 32-bit column for 32/64-bit; Cast counts repeats of the wider type; "
        "Reduce* run one instruction per tree level (repeats summed, one head each).",
        "- Transfers: cycles = latency + max((K + bytes) / peak, bytes / plateau) (no plateau: peak): "
        + "; ".join(f"{name} {p.peak_gbps:g} GB/s ({bpc(p.peak_gbps):.1f} B/cycle)"
                    + (f", K {p.k_bytes:g} B" if p.k_bytes else "")
                    + (f", plateau {p.plateau_gbps:g} GB/s" if p.plateau_gbps else "")
                    + (f", +{p.latency_cycles:g} cycles" if p.latency_cycles else "")
                    for name, p in (("GM->UB", t.gm_to_ub), ("UB->GM", t.ub_to_gm), ("GM->L1", t.gm_to_l1),
                                    ("L1->L0A/B", t.l1_to_l0), ("L0C->GM", t.l0c_to_gm), ("UB->UB", t.ub_to_ub),
                                    ("UB->L1", t.ub_to_l1))) + ".",
        f"- GM effects: +{t.effects.burst_overhead_cycles:g} cycles per extra block of a multi-block copy; MTE2 reads "
        f"not {t.effects.gm_line_bytes} B aligned take {t.effects.unaligned_gm_penalty:g}x bandwidth time; bytes "
        f"already in L2 ({spec.chip.l2_bytes // 2**20} MiB, LRU) move {t.effects.l2_hit_speedup:g}x faster; all "
        f"cores together share {spec.chip.hbm_gbps:g} GB/s HBM.",
        f"- Cube Mmad: ceil(m/16)·ceil(k/(32/sizeof(in)))·ceil(n/16)·({cube.fp32_factor:g} if fp32 in) + "
        f"{cube.fixed_cycles:g} cycles.",
        f"- Caps of one forward() (`KernelResourceError` past one; they bound the process that replays the run): "
        f"{caps.MAX_RECORDS_PER_LAUNCH:,} records per launch and {caps.MAX_RECORDS:,} per run (every instruction, "
        f"flag and barrier of every block), {caps.MAX_DISTINCT_RECORDS:,} distinct records, {caps.MAX_BLOCKS:,} "
        f"blocks, {caps.MAX_LAUNCHES:,} launches, {caps.MAX_ALLOCATIONS:,} GM allocations (inputs and every "
        f"empty()); so at most {MAX_TRACE_BYTES / 2**20:.0f} MB of trace.",
    ]
    return "\n".join(lines)


def _errors() -> str:
    when = {
        "AlignmentError": "DataCopy length or local address not 32 B aligned; LoadData tile not whole fractals",
        "CapacityError": "InitBuffer sizes over UB/L1/L0A/L0B/L0C capacity",
        "BoundsError": "access outside a GM allocation or a local tensor",
        "QueueError": "DeQue of an empty queue, AllocTensor beyond the buffer count, use after FreeTensor",
        "RaceError": "two pipes touch the same local bytes with no sync between them",
        "LaunchError": "block_dim out of range, kernel API on the host, host reads tensor data",
        "OutputSpecError": "wrong number/shape/dtype of outputs, an input returned as output",
        "SandboxError": "outside the kernel language (the rules above)",
        "KernelTimeout": "too long, or WaitFlag with no pending SetFlag (deadlock)",
        "MemoryLimitError": "the kernel file used too much host memory",
        "KernelRuntimeError": "any other exception in kernel code (wrong dtype, bad argument, Python error)",
        "CoreTypeError": "vector work or UB on an AIC core, cube work or L1/L0 on an AIV core",
        "ImpossibleResultError": "a time below the physical floor (forged, or a simulator bug): not scored",
        "KernelResourceError": "more records, blocks, launches or GM allocations than the caps under Costs",
        "UnsupportedError": "an instruction/dtype/parameter combination Atlas A2 lacks (see Legality)",
        "KernelSyntaxError": "the file is not valid Python (the line quoted, a caret under the column)",
    }
    return "\n".join(f"- `{c.__name__}`: {when[c.__name__]}." for c in errors.ERROR_CLASSES)


def _short_cost(spec: HardwareSpec, key: str) -> str:
    c = spec.vector.costs[key]
    half = f"{c.b16[0]:g}+{c.b16[1]:g}r"
    return half if c.b16 == c.b32 else f"{half} / {c.b32[0]:g}+{c.b32[1]:g}r"


def _family(spec: HardwareSpec, names: tuple[str, ...]) -> str:
    """One line for ops sharing a signature: ``A|B|C(params)`` then each op's meaning and cost."""
    first = _obj(names[0])
    doc = _doc(first)
    also = doc[doc.index("; also") + 2:].replace(names[0] + "(", "Op(") if "; also" in doc else ""
    ops = "; ".join(f"{n}: {_obj(n).what} [{_short_cost(spec, _obj(n).cost_key)}]" for n in names)
    return f"- `{'|'.join(names)}{_params(first)}` — {also} {ops}."


def _entry(spec: HardwareSpec, name: str) -> str:
    obj = _obj(name)
    line = f"- `{_signature(name, obj)}`"
    doc = _doc(obj)
    short = name.split(".")[-1]
    if doc.startswith(short + "(") and "): " in doc:  # the docstring repeats the signature: keep its meaning
        doc = doc[doc.index("): ") + 3:]
    if doc and not (inspect.isclass(obj) and issubclass(obj, enum.Enum)):
        line += f" — {doc}"
    if short in COST_OF:
        line = re.sub(r" Cost: [^.\]]*\.", "", line)  # the bracket gives the numbers
        line += f" [{_short_cost(spec, COST_OF[short])}]"
    return line


def render(spec: HardwareSpec | None = None) -> str:
    spec = spec or load_preset()
    b, chip = spec.buffers, spec.chip
    out = [
        "<!-- generated by `python -m sage.npu.dslref`; do not edit -->",
        "# sage kernel DSL reference (Ascend C in Python)",
        "",
        f"Preset `{spec.name}`: {chip.aiv_cores} AIV (vector) cores, {chip.aic_cores} AIC (cube) cores; "
        f"block_dim <= {spec.launch.max_block_dim_vector} for vector kernels, <= {spec.launch.max_block_dim_cube} "
        f"for kernels using the cube. Per core: UB {b.ub_bytes} B, L1 {b.l1_bytes} B, L0A {b.l0a_bytes} B, "
        f"L0B {b.l0b_bytes} B, L0C {b.l0c_bytes} B. Pipes: S (scalar, issues everything), V, M (cube), MTE1 "
        "(L1->L0), MTE2 (GM->local), MTE3 (local->GM), FIX (L0C->GM).",
        "",
        "A kernel file is restricted Python: `from sage.npu.ascendc import *` (and `import math`) only; no "
        "name or attribute starting with `_` (so no `__init__`: use `Init`), no `try`/`with`/`yield`/`global`, "
        "builtins limited to plain ones (`range len min max abs int float ...`; no `getattr type id open`), "
        "classes derive only from your own classes, DSL objects are read-only handles. `print` is captured and "
        "shown with the result. Dtypes: "
        "`float32 float16 half bfloat16 int8 uint8 int16 uint16 int32 uint32 int64 bool_`; "
        "`AllocTensor(dtype)`, `DeQue(dtype)`, `Get(dtype)` take the element type.",
        "",
        "```python",
        EXAMPLE.rstrip(),
        "```",
    ]
    high_level = set(SECTIONS[[h for h, _, _ in SECTIONS].index("High-level APIs (vector instruction sequences)")][2])
    for heading, intro, names in SECTIONS:
        out += ["", f"## {heading}", "", intro, ""]
        if names == "legality":
            out += legality_lines(high_level)
            continue
        for name in names:
            out.append(_family(spec, name) if isinstance(name, tuple) else _entry(spec, name))
    out += ["", "## Costs", "", _costs(spec), "", "## Errors (each carries the kernel line)", "", _errors(), ""]
    return "\n".join(out)


def main() -> None:
    print(render(), end="")


if __name__ == "__main__":
    main()
