"""The Ascend-C-style kernel DSL. A kernel file does ``from sage.npu.ascendc import *``."""

from sage.npu.dtypes import (bfloat16, bool_, float16, float32, half, int8, int16, int32, int64, sizeof, uint8,
                             uint16, uint32)
from sage.npu.ascendc.host import GmHandle, empty, empty_like, kernel
from sage.npu.ascendc.tensors import GlobalTensor, LocalTensor
from sage.npu.ascendc.queues import QuePosition, TBuf, TPipe, TPosition, TQue
from sage.npu.ascendc.params import (BinaryRepeatParams, BrcbRepeatParams, DataCopyExtParams, DataCopyPadExtParams,
                                     DataCopyPadParams, DataCopyParams, FixpipeParams, LoadData2DParams, MmadParams,
                                     Nd2NzParams, UnaryRepeatParams)
from sage.npu.ascendc.datamove import (DataCopy, DataCopyPad, SetAtomicAdd, SetAtomicMax, SetAtomicMin,
                                       SetAtomicNone)
from sage.npu.ascendc.vector import (Abs, Add, Adds, And, Axpy, Div, Duplicate, Exp, LeakyRelu, Ln, Max, Maxs, Min,
                                     Mins, Mul, Muls, Not, Or, Reciprocal, Relu, Rsqrt, Sqrt, Sub)
from sage.npu.ascendc.cast import Cast, RoundMode
from sage.npu.ascendc.compare import CMPMODE, SELMODE, Compare, CompareScalar, Gather, Select
from sage.npu.ascendc.reduce import (BlockReduceMax, BlockReduceSum, Brcb, ReduceMax, ReduceMin, ReduceOrder, ReduceSum,
                                     WholeReduceMax, WholeReduceMin, WholeReduceSum)
from sage.npu.ascendc.sort import Sort, TopK
from sage.npu.ascendc.cube import Fixpipe, LoadData, Mmad
from sage.npu.ascendc.matmul import Matmul
from sage.npu.ascendc.sync import (EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6,
                                   EVENT_ID7, PIPE_ALL, PIPE_FIX, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_S, PIPE_V,
                                   GetBlockIdx, GetBlockNum, HardEvent, PipeBarrier, PipeType, SetFlag, WaitFlag)

__all__ = [
    # dtypes
    "float32", "float16", "half", "bfloat16", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
    "bool_", "sizeof",
    # host
    "kernel", "empty", "empty_like", "GmHandle",
    # blocks and memory
    "GetBlockIdx", "GetBlockNum", "GlobalTensor", "LocalTensor", "TPipe", "TQue", "TBuf", "TPosition", "QuePosition",
    # data movement
    "DataCopy", "DataCopyPad", "DataCopyParams", "DataCopyExtParams", "DataCopyPadExtParams", "DataCopyPadParams",
    "Nd2NzParams", "SetAtomicAdd", "SetAtomicMax", "SetAtomicMin", "SetAtomicNone",
    # vector
    "Add", "Sub", "Mul", "Div", "Max", "Min", "And", "Or", "Adds", "Muls", "Maxs", "Mins", "LeakyRelu",
    "Exp", "Ln", "Abs", "Reciprocal", "Sqrt", "Rsqrt", "Relu", "Not", "Duplicate", "Axpy",
    "Cast", "RoundMode", "Compare", "CompareScalar", "Select", "CMPMODE", "SELMODE", "Gather",
    "ReduceSum", "ReduceMax", "ReduceMin", "WholeReduceSum", "WholeReduceMax", "WholeReduceMin", "ReduceOrder",
    "BlockReduceSum", "BlockReduceMax", "Brcb", "Sort", "TopK", "BinaryRepeatParams", "UnaryRepeatParams", "BrcbRepeatParams",
    # cube
    "LoadData", "LoadData2DParams", "Mmad", "MmadParams", "Fixpipe", "FixpipeParams", "Matmul",
    # sync
    "PipeBarrier", "SetFlag", "WaitFlag", "HardEvent", "PipeType", "PIPE_S", "PIPE_V", "PIPE_M", "PIPE_MTE1",
    "PIPE_MTE2", "PIPE_MTE3", "PIPE_FIX", "PIPE_ALL", "EVENT_ID0", "EVENT_ID1", "EVENT_ID2", "EVENT_ID3", "EVENT_ID4",
    "EVENT_ID5", "EVENT_ID6", "EVENT_ID7",
]
