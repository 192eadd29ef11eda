"""Costs at docs/hardware.md's measured points: the GM->UB curve and its plateau, 512 B alignment,
bursts, and the cube's efficiency on small Mmads."""

from pathlib import Path

import numpy as np
import pytest

from sage.npu.execute import run_kernel_source
from sage.npu.hardware import load_preset

REPO = Path(__file__).resolve().parents[2]

SPEC = load_preset()

ONE_COPY = """
@kernel
def k(x, z, off, n, blocks, gap):
    pipe = TPipe(); q = TQueBind(TPosition.VECIN, TPosition.VECOUT, 1); pipe.InitBuffer(q, 1, n * 4)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x); zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    t = q.AllocTensor(float32)
    if blocks == 1:
        DataCopy(t, xg[off], n)
    else:
        DataCopy(t, xg[off], DataCopyParams(blocks, n // blocks // 8, gap, 0))
    q.EnQue(t); t = q.DeQue(float32)
    DataCopy(zg, t, 8)
    q.FreeTensor(t)

def forward(x, off=0, n=256, blocks=1, gap=0):
    z = empty((8,), float32)
    k[1](x, z, off, n, blocks, gap)
    return z
"""


def mte2_cycles(run, **kw):
    _, result = run(ONE_COPY, [np.zeros(1 << 17, np.float32)], kwargs=kw)
    assert result.error is None, result.error
    return result.profile.pipes["MTE2"].busy_cycles


# docs/hardware.md "Data movement": 7.3 GB/s at 1 KB transfers; ~78 GB/s at >= 32 KB (a plateau)
@pytest.mark.parametrize("nbytes, measured_gbps", [(1024, 7.3), (32768, 78.0), (65536, 78.0), (131072, 78.0)])
def test_gm_to_ub_bandwidth_matches_the_measured_points(run, nbytes, measured_gbps):
    cycles = mte2_cycles(run, n=nbytes // 4)
    gbps = nbytes / (cycles / (SPEC.chip.clock_mhz * 1e6)) / 1e9
    assert abs(gbps - measured_gbps) / measured_gbps < 0.05


def test_gm_reads_off_a_512_byte_line_pay_the_penalty(run):
    n = 4096
    aligned = mte2_cycles(run, n=n)
    unaligned = mte2_cycles(run, n=n, off=8)  # 32 B past the line
    bw = n * 4 / SPEC.bytes_per_cycle(SPEC.transfer.gm_to_ub.peak_gbps)
    assert abs((unaligned - aligned) - bw * (SPEC.transfer.effects.unaligned_gm_penalty - 1)) <= 1


def test_each_extra_burst_costs_the_burst_overhead(run):
    one = mte2_cycles(run, n=1024, gap=0)
    four = mte2_cycles(run, n=1024, blocks=4, gap=0)  # contiguous, but issued as 4 bursts
    assert four - one == pytest.approx(3 * SPEC.transfer.effects.burst_overhead_cycles, abs=1)


def test_a_small_mmad_reaches_the_measured_ops_per_cycle():
    """docs/hardware.md "Cube unit": msKPP measures 3370 ops/cycle at 32x16x16 (fp16 -> fp32) and about
    8073 at n >= 960 (peak 8192)."""
    source = (REPO / "examples" / "microbench" / "cube_instruction.py").read_text()
    for (m, k, n), measured in (((32, 16, 16), 3370), ((16, 16, 960), 8073)):
        result = run_kernel_source(source, [np.zeros(256, np.float32), m, k, n, 16, 16, "mmad"], trace=True)
        assert result.error is None, result.error
        (dur,) = [e["dur"] for e in result.trace if e.get("ph") == "X" and e["name"] == "Mmad"]
        ops_per_cycle = 2 * m * k * n / (dur * SPEC.cycles_per_us)
        assert ops_per_cycle == pytest.approx(measured, rel=0.05)
