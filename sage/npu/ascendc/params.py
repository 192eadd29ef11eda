"""Parameter structs of the DSL, mutable like their Ascend C counterparts.

A kernel may set their fields (``p.blockCount = 4``), as in Ascend C, but only to plain
numbers: the structs have slots and no ``__dict__``, and a field holding anything else (a
handle, a list, an object) is refused, so a struct can never carry a reference into a DSL
call.
"""

from __future__ import annotations

from dataclasses import dataclass as _dataclass

from sage.npu.errors import KernelRuntimeError


class _Params:
    __slots__ = ()

    def __setattr__(self, name: str, value) -> None:
        if name not in self.__dataclass_fields__:
            raise KernelRuntimeError(f"{type(self).__name__} has no field '{name}'")
        if not isinstance(value, (bool, int, float)):
            raise KernelRuntimeError(f"{type(self).__name__}.{name} must be a number, got {type(value).__name__}")
        object.__setattr__(self, name, value)

    def __init_subclass__(cls, **kwargs):
        if not cls.__module__.startswith(__name__):
            raise TypeError(f"{cls.__bases__[0].__name__} cannot be subclassed outside the DSL")
        super().__init_subclass__(**kwargs)


def dataclass(cls):
    """A parameter struct: a slotted dataclass whose fields only take numbers."""
    return _dataclass(slots=True)(type(cls.__name__, (_Params,), dict(cls.__dict__)))


@dataclass
class DataCopyParams:
    """blockCount blocks of blockLen x 32 B; srcStride/dstStride = gap between blocks in 32 B units.

    Passed to DataCopyPad, blockLen is in bytes (as Ascend C's DataCopyPad does).
    """

    blockCount: int = 1
    blockLen: int = 0
    srcStride: int = 0
    dstStride: int = 0


@dataclass
class DataCopyExtParams:
    """DataCopyPad: blockLen in bytes; the GM-side stride in bytes, the UB-side stride in 32 B units."""

    blockCount: int = 1
    blockLen: int = 0
    srcStride: int = 0
    dstStride: int = 0
    rsv: int = 0


@dataclass
class DataCopyPadExtParams:
    """GM->UB DataCopyPad padding: leftPadding/rightPadding elements of paddingValue when isPad."""

    isPad: bool = False
    leftPadding: int = 0
    rightPadding: int = 0
    paddingValue: float = 0


DataCopyPadParams = DataCopyPadExtParams


@dataclass
class Nd2NzParams:
    """GM->L1 copy of an nValue x dValue matrix (GM row pitch srcDValue elements), ND->NZ: in L1 it is
    row-major with rows padded to max(ceil16(nValue), dstNzC0Stride) and the row length to ceil16(dValue)
    (ceil32 for int8), zero-filled like NZ padding. Only ndNum=1 is simulated; the other stride fields are unused.
    """

    ndNum: int = 1
    nValue: int = 0
    dValue: int = 0
    srcNdMatrixStride: int = 0
    srcDValue: int = 0
    dstNzC0Stride: int = 0
    dstNzNStride: int = 1
    dstNzMatrixStride: int = 0


@dataclass
class BinaryRepeatParams:
    """Mask/repeat-form strides (32 B units)."""

    dstBlkStride: int = 1
    src0BlkStride: int = 1
    src1BlkStride: int = 1
    dstRepStride: int = 8
    src0RepStride: int = 8
    src1RepStride: int = 8


@dataclass
class UnaryRepeatParams:
    """Mask/repeat-form strides (32 B units)."""

    dstBlkStride: int = 1
    srcBlkStride: int = 1
    dstRepStride: int = 8
    srcRepStride: int = 8


@dataclass
class BrcbRepeatParams:
    dstBlkStride: int = 1
    dstRepStride: int = 8


@dataclass
class MmadParams:
    """cmatrixInitVal=True starts C from zero, False accumulates into it."""

    m: int = 0
    n: int = 0
    k: int = 0
    cmatrixInitVal: bool = True


@dataclass
class LoadData2DParams:
    """sage's LoadData parameters (not Ascend C's fractal fields): a rows x cols tile from L1, row pitch
    srcStride elements (0 = cols); rows, cols multiples of 16 (cols of 32 for int8); ifTranspose loads the transpose."""

    rows: int = 0
    cols: int = 0
    srcStride: int = 0
    ifTranspose: bool = False


@dataclass
class FixpipeParams:
    """L0C row pitch srcStride (0 = ceil16(nSize)), GM row pitch dstStride (0 = nSize), in elements."""

    mSize: int = 0
    nSize: int = 0
    srcStride: int = 0
    dstStride: int = 0
    reluEn: bool = False


PARAM_TYPES = (DataCopyParams, DataCopyExtParams, DataCopyPadExtParams, Nd2NzParams, BinaryRepeatParams,
               UnaryRepeatParams, BrcbRepeatParams, MmadParams, LoadData2DParams, FixpipeParams)
