"""The hardware facts kernel generators size their kernels by, read from a preset.

Generators never carry hardware numbers of their own: the core counts they launch on,
the UB capacity their tiles must fit, the 32 B block that aligns UB rows, the 256 B
vector repeat and the 16x16 cube fractal all come from `sage.npu.hardware.load_preset`.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from sage.npu.hardware import HardwareSpec, load_preset


class Target(BaseModel):
    model_config = ConfigDict(frozen=True)

    preset: str
    vector_cores: int          # AIV cores: blocks of a vector kernel
    cube_cores: int            # AIC cores: blocks of a cube kernel
    ub_bytes: int              # Unified Buffer per AIV
    block_bytes: int           # UB block: vector operands and UB rows align to it
    repeat_bytes: int          # bytes one vector repeat reads
    fractal: int               # cube fractal edge: matrix tiles pad to multiples of it


def target_of(hw: HardwareSpec) -> Target:
    return Target(preset=hw.name, vector_cores=hw.chip.aiv_cores, cube_cores=hw.chip.aic_cores,
                  ub_bytes=hw.buffers.ub_bytes, block_bytes=hw.buffers.ub_block_bytes,
                  repeat_bytes=hw.vector.repeat_bytes, fractal=hw.cube.fractal)


@lru_cache(maxsize=8)
def target_for(preset: str = "ascend910b2") -> Target:
    """The target of a preset by name or path (the default preset when not given)."""
    return target_of(load_preset(preset))
