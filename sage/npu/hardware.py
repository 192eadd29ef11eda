"""Hardware presets: the numbers the simulator's cost model is built from.

The preset TOML files ship inside the package (``sage/npu/presets/``); the repository's
``configs/`` holds identical documented copies (a test keeps them equal). Every number in
a preset cites the row of docs/hardware.md it comes from, or says "estimate" and why.
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

PRESET_DIR = Path(__file__).with_name("presets")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ChipSpec(_Frozen):
    clock_mhz: float
    aic_cores: int
    aiv_cores: int
    hbm_bytes: int
    hbm_gbps: float
    l2_bytes: int
    l2_write_bytes_per_cycle_per_core: float


class LaunchSpec(_Frozen):
    host_dispatch_us: float      # host enqueue per launch, overlapped with device work (sage/npu/timeline.py)
    device_fixed_us: float       # device cost of every kernel beyond its own work
    sync_us: float               # a device->host read after the device drained
    max_block_dim_vector: int    # blocks that run at once on a vector launch (one per AIV core)
    max_block_dim_cube: int      # ... on a cube launch (one per AIC core)
    max_block_dim: int = 65535   # the API's blockDim range: more blocks than cores run in waves

    @property
    def overhead_us(self) -> float:
        """The per-launch cost the device itself pays (the engine adds it to each launch)."""
        return self.device_fixed_us


class BufferSpec(_Frozen):
    ub_bytes: int
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    ub_block_bytes: int = 32


class ScalarSpec(_Frozen):
    issue_cycles: float
    local_access_cycles: float
    gm_access_cycles: float
    flag_cycles: float
    event_ids: int
    # What a CrossCoreSetFlag/WaitFlag record and a SyncAll record occupy their pipe for: a set's
    # increment reaches the other core when the set ends (sim/engine_sync.py), so the set's cost is
    # also the flag's delivery latency. Separate from flag_cycles (the in-core SetFlag/WaitFlag
    # figure) so that the sensitivity study (benchmarks/sensitivity.py) can vary them alone.
    cross_core_flag_cycles: float = 1.0
    sync_all_cycles: float = 1.0


class InstrCost(_Frozen):
    """[head, slope] per operand width: b16 (8/16-bit types) and b32 (32/64-bit types)."""

    b16: tuple[float, float]
    b32: tuple[float, float]


class VectorSpec(_Frozen):
    repeat_bytes: int
    max_repeat: int
    costs: dict[str, InstrCost]


class CubeSpec(_Frozen):
    fractal: int
    fixed_cycles: float
    fp32_factor: float
    peak_macs_per_cycle: float


class PathSpec(_Frozen):
    """One data path: cycles = latency + max((K + bytes) / peak, bytes / plateau).

    ``peak`` and ``K`` fit the rising part of a measured bandwidth curve; ``plateau`` is the
    rate a single core sustains on large copies (the curve stops rising there). Without a
    plateau the path streams at its peak."""

    peak_gbps: float
    k_bytes: float
    latency_cycles: float
    plateau_gbps: float | None = None


class TransferEffects(_Frozen):
    gm_line_bytes: int
    unaligned_gm_penalty: float
    burst_overhead_cycles: float
    l2_hit_speedup: float


class TransferSpec(_Frozen):
    gm_to_ub: PathSpec
    ub_to_gm: PathSpec
    gm_to_l1: PathSpec
    l1_to_l0: PathSpec
    l0c_to_gm: PathSpec
    ub_to_ub: PathSpec
    ub_to_l1: PathSpec
    effects: TransferEffects


class HardwareSpec(_Frozen):
    name: str
    description: str = ""
    chip: ChipSpec
    launch: LaunchSpec
    buffers: BufferSpec
    scalar: ScalarSpec
    vector: VectorSpec
    cube: CubeSpec
    transfer: TransferSpec
    source: str = Field("", description="file the preset was loaded from")

    @property
    def cycles_per_us(self) -> float:
        return self.chip.clock_mhz

    def bytes_per_cycle(self, gbps: float) -> float:
        return gbps * 1e9 / (self.chip.clock_mhz * 1e6)

    @property
    def hbm_bytes_per_cycle(self) -> float:
        return self.bytes_per_cycle(self.chip.hbm_gbps)

    @property
    def launch_overhead_cycles(self) -> float:
        return self.launch.overhead_us * self.chip.clock_mhz


def list_presets() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.toml"))


@lru_cache(maxsize=16)
def _load_path(path: str) -> HardwareSpec:
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    data["source"] = path
    return HardwareSpec.model_validate(data)


def load_preset(name_or_path: str = "ascend910b2") -> HardwareSpec:
    """A preset by name (``list_presets()``) or by path to a TOML file of the same shape."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" and candidate.is_file():
        return _load_path(str(candidate.resolve()))
    path = PRESET_DIR / f"{name_or_path}.toml"
    if not path.is_file():
        raise ValueError(f"unknown hardware preset {name_or_path!r}; known: {', '.join(list_presets())}")
    return _load_path(str(path))
