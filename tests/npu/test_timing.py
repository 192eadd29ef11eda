"""Timing follows from the cost table: every expectation below is computed from the loaded
preset's numbers, or is a published figure of docs/hardware.md, never taken from the simulator's
implementation."""

import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import pytest

from sage.npu.execute import run_kernel_source
from sage.npu.hardware import load_preset

SPEC = load_preset("ascend910b2")
KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"
HEADER = "from sage.npu.ascendc import *\n"


def profile_of(source: str, args: list):
    run = run_kernel_source(source, args)
    assert run.error is None, run.error
    return run.profile


def device_cycles(profile) -> float:
    """Cycles of the kernels themselves, without the per-launch overhead."""
    return profile.cycles - profile.launches * SPEC.launch_overhead_cycles


def with_constant(source: str, name: str, value) -> str:
    """The same kernel file with one module constant changed (as a kernel author would)."""
    changed, n = re.subn(rf"^{name} = .*$", f"{name} = {value}", source, count=1, flags=re.M)
    assert n == 1, f"{name} is not a module constant of the kernel"
    return changed


def vector_cost(key: str, itemsize: int, count: int) -> tuple[float, float]:
    """(head, slope x repeats) from the preset's table."""
    cost = SPEC.vector.costs[key]
    head, slope = cost.b32 if itemsize == 4 else cost.b16
    return head, slope * math.ceil(count * itemsize / SPEC.vector.repeat_bytes)


def copy_cycles(path, nbytes: int) -> float:
    """cycles = latency + max((K + bytes) / peak, bytes / plateau), the preset's transfer curve."""
    plateau = SPEC.bytes_per_cycle(path.plateau_gbps or path.peak_gbps)
    return path.latency_cycles + max((path.k_bytes + nbytes) / SPEC.bytes_per_cycle(path.peak_gbps), nbytes / plateau)


# -- one vector instruction ------------------------------------------------------------------

ONE_INSTRUCTION = HEADER + """
@kernel
def one(out, n, dtype):
    pipe = TPipe()
    bufs = [TBuf(TPosition.VECCALC) for _ in range(3)]
    for b in bufs:
        pipe.InitBuffer(b, 16384)
    x, y, z = (b.Get(dtype) for b in bufs)
    Duplicate(x, 1.0, n)
    Duplicate(y, 2.0, n)
    PipeBarrier(PIPE_V)
    {body}

def forward(out, n):
    y = empty_like(out)
    one[1](out, n, out.dtype)
    return y
"""


@pytest.mark.parametrize(("body", "name", "key", "n_instr"), [
    ("Add(z, x, y, n)", "Add", "vadd", 1),
    ("Mul(z, x, y, n)", "Mul", "vmul", 1),
    ("Exp(z, x, n)", "Exp", "vexp", 1),
    ("Muls(z, x, 3.0, n)", "Muls", "vmuls", 1),
    ("Add(z, x, y, n); Add(x, y, y, n)", "Add", "vadd", 2),   # back to back: the second head is hidden
])
@pytest.mark.parametrize(("dtype", "count"), [(np.float16, 2048), (np.float32, 1000), (np.float32, 64)])
def test_a_vector_instruction_costs_head_plus_slope_times_repeats(body, name, key, n_instr, dtype, count):
    source = ONE_INSTRUCTION.replace("{body}", body)
    itemsize = np.dtype(dtype).itemsize
    run = run_kernel_source(source, [np.zeros(count, dtype), count], trace=True)
    assert run.error is None, run.error
    measured = [e["dur"] * SPEC.cycles_per_us for e in run.trace
                if e.get("ph") == "X" and e["name"] == name and e["tid"] == "V"]
    assert len(measured) == n_instr
    head, body_cycles = vector_cost(key, itemsize, count)
    # After a barrier the pipe is idle: the first instruction pays its head, the second is
    # queued behind the first and pays only slope x repeats.
    # (the trace gives microseconds to 4 decimals: 0.18 cycles at 1.8 GHz)
    assert sum(measured) == pytest.approx(head + n_instr * body_cycles, abs=0.2 * n_instr)


# -- double buffering ------------------------------------------------------------------------

TILE = 4096                 # fp32 elements: 16 KB per copy
TILES = 16
BALANCED = HEADER + """
BUFFER_NUM = 2
MULS = 1

class KernelScale:
    def Init(self, x, y, tile, tiles):
        self.tile, self.tiles = tile, tiles
        self.x_gm = GlobalTensor(); self.x_gm.SetGlobalBuffer(x, 0, tile * tiles)
        self.y_gm = GlobalTensor(); self.y_gm.SetGlobalBuffer(y, 0, tile * tiles)
        self.pipe = TPipe()
        self.in_x = TQue(TPosition.VECIN, BUFFER_NUM)
        self.out_y = TQue(TPosition.VECOUT, BUFFER_NUM)
        self.pipe.InitBuffer(self.in_x, BUFFER_NUM, tile * 4)
        self.pipe.InitBuffer(self.out_y, BUFFER_NUM, tile * 4)

    def Process(self):
        for i in range(self.tiles):
            self.CopyIn(i); self.Compute(); self.CopyOut(i)

    def CopyIn(self, i):
        x = self.in_x.AllocTensor(float32)
        DataCopy(x, self.x_gm[i * self.tile], self.tile)
        self.in_x.EnQue(x)

    def Compute(self):
        x = self.in_x.DeQue(float32)
        y = self.out_y.AllocTensor(float32)
        Muls(y, x, 0.5, self.tile)
        self.in_x.FreeTensor(x)
        for _ in range(MULS - 1):
            Muls(y, y, 1.0, self.tile)
        self.out_y.EnQue(y)

    def CopyOut(self, i):
        y = self.out_y.DeQue(float32)
        DataCopy(self.y_gm[i * self.tile], y, self.tile)
        self.out_y.FreeTensor(y)

@kernel
def scale(x, y, tile, tiles):
    op = KernelScale(); op.Init(x, y, tile, tiles); op.Process()

def forward(x):
    y = empty_like(x)
    scale[1](x, y, 4096, x.numel() // 4096)
    return y
"""


def test_double_buffering_a_balanced_kernel_gives_the_predicted_gain():
    t_in = copy_cycles(SPEC.transfer.gm_to_ub, TILE * 4)
    t_out = copy_cycles(SPEC.transfer.ub_to_gm, TILE * 4)
    head, one_muls = vector_cost("vmuls", 4, TILE)
    muls = round(t_in / one_muls)                    # compute as long as the copy-in
    t_v = head + muls * one_muls
    # Depth 1: the copy-in of tile i+1 waits for the first Muls of tile i to free x, the
    # compute of tile i+1 for the copy-out of tile i to free y. Depth 2: every stage overlaps.
    period_1 = max(head + one_muls + t_in, t_v + t_out)
    period_2 = max(t_in, t_v, t_out)
    predicted = period_1 / period_2
    x = np.random.default_rng(0).standard_normal(TILE * TILES, dtype=np.float32)
    source = with_constant(BALANCED, "MULS", muls)
    single = device_cycles(profile_of(with_constant(source, "BUFFER_NUM", 1), [x]))
    double = device_cycles(profile_of(source, [x]))
    assert single / double >= 1.5
    # pipeline fill and drain are outside the steady-state periods: a few percent
    assert single / double == pytest.approx(predicted, rel=0.12)


# -- many cores share HBM --------------------------------------------------------------------

def test_48_blocks_beat_1_block_by_the_factor_the_hbm_cap_allows():
    add = (KERNELS / "add.py").read_text()
    tile_bytes = 16384
    assert f"TILE_BYTES = {tile_bytes}" in add
    n = 48 * 4 * tile_bytes // 4                       # 4 tiles of fp32 per block on 48 blocks
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    one_core = device_cycles(profile_of(with_constant(add, "MAX_BLOCKS", 1), [x, y]))
    all_cores = device_cycles(profile_of(add, [x, y]))
    # One core is bound by MTE2: two copy-ins per tile at the GM->UB curve.
    per_tile = 2 * copy_cycles(SPEC.transfer.gm_to_ub, tile_bytes)
    hbm_bytes = 3 * n * 4                              # x and y read, z written
    core_demand = 3 * tile_bytes / per_tile            # bytes per cycle one core asks of HBM
    cores = SPEC.chip.aiv_cores
    expected = min(cores, SPEC.hbm_bytes_per_cycle / core_demand)
    assert expected < cores / 2                        # HBM, not the core count, is the limit
    assert one_core == pytest.approx(n * 4 / tile_bytes * per_tile, rel=0.05)
    assert one_core / all_cores == pytest.approx(expected, rel=0.15)
    assert all_cores >= hbm_bytes / SPEC.hbm_bytes_per_cycle * 0.99


# -- the cube against the vector unit --------------------------------------------------------

def test_the_cube_matmul_beats_the_vector_unit_matmul():
    # 1024^3 takes minutes to simulate on the vector path (2 M instructions); it is measured
    # in benchmarks/fidelity.py. At 256^3 both kernels are partly bound by data movement.
    m = k = n = 256
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    cube = profile_of((KERNELS / "matmul.py").read_text(), [a, b])
    vector = profile_of((KERNELS / "matmul_vector.py").read_text(), [a, b])
    # The cube does the MACs at the mad formula: 128 x 128 x 128 tiles, 4 tiles x 2 K-steps.
    f = SPEC.cube.fractal
    mad = (128 // f) * (128 // f) * (128 // (32 // 2)) + SPEC.cube.fixed_cycles
    assert cube.pipes["M"].busy_cycles == pytest.approx(4 * 2 * mad, abs=1)
    # The vector kernel issues one fp32 Axpy of n lanes per (row, k): M*K of them.
    head, axpy = vector_cost("vaxpy", 4, n)
    assert vector.pipes["V"].busy_cycles >= m * k * axpy
    assert device_cycles(vector) / device_cycles(cube) >= 5


# -- fidelity against the published figures --------------------------------------------------

def load_fidelity_benchmark():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "fidelity.py"
    spec = importlib.util.spec_from_file_location("fidelity_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FIDELITY = load_fidelity_benchmark()


@pytest.mark.parametrize("section", FIDELITY.SECTIONS, ids=lambda f: f.__name__)
def test_every_fidelity_figure_is_within_15_percent_or_explained(section):
    rows = section(SPEC)
    assert rows
    for row in rows:
        if abs(row.error_pct) > FIDELITY.WITHIN:
            assert row.gap, f"{row.benchmark}: {row.error_pct:+.1f} % off the published figure, unexplained"


@pytest.mark.slow
def test_the_cube_matmul_is_ten_times_the_vector_unit_matmul_at_1024_cubed():
    # The figure, at full size: ~2 M vector instructions, a few tens of seconds.
    m = k = n = 1024
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    cube = profile_of((KERNELS / "matmul.py").read_text(), [a, b])
    vector = profile_of((KERNELS / "matmul_vector.py").read_text(), [a, b])
    # Whole forward times, each paying its one launch overhead, as a user would compare them.
    assert vector.cycles / cube.cycles >= 10
