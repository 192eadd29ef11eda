"""Vendor efficiencies for the roofline formula, measured on the simulated library kernels.

For operators without a library kernel, the reference time is
`max(floor, roofline / efficiency) + launch overhead`, with the efficiency group of the
call's cost class (`CLASS_EFFICIENCY`). Neither number is a guess. The efficiency of a
group is the fraction of the roofline that the library's own kernels reach
in the simulator on the same preset, `roofline_us(work) / (simulated_us - launch_us)`,
geometric mean over a few big calibration shapes ("rate" samples); the floor is the time a
one-tile kernel of the class takes beyond the launch (first copy latency, pipeline fill:
the "floor" sample), so that a tiny operator is not modelled as nearly free:

- `memory` (classes copy and index: copies, cat, pad, gather, scatter): the identity-copy kernel;
- `elementwise` (elementwise and broadcast ops without a library form): add and mul kernels;
- `vector` (sort, scan and other: pooling, interpolation): vector-bound chains (gelu, sigmoid);
- `reduction` (reduction, softmax_norm): last-axis sum, softmax and layer norm kernels;
- `cube` (matmul, convolution as im2col + matmul): the library matmul.

The result is cached with the model fingerprint, so it is recomputed only when the
simulator, the library or the preset changes.
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from sage.bench.reference.cache import ReferenceCache
from sage.bench.reference.library_run import LibraryKernel, model_fingerprint, simulate
from sage.bench.reference.plan import chain_passes
from sage.bench.reference.work import Work, pass_cycles, roofline_us
from sage.kernels import (
    VENDOR_CUBE_KNOBS, VENDOR_KNOBS, CostClass, ElementwiseSpec, MatmulSpec, RowSpec, elementwise_source, inp,
    matmul_source, op, render, row_source, target_of,
)
from sage.npu.hardware import HardwareSpec

# Which calibrated efficiency times each cost class (every class has one).
CLASS_EFFICIENCY: dict[CostClass, str] = {
    CostClass.COPY: "memory", CostClass.INDEX: "memory",
    CostClass.ELEMENTWISE: "elementwise", CostClass.BROADCAST: "elementwise",
    CostClass.SORT: "vector", CostClass.SCAN: "vector", CostClass.OTHER: "vector",
    CostClass.REDUCTION: "reduction", CostClass.SOFTMAX_NORM: "reduction",
    CostClass.MATMUL: "cube", CostClass.CONV: "cube",
}


class CalibrationSample(BaseModel):
    efficiency_class: str
    role: str                    # "rate" (steady-state efficiency) or "floor" (one small tile)
    kernel: str
    inputs: list[tuple[tuple[int, ...], str]]
    roofline_us: float
    simulated_us: float          # kernel time without the launch overhead
    efficiency: float


class Calibration(BaseModel):
    preset: str
    fingerprint: str
    efficiencies: dict[str, float]
    floor_us: dict[str, float]
    samples: list[CalibrationSample]

    def for_class(self, op_class: CostClass) -> float:
        return self.efficiencies[CLASS_EFFICIENCY[op_class]]

    def floor_for(self, op_class: CostClass) -> float:
        return self.floor_us[CLASS_EFFICIENCY[op_class]]

    def time_us(self, op_class: CostClass, roofline: float, launch_us: float) -> float:
        """The formula: max(one-tile floor, roofline / efficiency) + launch overhead."""
        return max(self.floor_for(op_class), roofline / self.for_class(op_class)) + launch_us


def _ew(expr, dtypes, kinds, out, shapes, hw) -> tuple[LibraryKernel, ElementwiseSpec]:
    spec = ElementwiseSpec(expr=expr, in_dtypes=tuple(dtypes), kinds=tuple(kinds), out_dtype=out, name="ew")
    source = elementwise_source(spec, VENDOR_KNOBS, target=target_of(hw))
    k = LibraryKernel(family="elementwise", label=f"calibration {render(expr)}", source=source,
                      inputs=[(s, d) for s, d in zip(shapes, dtypes)])
    return k, spec


def _samples(hw: HardwareSpec) -> list[tuple[str, str, LibraryKernel, Work]]:
    """(efficiency class, role, kernel, its roofline work). Role "rate" samples are big
    enough to show the steady-state efficiency; "floor" samples are one small tile, whose
    time is the class's floor (pipeline fill, first copy latency)."""
    out: list[tuple[str, str, LibraryKernel, Work]] = []

    def ew(klass: str, role: str, expr, dt: str, n: int, n_in: int) -> None:
        k, spec = _ew(expr, [dt] * n_in, ["full"] * n_in, dt, [(n,)] * n_in, hw)
        size = 4 if dt == "float32" else 2
        vec = pass_cycles(n * chain_passes(spec), hw) if klass != "memory" else 0.0
        out.append((klass, role, k, Work(bytes=(n_in + 1) * n * size, vector_cycles=vec)))

    big, small = 1 << 21, 4096
    for dt in ("float32", "float16"):
        ew("memory", "rate", op("identity", inp(0)), dt, big, 1)
    ew("memory", "floor", op("identity", inp(0)), "float32", small, 1)
    ew("elementwise", "rate", op("add", inp(0), inp(1)), "float16", big, 2)
    ew("elementwise", "rate", op("mul", inp(0), inp(1)), "float32", big, 2)
    ew("elementwise", "floor", op("add", inp(0), inp(1)), "float16", small, 2)
    for expr in (op("gelu", inp(0)), op("sigmoid", inp(0))):
        ew("vector", "rate", expr, "float32", 1 << 19, 1)
    ew("vector", "floor", op("sigmoid", inp(0)), "float32", small, 1)
    target = target_of(hw)
    rows = [("rate", 2048, 1024, "sum"), ("rate", 2048, 1024, "softmax"), ("rate", 2048, 1024, "layer_norm"),
            ("floor", 16, 256, "sum")]
    for role, R, C, rop in rows:
        extra = [((C,), "float16"), ((C,), "float16")] if rop == "layer_norm" else []
        spec = RowSpec(op=rop, dtype="float16", affine=bool(extra), name="row")
        k = LibraryKernel(family="row", label=f"calibration {rop} {R}x{C}",
                          source=row_source(spec, VENDOR_KNOBS, target=target),
                          inputs=[((R, C), "float16"), *extra])
        out_bytes = R * 2 if rop == "sum" else R * C * 2
        out.append(("reduction", role, k, Work(bytes=R * C * 2 + out_bytes)))
    for role, (M, K, N) in (("rate", (1024, 1024, 1024)), ("rate", (2048, 512, 2048)), ("floor", (128, 128, 128))):
        spec = MatmulSpec(dtype="float16", name="mm")
        k = LibraryKernel(family="matmul", label=f"calibration matmul {M}x{K}x{N}",
                          source=matmul_source(spec, VENDOR_CUBE_KNOBS, target=target),
                          inputs=[((M, K), "float16"), ((K, N), "float16")])
        out.append(("cube", role, k, Work(bytes=2 * (M * K + K * N + M * N),
                                          cube_flops=2.0 * M * N * K)))
    return out


def calibrate(hw: HardwareSpec, cache: ReferenceCache) -> Calibration:
    fp = model_fingerprint(hw.source)
    key = f"calibration|{hw.name}|{fp}"
    hit = cache.get(key)
    if hit is not None:
        return Calibration.model_validate(hit)
    samples: list[CalibrationSample] = []
    for klass, role, kernel, work in _samples(hw):
        sim = simulate(kernel, hw)
        busy = max(sim.time_us - hw.launch.overhead_us, 1e-9)
        roof = roofline_us(work, hw)
        samples.append(CalibrationSample(efficiency_class=klass, role=role, kernel=kernel.label, inputs=kernel.inputs,
                                         roofline_us=roof, simulated_us=busy, efficiency=min(1.0, roof / busy)))
    eff: dict[str, float] = {}
    floor: dict[str, float] = {}
    for klass in sorted({s.efficiency_class for s in samples}):
        rate = [s.efficiency for s in samples if s.efficiency_class == klass and s.role == "rate"]
        eff[klass] = math.exp(sum(math.log(v) for v in rate) / len(rate))
        small = [s for s in samples if s.efficiency_class == klass and s.role == "floor"]
        floor[klass] = min(s.simulated_us for s in small)
    cal = Calibration(preset=hw.name, fingerprint=fp, efficiencies=eff, floor_us=floor, samples=samples)
    cache.put(key, cal.model_dump())
    return cal
