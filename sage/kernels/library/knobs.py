"""Schedule knobs of the library kernels and the vendor's generic choice of them.

A library kernel is a source-text generator: the same generator, given different knobs,
writes a differently scheduled kernel for the same operator class. The reference model
(`sage.bench.reference`) uses `VENDOR_KNOBS`; the offline synthesizer searches the rest of
the space per shape. Knobs only change speed, never results (except `fp32_compute`, which
changes rounding for half types). They hold no hardware number: the cores a kernel
launches on and the buffer sizes it fits come from its `Target` (a preset).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# A generated vector kernel keeps 2 KiB of UB aside for scalar slots and reduction work
# areas; its tiles get the rest.
UB_RESERVED = 2_048


class Knobs(BaseModel):
    """How a vector kernel is scheduled."""

    model_config = ConfigDict(frozen=True)

    tile_len: int = Field(4096, ge=32, description="elements per tile (clamped to what fits in UB)")
    buffer_num: int = Field(2, ge=1, le=4, description="queue depth: 2 = double buffering")
    block_dim: int | None = Field(None, ge=1, description="blocks to launch; None = all cores")
    copy_mode: Literal["pad", "auto"] = Field(
        "pad", description="pad: always DataCopyPad; auto: DataCopy when rows are 32 B aligned"
    )
    fp32_compute: bool = Field(True, description="cast float16/bfloat16 to float32 for the arithmetic")
    fold_reduce: bool = Field(False, description="row kernels: halve rows with Add/Max/Min before Reduce*")
    row_split: bool = Field(True, description="reductions over rows: split the rows across blocks (partials "
                            "through a GM workspace, then SyncAll) rather than narrow the column chunks")


class CubeKnobs(BaseModel):
    """How a matmul is scheduled on the cube: base tile of C and the K step."""

    model_config = ConfigDict(frozen=True)

    base_m: int = Field(128, ge=16, multiple_of=16)
    base_n: int = Field(256, ge=16, multiple_of=16)
    base_k: int = Field(64, ge=16, multiple_of=16, description="K step of one Mmad (L0A/L0B tile)")
    l1_k: int = Field(256, ge=16, multiple_of=16, description="K extent staged in L1 per GM copy")
    buffer_num: int = Field(2, ge=1, le=2)
    block_dim: int | None = Field(None, ge=1, description="blocks to launch; None = all cube cores")


# The vendor's eager kernels are shape-agnostic: one schedule for every shape. These are the
# choices such a kernel makes (docs/reference-model.md explains each):
# - a fixed tile of 4096 elements, shrunk only when it does not fit UB or would leave cores idle;
# - double buffering;
# - every core launched;
# - DataCopyPad for every transfer, because it handles any row length;
# - float32 arithmetic for float16/bfloat16, as CANN's kernels do for accuracy.
VENDOR_KNOBS = Knobs()
# Cube: a 128x256 base tile of C with a K step of 64 fits L0A (128*64*2 B = 16 KiB) and L0B
# (64*256*2 B = 32 KiB) double-buffered, and L0C (128*256*4 B = 128 KiB); K is staged in
# L1 256 at a time (A 64 KiB + B 128 KiB, double-buffered 384 KiB of 512 KiB). Sizes are
# for 2-byte inputs; float32 inputs halve the K extents so the bytes stay the same. The
# tile shrinks (N first, then M, down to 64) while it would leave cube cores idle, as the
# vendor's runtime tiling does.
VENDOR_CUBE_KNOBS = CubeKnobs()
