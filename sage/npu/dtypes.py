"""Element types of the DSL: numpy dtypes, with bfloat16 from ml_dtypes.

A DSL dtype *is* a ``numpy.dtype``, so ``x.dtype == float16`` works on host handles and
``AllocTensor(float16)`` mirrors Ascend C's template argument.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

float32 = np.dtype(np.float32)
float16 = np.dtype(np.float16)
half = float16
bfloat16 = np.dtype(ml_dtypes.bfloat16)
int8 = np.dtype(np.int8)
uint8 = np.dtype(np.uint8)
int16 = np.dtype(np.int16)
uint16 = np.dtype(np.uint16)
int32 = np.dtype(np.int32)
uint32 = np.dtype(np.uint32)
int64 = np.dtype(np.int64)
bool_ = np.dtype(np.bool_)

ALL = (float32, float16, bfloat16, int8, uint8, int16, uint16, int32, uint32, int64, bool_)
FLOATS = (float32, float16, bfloat16)
_BY_NAME = {dt.name: dt for dt in ALL}


_KNOWN = {dt: dt for dt in ALL}


# The DSL dtypes by identity: every DSL call that takes a dtype normalises it, and hashing a
# numpy dtype (what _KNOWN.get does) costs more than the rest of a common call; these objects
# live as long as the process, so an id here is never another object's
_BY_ID = {id(dt): dt for dt in ALL}


def as_dtype(value) -> np.dtype:
    """Normalise a dtype given as a numpy dtype, a numpy scalar type or a name ("bfloat16")."""
    known = _BY_ID.get(id(value))
    if known is not None:
        return known
    known = _KNOWN.get(value) if isinstance(value, np.dtype) else None
    if known is not None:
        return known
    if isinstance(value, str):
        if value not in _BY_NAME:
            raise TypeError(f"unknown dtype {value!r}; known: {', '.join(_BY_NAME)}")
        return _BY_NAME[value]
    dt = np.dtype(value)
    if dt not in ALL:
        raise TypeError(f"dtype {dt} is not a DSL dtype; use one of {', '.join(_BY_NAME)}")
    return dt


def sizeof(dtype) -> int:
    """Bytes per element, like C's sizeof(T)."""
    return as_dtype(dtype).itemsize


def is_float(dtype: np.dtype) -> bool:
    return dtype in FLOATS


def name(dtype: np.dtype) -> str:
    return np.dtype(dtype).name
