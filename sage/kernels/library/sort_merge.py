"""Row-wise sort of rows too long for one pass in UB: sorted runs, then MrgSort passes through
GM, as Ascend C sorts long rows (Sort on UB-sized chunks, then MrgSort merging up to four
sorted queues; sage/npu/ascendc/mrgsort.py cites the API).

Per row, on one core:
- runs: each chunk of CHUNK elements is loaded, sorted (`Sort`, stable, keys widened to float32
  for bfloat16), its indices made global (+ chunk start) and written to this core's GM
  workspace (keys and int32 indices, two rows' worth: the passes ping-pong between them);
- passes: runs of length L merge four at a time into runs of 4L. Four queues cannot all sit
  in UB, so each merge streams windows of W elements per queue: `MrgSort` with
  isExhaustedSuspension stops as soon as one window is used up; everything merged so far
  precedes whatever is still unread (an exhausted window's next elements rank after its last
  one), so it is written out, each queue's cursor moves by what it gave (`sortedNum`, read on
  the scalar unit) and the windows reload. A single queue left is copied through. The last
  pass writes the outputs: values in the input dtype, indices widened to int64.
Equal keys leave in queue order and queues are runs in index order, so the sort is stable.
Every step is fenced with PipeBarrier(PIPE_ALL): the workspace is written by MTE3 and read
back by MTE2 of the same core, and sortedNum is read by the scalar unit after V wrote it.
"""

from __future__ import annotations

from sage.kernels.library.source import DTYPE_SIZE, HEADER, bind_globals, dsl_dtype

CHUNK = 4096              # elements of a run sorted in UB (one Sort)
QUEUES = 4                # MrgSort merges up to four queues
MAX_WINDOW = 4095         # MrgSort's elementLengths field
# UB bytes the merge kernel's buffers may take, of the 192 KB: it has TBufs only, no queue
# (sort_rows keeps 160 KB for kernels whose queues double-buffer); wider windows mean fewer
# MrgSort rounds, each of which reloads every window
MERGE_BUDGET = 184 * 1024


def merge_bytes(es: int, ks: int, ix: int, widen: bool, window: int) -> int:
    """UB bytes of the merge kernel: a run's input, keys and sorted keys and indices; four
    windows of keys and indices; the merged output (keys, indices) and its output casts."""
    run = CHUNK * (es + (ks if widen else 0) + ks + 4)
    merged = QUEUES * window
    return run + 2 * merged * (ks + 4) + merged * ((es if widen else 0) + ix) + 32


def merge_window(es: int, ks: int, ix: int, widen: bool, budget: int) -> int | None:
    """The widest window (a multiple of 16 elements, at most MAX_WINDOW) that fits `budget`."""
    for window in range(MAX_WINDOW // 16 * 16, 15, -16):
        if merge_bytes(es, ks, ix, widen, window) <= budget:
            return window
    return None


def merge_source(spec, key: str, window: int, blocks: int, per: int) -> str:
    """The kernel text; `spec` is a sort_rows.SortSpec (descending, x/values/indices and the
    workspace buffer names), `key` the key dtype."""
    es, ks, ix = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[key], DTYPE_SIZE[spec.index_dtype]
    dt, kt, it = dsl_dtype(spec.dtype), dsl_dtype(key), spec.index_dtype
    widen = key != spec.dtype

    def idx_line(line: str) -> str:
        """A line that moves indices: kept unless nothing reads them (`values_only`: the merge
        then carries whatever its index windows hold, its values alone are the result)."""
        return "" if spec.values_only else line + "\n"

    n, w, merged = spec.length, window, QUEUES * window
    sort_key = "kf" if widen else "xin"
    cast_in = "            Cast(self.kf, self.xin, RoundMode.CAST_NONE, c)\n" if widen else ""
    out_values = "self.fv" if widen else "ov"
    cast_out = "            Cast(self.fv, ov, RoundMode.CAST_RINT, t)\n" if widen else ""
    index_out = ("Cast(self.fi, oi, RoundMode.CAST_NONE, t)" if it == "int64" else "Adds(self.fi, oi, 0, t)")
    bufs = [("bx", CHUNK * es), ("bs", CHUNK * ks), ("bi", CHUNK * 4), ("bwv", merged * ks), ("bwi", merged * 4),
            ("bov", merged * ks), ("boi", merged * 4), ("bfi", merged * ix), ("bn", 32)]
    if widen:
        bufs += [("bk", CHUNK * ks), ("bfv", merged * es)]
    inits = "\n".join(f"        self.{b} = TBuf(TPosition.VECCALC)\n        self.pipe.InitBuffer(self.{b}, {size})"
                      for b, size in bufs)
    return f'''{HEADER}
class Kernel_{spec.name}:
    def Init(self, x, values, indices, wk, wi):
        self.t0 = GetBlockIdx() * {per}
        self.t1 = min({spec.rows}, self.t0 + {per})
        self.ws = GetBlockIdx() * 2 * {n}
{bind_globals(x="x", v="values", i="indices", wk="wk", wi="wi")}
        self.pipe = TPipe()
{inits}

    def Process(self):
        N = {n}
        if self.t0 >= self.t1:
            return
        self.xin = self.bx.Get({dt})
        self.sv = self.bs.Get({kt})
        self.si = self.bi.Get(int32)
        self.wv = self.bwv.Get({kt})
        self.wi = self.bwi.Get(int32)
        self.ov = self.bov.Get({kt})
        self.oi = self.boi.Get(int32)
        self.fi = self.bfi.Get({it})
        self.sn = self.bn.Get(int32)
        {"self.kf = self.bk.Get(" + kt + ")" if widen else ""}
        {"self.fv = self.bfv.Get(" + dt + ")" if widen else ""}
{"        Duplicate(self.wi, 0, " + str(merged) + ")  # the index windows MrgSort carries, never loaded" + chr(10) if spec.values_only else ""}        for r in range(self.t0, self.t1):
            self.Runs(r)
            src = self.ws
            dst = self.ws + N
            run = {CHUNK}
            while run < N:
                # a pass reads what the last one wrote to GM (MTE3 then MTE2 of this core)
                PipeBarrier(PipeType.PIPE_ALL)
                g0 = 0
                while g0 < N:
                    self.Merge(r, src, dst, g0, run, run * {QUEUES} >= N)
                    g0 += run * {QUEUES}
                src, dst = dst, src
                run *= {QUEUES}
            PipeBarrier(PipeType.PIPE_ALL)

    def Runs(self, r):
        # one barrier per run: it orders this run's load after the last Sort read the input,
        # its Sort after the load, and the next load after this Sort (PIPE_ALL waits for all)
        N = {n}
        c0 = 0
        while c0 < N:
            c = min({CHUNK}, N - c0)
            DataCopyPad(self.xin, self.g_x[{spec.x_offset} + r * N + c0], DataCopyExtParams(1, c * {es}, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))
            PipeBarrier(PipeType.PIPE_ALL)
{cast_in}            Sort(self.sv, self.si, self.{sort_key}, c, {spec.descending})
{idx_line("            Adds(self.si, self.si, c0, c)")}            PipeBarrier(PipeType.PIPE_ALL)
            DataCopyPad(self.g_wk[self.ws + c0], self.sv, DataCopyExtParams(1, c * {ks}, 0, 0, 0))
{idx_line("            DataCopyPad(self.g_wi[self.ws + c0], self.si, DataCopyExtParams(1, c * 4, 0, 0, 0))")}            c0 += c

    def Emit(self, r, ov, oi, t, dst, at, last):
        # the caller's next barrier orders these reads of ov/oi before the next write to them
        N = {n}
        if last:
{cast_out}{idx_line("            " + index_out)}            PipeBarrier(PipeType.PIPE_ALL)
            DataCopyPad(self.g_v[r * N + at], {out_values}, DataCopyExtParams(1, t * {es}, 0, 0, 0))
{idx_line(f"            DataCopyPad(self.g_i[r * N + at], self.fi, DataCopyExtParams(1, t * {ix}, 0, 0, 0))")}        else:
            DataCopyPad(self.g_wk[dst + at], ov, DataCopyExtParams(1, t * {ks}, 0, 0, 0))
{idx_line("            DataCopyPad(self.g_wi[dst + at], oi, DataCopyExtParams(1, t * 4, 0, 0, 0))")}            pass

    def Load(self, src, at, t, kd, idst):
        DataCopyPad(kd, self.g_wk[src + at], DataCopyExtParams(1, t * {ks}, 0, 0, 0),
                    DataCopyPadExtParams(False, 0, 0, 0))
{idx_line("        DataCopyPad(idst, self.g_wi[src + at], DataCopyExtParams(1, t * 4, 0, 0, 0), DataCopyPadExtParams(False, 0, 0, 0))")}
    def Merge(self, r, src, dst, g0, run, last):
        N = {n}
        W = {w}
        pos = []
        end = []
        q0 = g0
        while q0 < N and len(pos) < {QUEUES}:
            pos.append(q0)
            end.append(min(q0 + run, N))
            q0 += run
        at = g0
        while len(pos) > 1:
            k = len(pos)
            counts = []
            vals = []
            idxs = []
            # the windows' last reader (MrgSort) is behind the barrier before its counts were read
            for j in range(k):
                counts.append(min(W, end[j] - pos[j]))
                vals.append(self.wv[j * W])
                idxs.append(self.wi[j * W])
                self.Load(src, pos[j], counts[j], vals[j], idxs[j])
            PipeBarrier(PipeType.PIPE_ALL)
            MrgSort(self.ov, self.oi, vals, idxs, counts, (1 << k) - 1, self.sn, True, {spec.descending})
            PipeBarrier(PipeType.PIPE_ALL)
            t = 0
            keep_pos = []
            keep_end = []
            for j in range(k):
                took = self.sn.GetValue(j)
                t += took
                if pos[j] + took < end[j]:
                    keep_pos.append(pos[j] + took)
                    keep_end.append(end[j])
            self.Emit(r, self.ov, self.oi, t, dst, at, last)
            at += t
            pos = keep_pos
            end = keep_end
        if len(pos) == 1:
            p = pos[0]
            while p < end[0]:
                t = min({merged}, end[0] - p)
                PipeBarrier(PipeType.PIPE_ALL)
                self.Load(src, p, t, self.ov, self.oi)
                PipeBarrier(PipeType.PIPE_ALL)
                self.Emit(r, self.ov, self.oi, t, dst, at, last)
                at += t
                p += t
        PipeBarrier(PipeType.PIPE_ALL)


@kernel
def {spec.name}_kernel(x, values, indices, wk, wi):
    op = Kernel_{spec.name}()
    op.Init(x, values, indices, wk, wi)
    op.Process()


def {spec.name}_launch(x, values, indices, wk, wi):
    {spec.name}_kernel[{blocks}](x, values, indices, wk, wi)
'''
