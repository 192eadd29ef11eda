"""Shape structs of the high-level APIs, mutable numbers like the other parameter structs.

Ascend C passes these APIs a host-computed tiling struct as well; sage derives that tiling
inside the call from the shape and the temporary buffer's size, as the host functions
(SoftMaxTilingFunc, GetLayerNormNDTilingInfo) would.
"""

from __future__ import annotations

from sage.npu.ascendc.params import dataclass


@dataclass
class SoftMaxShapeInfo:
    """srcM rows of srcK elements (srcK x sizeof 32 B aligned); oriSrcM/oriSrcK the unpadded shape (0 = same)."""

    srcM: int = 0
    srcK: int = 0
    oriSrcM: int = 0
    oriSrcK: int = 0


@dataclass
class LayerNormShapeInfo:
    """[bLength, sLength, hLength] input (hLength x sizeof 32 B aligned); originalHLength the unpadded H (0 = same)."""

    bLength: int = 0
    sLength: int = 0
    hLength: int = 0
    originalHLength: int = 0


PARAM_TYPES = (SoftMaxShapeInfo, LayerNormShapeInfo)
