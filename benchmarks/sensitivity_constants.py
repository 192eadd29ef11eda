"""The simulator constants without a public figure of their own, and how to vary one.

Each row names preset fields (dotted paths into `HardwareSpec`) that one study scales together,
what public material says about them, and how a factor applies:

- ``scale``: the value times the factor;
- ``excess``: a slowdown factor (1 = no penalty) has its excess over 1 scaled, so x0.5 of 1.25
  is 1.125, never a speed-up below 1;
- ``refit``: a fitted K (the size at which a GM copy reaches half its peak) is scaled and the
  peak refitted so that the path still passes through its one measured point (`anchor_gbps`
  at the size the preset's own K and peak imply): only the shape of the curve moves.

What a source says is quoted as it is; a row marked "estimate" has no public figure of its value.
benchmarks/sensitivity.py measures what each row does to the suite and the MIX examples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sage.npu.hardware import HardwareSpec

# Public pages the rows cite (read through the search tool on 2026-12-06).
ALIGN_512 = ("https://www.hiascend.com/document/detail/en/canncommercial/850/opdevg/Ascendcopdevg/"
             "atlas_ascendc_best_practices_10_0014.html")
LARGE_BLOCKS = ("https://www.hiascend.com/document/detail/en/canncommercial/850/opdevg/Ascendcopdevg/"
                "atlas_ascendc_best_practices_10_0016.html")
ND2NZ_AIV = ("https://www.hiascend.com/document/detail/en/canncommercial/850/opdevg/Ascendcopdevg/"
             "atlas_ascendc_best_practices_10_10014.html")
CATLASS_MATMUL = ("https://github.com/hicann/catlass/blob/main/docs/zh/2_Design/01_kernel_design/"
                  "04_matmul_summary.md")
CROSS_CORE = ("https://www.hiascend.com/document/detail/zh/canncommercial/800/apiref/ascendcopapi/"
              "atlasascendc_api_07_0273.html")
SYNC_ALL = ("https://www.hiascend.com/document/detail/zh/canncommercial/82RC1/API/ascendcopapi/"
            "atlasascendc_api_07_0204.html")

# Vector instructions the preset costs by analogy with a measured one (its "analogy:" comments).
VECTOR_ANALOGIES = ("vmaxs", "vmins", "vrsqrt", "vrec", "vabs", "vrelu", "vnot", "vand", "vor", "vcmp", "vcmps",
                    "vsel", "vaxpy", "vcmin", "vcgadd", "vgather", "vsort")


@dataclass(frozen=True)
class Constant:
    name: str                        # what the table calls it
    paths: tuple[str, ...]           # preset fields scaled together
    source: str                      # "estimate: ..." or what public material bounds it, with the URL
    mode: Literal["scale", "excess", "refit"] = "scale"
    anchor_gbps: float = 0.0         # refit: the measured rate the path keeps


CONSTANTS: tuple[Constant, ...] = (
    Constant("burst_overhead_cycles (each extra row of a multi-row GM copy: Nd2Nz, strided DataCopy/Pad)",
             ("transfer.effects.burst_overhead_cycles",),
             "estimate; no per-row figure found. Public pages say only that on-the-fly ND2NZ loses bandwidth "
             f"against a plain ND copy ({CATLASS_MATMUL}) and has low bandwidth utilisation on rows not 256 B "
             f"aligned ({ND2NZ_AIV})"),
    Constant("unaligned_gm_penalty (MTE2 read not 512 B aligned)", ("transfer.effects.unaligned_gm_penalty",),
             "bounded, value an estimate: a 32 B-aligned GM address reaches as little as 70 % of the 512 B-aligned "
             f"bandwidth in the worst case, i.e. a factor <= 1.43, for GM->UB and UB->GM ({ALIGN_512}); "
             "sage charges reads only", mode="excess"),
    Constant("K of UB->GM (fixed cost of a GM write, MTE3)", ("transfer.ub_to_gm",),
             f"estimate (GM->UB's K); public: near-peak bandwidth from 16 KB per copy on ({LARGE_BLOCKS})",
             mode="refit", anchor_gbps=110.0),
    Constant("K of GM->L1 (fixed cost of a cube load, MTE2)", ("transfer.gm_to_l1",),
             "estimate (GM->UB's K); one measured point only (270 GB/s at 256 KB, docs/hardware.md)",
             mode="refit", anchor_gbps=270.0),
    Constant("K of L0C->GM (fixed cost of a Fixpipe, FIX)", ("transfer.l0c_to_gm",),
             "estimate (GM->UB's K, and the size of the 200 GB/s point); docs/hardware.md", mode="refit",
             anchor_gbps=200.0),
    Constant("latency of L1->L0A/L0B (LoadData, MTE1)", ("transfer.l1_to_l0.latency_cycles",),
             "estimate; no public figure"),
    Constant("latency of UB->UB (DataCopy between UB tensors)", ("transfer.ub_to_ub.latency_cycles",),
             "estimate; no public figure"),
    Constant("latency of UB->L1", ("transfer.ub_to_l1.latency_cycles",), "estimate; no public figure"),
    Constant("cross_core_flag_cycles (CrossCoreSetFlag/WaitFlag, also the delivery latency)",
             ("scalar.cross_core_flag_cycles",),
             f"estimate; the API reference gives semantics, no timing ({CROSS_CORE})"),
    Constant("sync_all_cycles (SyncAll once all cores arrived)", ("scalar.sync_all_cycles",),
             f"estimate; the API reference gives semantics, no timing ({SYNC_ALL})"),
    Constant("issue_cycles (scalar issue of every instruction)", ("scalar.issue_cycles",),
             "estimate; no public figure"),
    Constant("local_access_cycles (GetValue/SetValue on UB/L1)", ("scalar.local_access_cycles",),
             "estimate; no public figure"),
    Constant("gm_access_cycles (GetValue/SetValue on GM)", ("scalar.gm_access_cycles",),
             "estimate from the GM->UB fit; no public figure"),
    Constant(f"vector costs by analogy ({len(VECTOR_ANALOGIES)} instructions, head and slope)",
             tuple(f"vector.costs.{k}" for k in VECTOR_ANALOGIES),
             "analogy with a measured instruction (docs/hardware.md, Vector unit)"),
    Constant("sync_us (device->host read after a sync)", ("launch.sync_us",),
             "estimate from a GPU figure; used by the reference model too"),
)

# The sync constants are 1 cycle: x0.5 and x2 say little. What an assumed latency would do:
STRESS_CYCLES = (100.0, 1000.0)
STRESSED = ("scalar.cross_core_flag_cycles", "scalar.sync_all_cycles")


def perturbed(spec: HardwareSpec, constant: Constant, factor: float) -> HardwareSpec:
    """`spec` with the constant's fields varied by `factor` (module docstring: how each mode applies)."""
    data = spec.model_dump()
    for path in constant.paths:
        *parents, leaf = path.split(".")
        node = data
        for key in parents:
            node = node[key]
        if constant.mode == "refit":
            node[leaf] = _refit(node[leaf], factor, constant.anchor_gbps)
        elif constant.mode == "excess":
            node[leaf] = 1.0 + (node[leaf] - 1.0) * factor
        else:
            node[leaf] = _scale(node[leaf], factor)
    return HardwareSpec.model_validate(data)


def set_value(spec: HardwareSpec, path: str, value: float) -> HardwareSpec:
    """`spec` with one numeric field set (the stress rows)."""
    data = spec.model_dump()
    *parents, leaf = path.split(".")
    node = data
    for key in parents:
        node = node[key]
    node[leaf] = value
    return HardwareSpec.model_validate(data)


def value_of(spec: HardwareSpec, path: str):
    node = spec.model_dump()
    for key in path.split("."):
        node = node[key]
    return node


def _scale(value, factor: float):
    if isinstance(value, dict):     # an instruction's {b16: (head, slope), b32: ...}
        return {k: _scale(v, factor) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [v * factor for v in value]
    return value * factor


def _refit(path: dict, factor: float, rate_gbps: float) -> dict:
    """K x factor, the peak refitted through (size, rate): size from the preset's own K and peak,
    rate * (size + K) / size = peak  =>  size = rate * K / (peak - rate)."""
    k, peak = path["k_bytes"], path["peak_gbps"]
    size = rate_gbps * k / (peak - rate_gbps)
    new_k = k * factor
    return {**path, "k_bytes": new_k, "peak_gbps": rate_gbps * (size + new_k) / size}
