"""How each public torch_npu figure is posed to the vendor model, and which time of the model it is compared with.

A figure is one published time (`benchmarks/data/torch_npu_figures.csv`); a source is the
public page it comes from (`torch_npu_sources.csv`: one PR, issue or file), and the source
says how its figures were timed, since one page times all its figures the same way. Each
kind is compared with the model's time of that kind, one of the three times a case has
(`sage.npu.timeline.Times`, docs/evaluation.md; `TIME_OF_KIND`):

- `event` -> `device_us`: device events around one call (triton.testing.do_bench, FlagGems'
  kernel mode), L2 cleared before each call: the span from the call's first kernel's start
  to its last one's end, each launch's fixed cost (`device_fixed_us`, the launch as events
  see it) and any gap included. do_bench zeroes a 256 MB buffer before each call
  (https://github.com/triton-lang/triton/blob/main/python/triton/testing.py), which keeps
  the device busy while the host enqueues the call: the call is posed after that flush
  kernel, so its kernels run back to back unless the host falls behind;
- `profiler` -> `kernel_us`: the kernel durations of msprof / the torch_npu profiler
  (op_summary): the kernels' work alone, without the launch's fixed cost or gaps;
- `host_loop` -> `end_to_end_us`: host wall time of `calls` back-to-back calls and one
  synchronize, divided by `calls`: the eager timeline of those calls, so host dispatch and
  the device's fixed cost count where they bound the loop.

The L2 state is the source's as well: `flushed` starts every call cold; `warm` (a loop over
the same operands with no flush) is posed as the call run twice in one trace, timing the
second: the chain's L2 model (the simulator's LRU) keeps what fits from the first.
Each operand is its own tensor, as in every source (a shared operand would hit L2 on its
second read and flatter the model).
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import BaseModel

from sage.bench.reference.chain import eager_chain
from sage.bench.reference.model import fused_work
from sage.bench.reference.vendor import VendorParams, group_of, vendor_time
from sage.bench.reference.work import Work
from sage.kernels import trace_graph
from sage.npu.hardware import HardwareSpec
from sage.npu.timeline import LaunchCosts, Step, Times, run_timeline

DATA = Path(__file__).resolve().parent / "data"
FIGURES = DATA / "torch_npu_figures.csv"
SOURCES = DATA / "torch_npu_sources.csv"
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}

Timing = Literal["event", "profiler", "host_loop"]
# Which of the three times (sage.npu.timeline.Times) a figure of each timing kind is (module docstring).
TIME_OF_KIND: dict[str, str] = {"event": "device_us", "profiler": "kernel_us", "host_loop": "end_to_end_us"}
# triton.testing.do_bench clears L2 before each call by zeroing a 256 MB buffer (URL in the module docstring).
DO_BENCH_FLUSH_BYTES = 256e6


class Source(BaseModel):
    url: str
    split: Literal["fit", "held"]   # every figure of a source is on the same side
    timing: Timing
    l2: Literal["flushed", "warm"]
    calls: int                      # back-to-back calls per timed loop (host_loop)
    how: str                        # how the page times its figures, in its own terms


class Figure(BaseModel):
    id: str
    op: str
    shape: tuple[int, ...]
    dtype: str
    arg: str
    measured_us: float
    source: Source
    note: str

    @property
    def split(self) -> str:
        return self.source.split


class Kernel(BaseModel):
    """One vendor kernel of a figure's op: its work, the group that times it, its L2 hits."""

    work: Work
    group: str
    l2_hit_bytes: float = 0.0


class Posed(BaseModel):
    figure: Figure
    kernels: list[Kernel]

    @property
    def groups(self) -> set[str]:
        return {k.group for k in self.kernels}


def read_sources(path: Path = SOURCES) -> dict[str, Source]:
    with open(path, newline="", encoding="utf-8") as fh:
        return {r["source"]: Source(url=r["source"], split=r["split"], timing=r["timing"], l2=r["l2"],
                                    calls=int(r["calls"]), how=r["how"]) for r in csv.DictReader(fh)}


def read_figures(path: Path = FIGURES, sources: dict[str, Source] | None = None) -> list[Figure]:
    sources = sources if sources is not None else read_sources()
    rows = []
    with open(path, newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            shape = tuple(int(d) for d in r["shape"].split("x"))
            rows.append(Figure(id=r["id"], op=r["op"], shape=shape, dtype=r["dtype"], arg=r["arg"],
                               measured_us=_to_us(float(r["measured"]), r["unit"], r["op"], shape),
                               source=sources[r["source"]], note=r["note"]))
    return rows


def _to_us(value: float, unit: str, op: str, shape: tuple[int, ...]) -> float:
    if unit == "us":
        return value
    if unit == "ms":
        return value * 1e3
    if unit == "tflops" and op == "matmul":
        n = shape[0]
        return 2.0 * n ** 3 / (value * 1e12) * 1e6
    raise ValueError(f"unit {unit!r} for {op}")


def _meta(shape: tuple[int, ...], dtype: str) -> torch.Tensor:
    return torch.empty(shape, dtype=DTYPES[dtype], device="meta")


class _Fn(torch.nn.Module):
    def __init__(self, fn: Callable, repeat: int = 1) -> None:
        super().__init__()
        self.fn, self.repeat = fn, repeat

    def forward(self, *args):
        return tuple(self.fn(*args) for _ in range(self.repeat))


def _swiglu(x):
    a, b = x.chunk(2, dim=-1)
    return F.silu(a) * b


def _shape_arg(arg: str) -> tuple[int, ...]:
    return tuple(int(d) for d in arg.split("x"))


def _square(f: Figure) -> tuple[int, int]:
    return (f.shape[0], f.shape[0])


# op -> (forward, inputs of a figure, fused torch_npu op or None): how a figure is posed to the model.
OPS: dict[str, tuple[Callable, Callable[[Figure], list], str | None]] = {
    "swiglu": (_swiglu, lambda f: [_meta(f.shape, f.dtype)], "torch_npu.npu_swiglu"),
    "matmul": (torch.matmul, lambda f: [_meta(_square(f), f.dtype), _meta(_square(f), f.dtype)], None),
    "topk": (lambda x, k: torch.topk(x, k, dim=-1), lambda f: [_meta(f.shape, f.dtype), int(f.arg)], None),
    "gather": (lambda x, i: torch.gather(x, -1, i),
               lambda f: [_meta(f.shape, f.dtype), torch.empty(_shape_arg(f.arg), dtype=torch.int64, device="meta")],
               None),
    "dist": (lambda a, b, p: torch.dist(a, b, p),
             lambda f: [_meta(f.shape, f.dtype), _meta(f.shape, f.dtype), float(f.arg)], None),
    "mean": (lambda x: x.mean(), lambda f: [_meta(f.shape, f.dtype)], None),
    "grouped_matmul": (lambda x, w: torch.einsum("tk,ekn->tn", x, w),
                       lambda f: [_meta(f.shape, f.dtype), _meta(_shape_arg(f.arg), f.dtype)],
                       "torch_npu.npu_grouped_matmul"),
}


def pose(fig: Figure, hw: HardwareSpec) -> Posed:
    fn, inputs, fused = OPS[fig.op]
    warm = fig.source.l2 == "warm"
    if fused:
        if warm:
            raise ValueError(f"{fig.id}: a warm-L2 source for a fused operator is not posed (no such source yet)")
        with torch.no_grad():
            work = fused_work(trace_graph(_Fn(fn), inputs(fig)), hw)
        return Posed(figure=fig, kernels=[Kernel(work=work, group=group_of(None, work, hw))])
    with torch.no_grad():
        chain = [c for c in eager_chain(trace_graph(_Fn(fn, 2 if warm else 1), inputs(fig)), hw) if c.time]
    if warm:                          # the second call of two: what the first left in L2 hits
        chain = chain[len(chain) // 2:]
    return Posed(figure=fig, kernels=[Kernel(work=c.work, group=c.time.group, l2_hit_bytes=c.time.l2_hit_bytes)
                                      for c in chain])


def model_us(p: Posed, hw: HardwareSpec, params: VendorParams) -> float:
    """The model's time of the figure's kind (see the module docstring)."""
    return getattr(model_times(p, hw, params), TIME_OF_KIND[p.figure.source.timing])


def model_times(p: Posed, hw: HardwareSpec, params: VendorParams) -> Times:
    """The three times of one call of the figure's op, as the figure's source runs it: the
    call's kernel durations summed; the span of its kernels on the device (after the L2 flush
    of a flushed source, which the device runs while the host enqueues the call); and its
    end-to-end share of the source's loop (`calls` calls, one synchronize)."""
    call = [Step(kind="kernel", work_us=vendor_time(k.work, k.group, hw, l2_hit_bytes=k.l2_hit_bytes,
                                                    params=params).work_us) for k in p.kernels]
    src, costs = p.figure.source, LaunchCosts.of(hw)
    flush = ([Step(kind="kernel", work_us=DO_BENCH_FLUSH_BYTES / (hw.chip.hbm_gbps * 1e3), label="L2 flush")]
             if src.l2 == "flushed" else [])
    ran = run_timeline(flush + call, costs).steps[len(flush):]
    span = ran[-1].end_us - ran[0].start_us if ran else 0.0
    loop = run_timeline(call * src.calls + [Step(kind="sync")], costs, keep_steps=False)
    return Times(kernel_us=sum(s.work_us for s in call), device_us=span,
                 end_to_end_us=loop.end_to_end_us / src.calls)
