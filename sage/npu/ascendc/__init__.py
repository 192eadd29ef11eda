"""The Ascend-C-style kernel DSL. A kernel file does ``from sage.npu.ascendc import *``."""

from sage.npu.dtypes import (bfloat16, bool_, float16, float32, half, int8, int16, int32, int64, sizeof, uint8,
                             uint16, uint32)
from sage.npu.ascendc import (activation, cast, compare, cube, datamove, debug, handles, host, layernorm, mathfn, matmul, mrgsort,
                              queues, reduce, softmax, sort, sync, tensors, trig, vector)
from sage.npu.ascendc.params_highlevel import LayerNormShapeInfo, SoftMaxShapeInfo
from sage.npu.ascendc.queues import QuePosition, TPosition
from sage.npu.ascendc.params import (BinaryRepeatParams, BrcbRepeatParams, DataCopyExtParams, DataCopyPadExtParams,
                                     DataCopyPadParams, DataCopyParams, FixpipeParams, LoadData2DParams, MmadParams,
                                     Nd2NzParams, UnaryRepeatParams)
from sage.npu.ascendc.cast import RoundMode
from sage.npu.ascendc.compare import CMPMODE, SELMODE
from sage.npu.ascendc.reduce import ReduceOrder
from sage.npu.ascendc.sync import (ASCEND_IS_AIC, ASCEND_IS_AIV, EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3,
                                   EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7, KERNEL_TYPE_AIC_ONLY,
                                   KERNEL_TYPE_AIV_ONLY, KERNEL_TYPE_MIX_AIC_1_0, KERNEL_TYPE_MIX_AIC_1_2,
                                   KERNEL_TYPE_MIX_AIV_1_0, PIPE_ALL, PIPE_FIX, PIPE_M, PIPE_MTE1, PIPE_MTE2,
                                   PIPE_MTE3, PIPE_S, PIPE_V, HardEvent, KernelType, PipeType)

# What a kernel holds are handles (handles.py): the simulator's objects stay behind them.
GmHandle = handles.public(host.GmHandle, session_level=True)
handles.public(host.Kernel, session_level=True)
handles.public(host._Launch, session_level=True, passthrough=("__call__",))
GlobalTensor = handles.public(tensors.GlobalTensor)
LocalTensor = handles.public(tensors.LocalTensor)
TPipe = handles.public(queues.TPipe)
TQue = handles.public(queues.TQue)
TQueBind = handles.public(queues.TQueBind)
TBuf = handles.public(queues.TBuf)
Matmul = handles.public(matmul.Matmul)

_api = handles.api
kernel, empty, empty_like = _api(host.kernel), _api(host.empty), _api(host.empty_like)
read_back = _api(host.read_back)
DataCopy, DataCopyPad = _api(datamove.DataCopy), _api(datamove.DataCopyPad)
SetAtomicAdd, SetAtomicMax = _api(datamove.SetAtomicAdd), _api(datamove.SetAtomicMax)
SetAtomicMin, SetAtomicNone = _api(datamove.SetAtomicMin), _api(datamove.SetAtomicNone)
(Abs, Add, Adds, And, Axpy, Div, Duplicate, Exp, LeakyRelu, Ln, Max, Maxs, Min, Mins, Mul, Muls, Not, Or, Reciprocal,
 Relu, Rsqrt, Sqrt, Sub) = (_api(getattr(vector, n)) for n in (
    "Abs", "Add", "Adds", "And", "Axpy", "Div", "Duplicate", "Exp", "LeakyRelu", "Ln", "Max", "Maxs", "Min", "Mins",
    "Mul", "Muls", "Not", "Or", "Reciprocal", "Relu", "Rsqrt", "Sqrt", "Sub"))
Cast = _api(cast.Cast)
Compare, CompareScalar = _api(compare.Compare), _api(compare.CompareScalar)
Gather, Select = _api(compare.Gather), _api(compare.Select)
(BlockReduceMax, BlockReduceSum, Brcb, ReduceMax, ReduceMin, ReduceSum, WholeReduceMax, WholeReduceMin,
 WholeReduceSum) = (_api(getattr(reduce, n)) for n in (
    "BlockReduceMax", "BlockReduceSum", "Brcb", "ReduceMax", "ReduceMin", "ReduceSum", "WholeReduceMax",
    "WholeReduceMin", "WholeReduceSum"))
Sort, TopK = _api(sort.Sort), _api(sort.TopK)
MrgSort = _api(mrgsort.MrgSort)
Fixpipe, LoadData, Mmad = _api(cube.Fixpipe), _api(cube.LoadData), _api(cube.Mmad)
GetBlockIdx, GetBlockNum = _api(sync.GetBlockIdx), _api(sync.GetBlockNum)
PipeBarrier, SetFlag, WaitFlag = _api(sync.PipeBarrier), _api(sync.SetFlag), _api(sync.WaitFlag)
GetSubBlockIdx, GetTaskRation = _api(sync.GetSubBlockIdx), _api(sync.GetTaskRation)
KERNEL_TASK_TYPE_DEFAULT, SyncAll = _api(sync.KERNEL_TASK_TYPE_DEFAULT), _api(sync.SyncAll)
CrossCoreSetFlag, CrossCoreWaitFlag = _api(sync.CrossCoreSetFlag), _api(sync.CrossCoreWaitFlag)
printf, DumpTensor = _api(debug.printf), _api(debug.DumpTensor)
(Erf, FasterGelu, FasterGeluV2, Gelu, Log, Log2, Log10, Sigmoid, Sign, Silu, Swish, Tanh) = (
    _api(getattr(activation if hasattr(activation, n) else mathfn, n)) for n in (
        "Erf", "FasterGelu", "FasterGeluV2", "Gelu", "Log", "Log2", "Log10", "Sigmoid", "Sign", "Silu", "Swish",
        "Tanh"))
SoftMax, LayerNorm = _api(softmax.SoftMax), _api(layernorm.LayerNorm)
Sin, Cos = _api(trig.Sin), _api(trig.Cos)
del _api

__all__ = [
    # dtypes
    "float32", "float16", "half", "bfloat16", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
    "bool_", "sizeof",
    # host
    "kernel", "empty", "empty_like", "read_back", "GmHandle",
    # blocks and memory
    "GetBlockIdx", "GetBlockNum", "GlobalTensor", "LocalTensor", "TPipe", "TQue", "TQueBind", "TBuf", "TPosition", "QuePosition",
    # data movement
    "DataCopy", "DataCopyPad", "DataCopyParams", "DataCopyExtParams", "DataCopyPadExtParams", "DataCopyPadParams",
    "Nd2NzParams", "SetAtomicAdd", "SetAtomicMax", "SetAtomicMin", "SetAtomicNone",
    # vector
    "Add", "Sub", "Mul", "Div", "Max", "Min", "And", "Or", "Adds", "Muls", "Maxs", "Mins", "LeakyRelu",
    "Exp", "Ln", "Abs", "Reciprocal", "Sqrt", "Rsqrt", "Relu", "Not", "Duplicate", "Axpy",
    "Cast", "RoundMode", "Compare", "CompareScalar", "Select", "CMPMODE", "SELMODE", "Gather",
    "ReduceSum", "ReduceMax", "ReduceMin", "WholeReduceSum", "WholeReduceMax", "WholeReduceMin", "ReduceOrder",
    "BlockReduceSum", "BlockReduceMax", "Brcb", "Sort", "TopK", "MrgSort", "BinaryRepeatParams", "UnaryRepeatParams", "BrcbRepeatParams",
    # high-level APIs (expansions into the vector instructions above)
    "Gelu", "FasterGelu", "FasterGeluV2", "Sigmoid", "Silu", "Swish", "Tanh", "Erf", "Log", "Log2", "Log10", "Sign",
    "Sin", "Cos", "SoftMax", "SoftMaxShapeInfo", "LayerNorm", "LayerNormShapeInfo",
    # cube
    "LoadData", "LoadData2DParams", "Mmad", "MmadParams", "Fixpipe", "FixpipeParams", "Matmul",
    # sync
    "PipeBarrier", "SetFlag", "WaitFlag", "HardEvent", "PipeType", "PIPE_S", "PIPE_V", "PIPE_M", "PIPE_MTE1",
    "PIPE_MTE2", "PIPE_MTE3", "PIPE_FIX", "PIPE_ALL", "EVENT_ID0", "EVENT_ID1", "EVENT_ID2", "EVENT_ID3", "EVENT_ID4",
    "EVENT_ID5", "EVENT_ID6", "EVENT_ID7",
    # core types and sync between cores
    "KERNEL_TASK_TYPE_DEFAULT", "KernelType", "KERNEL_TYPE_AIV_ONLY", "KERNEL_TYPE_AIC_ONLY", "KERNEL_TYPE_MIX_AIC_1_2",
    "KERNEL_TYPE_MIX_AIV_1_0", "KERNEL_TYPE_MIX_AIC_1_0", "ASCEND_IS_AIC", "ASCEND_IS_AIV", "GetSubBlockIdx",
    "GetTaskRation", "CrossCoreSetFlag", "CrossCoreWaitFlag", "SyncAll",
    # debugging
    "printf", "DumpTensor",
]
