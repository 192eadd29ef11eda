"""A scripted replay of a realistic model session on level0/12_swish (`--iterations 4`),
its answers written as a strong model writes them: prose, one kernel file, one JSON object.

1. a compact fp32-compute kernel that forgets `beta` (reads swish as SiLU): wrong on the
   fp16 case with beta 1.702;
2. the fix: correct, single-buffered on 8 cores;
3. double buffering on all 48 vector cores with bigger tiles, adopting the shown
   double-buffering experience;
4. tiles pushed to 16384 elements: the buffers no longer fit in UB (CapacityError);
5. the attempt-3 kernel again, as its final answer (a repeat: not judged again).

The reflection is answered in prose first, then, asked again, with the JSON object.
Used by tests/agent/test_llm_replay.py and benchmarks/agent_prompts.py (docs/agent.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable

TASK = "level0/12_swish"
CASES = [0, 1]            # float32 with beta 1.0, float16 with beta 1.702

KERNEL = '''\
from sage.npu.ascendc import *

# Swish y = x / (1 + exp(-beta * x)) over the flattened tensor. Half inputs are computed in
# float32 and rounded once on the way out.
TILE = 2048          # elements per tile
BUFFER_NUM = 1       # queue depth
BLOCK_DIM = 8        # cores used
DTYPES = (float32, float16, bfloat16)


class KernelSwish:
    def Init(self, x, y, total, per_block, beta, kind):
        self.dtype = DTYPES[kind]
        self.size = 4 if kind == 0 else 2
        self.beta = beta
        self.start = GetBlockIdx() * per_block
        self.end = min(total, self.start + per_block)
        self.pipe = TPipe()
        self.gx = GlobalTensor()
        self.gx.SetGlobalBuffer(x, 0, total)
        self.gy = GlobalTensor()
        self.gy.SetGlobalBuffer(y, 0, total)
        self.qx = TQue(TPosition.VECIN, BUFFER_NUM)
        self.pipe.InitBuffer(self.qx, BUFFER_NUM, TILE * self.size)
        self.qy = TQue(TPosition.VECOUT, BUFFER_NUM)
        self.pipe.InitBuffer(self.qy, BUFFER_NUM, TILE * self.size)
        self.bx = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.bx, TILE * 4)
        self.bt = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.bt, TILE * 4)
        self.bd = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.bd, TILE * 4)

    def Process(self):
        off = self.start
        while off < self.end:
            n = min(TILE, self.end - off)
            self.CopyIn(off, n)
            self.Compute(n)
            self.CopyOut(off, n)
            off += n

    def CopyIn(self, off, n):
        x = self.qx.AllocTensor(self.dtype)
        DataCopyPad(x, self.gx[off], DataCopyExtParams(1, n * self.size, 0, 0, 0), DataCopyPadExtParams(False, 0, 0, 0))
        self.qx.EnQue(x)

    def Compute(self, n):
        na = (n + 15) // 16 * 16
        x = self.qx.DeQue(self.dtype)
        xf = self.bx.Get(float32)
        t = self.bt.Get(float32)
        d = self.bd.Get(float32)
        if self.size == 4:
            Adds(xf, x, 0.0, na)
        else:
            Cast(xf, x, RoundMode.CAST_NONE, na)
        Muls(t, xf, -self.beta, na)
        Exp(d, t, na)
        Adds(t, d, 1.0, na)
        y = self.qy.AllocTensor(self.dtype)
        if self.size == 4:
            Div(y, xf, t, na)
        else:
            Div(d, xf, t, na)
            Cast(y, d, RoundMode.CAST_RINT, na)
        self.qy.EnQue(y)
        self.qx.FreeTensor(x)

    def CopyOut(self, off, n):
        y = self.qy.DeQue(self.dtype)
        DataCopyPad(self.gy[off], y, DataCopyExtParams(1, n * self.size, 0, 0, 0))
        self.qy.FreeTensor(y)


@kernel
def swish_kernel(x, y, total, per_block, beta, kind):
    op = KernelSwish()
    op.Init(x, y, total, per_block, beta, kind)
    op.Process()


def forward(x, beta):
    kind = DTYPES.index(x.dtype)
    total = x.numel()
    y = empty(x.shape, x.dtype)
    per_block = ((total + BLOCK_DIM - 1) // BLOCK_DIM + TILE - 1) // TILE * TILE
    block_dim = (total + per_block - 1) // per_block
    swish_kernel[block_dim](x, y, total, per_block, float(beta), kind)
    return y
'''

WRONG = KERNEL.replace("Muls(t, xf, -self.beta, na)", "Muls(t, xf, -1.0, na)")
FASTER = (KERNEL.replace("TILE = 2048 ", "TILE = 4096 ").replace("BUFFER_NUM = 1 ", "BUFFER_NUM = 2 ")
          .replace("BLOCK_DIM = 8 ", "BLOCK_DIM = 48"))
TOO_BIG = FASTER.replace("TILE = 4096 ", "TILE = 16384")

SEEDED = [
    dict(title="Double-buffer copy-bound elementwise kernels",
         advice="With BUFFER_NUM = 2 the next tile's copy-in overlaps this tile's vector work; spread the tiles over "
                "all vector cores.", tags=["elementwise", "activation"], hints={"buffer_num": 2, "block_dim": "all"}),
    dict(title="Sort rows with bitonic merges", advice="Sorting networks suit the vector unit for short rows.",
         tags=["sort"], hints={}),
]


def _answer(prose: str, source: str, adopted: list[str], plan: str) -> str:
    meta = json.dumps({"adopted": adopted, "plan": plan}, indent=2)
    return f"{prose}\n\n```python\n{source.rstrip()}\n```\n\n```json\n{meta}\n```\n"


def _shown(body: dict) -> list[str]:
    import re

    task = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return re.findall(r"^- (E\d+) ", task, flags=re.MULTILINE)


def answers() -> list[Callable[[dict], str]]:
    """The five turns, each a function of the request it answers (attempt 3 names the id it was shown)."""
    return [
        lambda body: _answer(
            "Swish is a pure elementwise op, so one kernel over the flattened tensor replaces the reference's four "
            "eager launches. I load each tile, widen half inputs to float32, compute x / (1 + exp(-x)) and round "
            "once on the way out.", WRONG, [], "Flattened elementwise kernel, fp32 compute, 2048-element tiles on 8 "
            "cores."),
        lambda body: _answer(
            "The failing case is the float16 one with beta = 1.702: I hard-coded the SiLU slope. The kernel now "
            "scales by -beta, passed in from forward.", KERNEL, [], "Same kernel, now computing "
            "x / (1 + exp(-beta * x))."),
        lambda body: _answer(
            "The kernel is correct but copy-bound on 8 cores with a single buffer, so the MTE2 copy and the vector "
            "work serialise. Following the shown experience I double-buffer the queues, use all 48 vector cores and "
            "double the tile to amortise the copy head.", FASTER, _shown(body)[:1],
            "Double-buffered queues, 4096-element tiles, 48 blocks."),
        lambda body: _answer(
            "Still copy-bound (MTE3). Larger copies run closer to peak bandwidth, so I try 16384-element tiles.",
            TOO_BIG, [], "16384-element tiles, double-buffered, 48 blocks."),
        lambda body: _answer(
            "The 16384-element tiles do not fit in the Unified Buffer with double buffering. The attempt-3 kernel "
            "is the best I have; I return it as my final answer.", FASTER, [], "Final answer: the attempt-3 "
            "kernel."),
    ]


REFLECTION_PROSE = """\
Looking back over the episode, three lessons stand out.

1. **Read every scalar argument of the reference.** I treated swish as SiLU and hard-coded a slope of 1; the
   float16 case with beta = 1.702 caught it. Pass every python scalar of forward into the kernel.
2. **Double-buffer and use every vector core for elementwise kernels.** Going from one buffer on 8 cores to two
   buffers on 48 cores took the kernel from about 1.2x to about 3x, because copies then overlap the vector work.
3. **Size tiles against the Unified Buffer.** With two queues of two buffers and three float32 temporaries,
   16384-element tiles need 256 KiB of UB, more than the 192 KiB available.
"""

REFLECTION_JSON = json.dumps({"experiences": [
    {"title": "Pass every scalar argument into the kernel",
     "advice": "Reading swish as SiLU hard-coded beta = 1; pass each python scalar of forward to the kernel and "
               "use it.", "tags": ["elementwise", "activation", "incorrect"], "hints": {}},
    {"title": "Double-buffer elementwise kernels on every vector core",
     "advice": "BUFFER_NUM = 2 over all 48 vector cores took swish from 1.2x to 3x: the copies overlap the vector "
               "work.", "tags": ["elementwise", "activation", "double-buffer"],
     "hints": {"buffer_num": 2, "block_dim": "all"}},
]})


def script_server(server) -> None:
    """Queues the session on a FakeOpenAIServer: five turns, the prose reflection, the JSON
    one. Usage is counted by the fake from each request (prompt_tokens=None)."""
    for answer in answers():
        server.reply_with(answer, prompt_tokens=None, completion_tokens=None)
    server.reply(REFLECTION_PROSE, prompt_tokens=None, completion_tokens=None)
    server.reply(REFLECTION_JSON, prompt_tokens=None, completion_tokens=None)
