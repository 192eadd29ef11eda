"""Ascend C's kernel debugging aids: ``printf`` and ``DumpTensor``.

Their output goes where a kernel's ``print`` goes: the run's bounded print buffer
(``sage.npu.restricted.PrintSink``), returned with the result and shown truncated by the
CLI (``--verbose``, and ``printed`` in ``--json``), never to stdout, and never back to the
kernel (``printed`` is refused). They are debug aids: printf and a DumpTensor of local memory
are not timed (on the chip they slow the kernel) and need no sync (DumpTensor shows the values
the functional run has at that point of the program); a DumpTensor of GM pays for the GM reads
the chip makes, so it is no free path to a tensor's data.
"""

from __future__ import annotations

import re

import numpy as np

from sage.npu.errors import BoundsError, KernelRuntimeError
from sage.npu.restricted import PrintSink, active_printer
from sage.npu.sim.core import MTE2, current_core
from sage.npu.sim.opcodes import AIC, GM_COPY, PATH_INDEX
from sage.npu.ascendc.host import current_session
from sage.npu.ascendc.tensors import GlobalTensor, LocalTensor

# C conversions Ascend C's printf takes: flags, width, precision, a length modifier (ignored).
_SPEC = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\d+)?(?:\.(?P<prec>\d+))?(?:hh|h|ll|l|z|j|t)?(?P<conv>.?)")
_INT_CONV, _FLOAT_CONV = "diuxXp", "fFeEgG"
_BITS = 64   # %u/%x/%p of a negative value print its 64-bit two's complement, as on the NPU

_DT_NAMES = {"float16": "DT_FLOAT16", "float32": "DT_FLOAT", "bfloat16": "DT_BF16", "int8": "DT_INT8",
             "uint8": "DT_UINT8", "int16": "DT_INT16", "uint16": "DT_UINT16", "int32": "DT_INT32",
             "uint32": "DT_UINT32", "int64": "DT_INT64", "bool": "DT_BOOL"}


def printf(fmt, *args) -> None:
    """printf(fmt, *args): C-style formatted output (%d %i %u %x %f %s %p, flags, width,
    precision; %% for %) to the captured print buffer; no newline is added."""
    current_session("printf()")
    if not isinstance(fmt, str):
        raise KernelRuntimeError(f"printf: the format must be a str, got {type(fmt).__name__}")
    _sink().write(format_c(fmt, args))


def DumpTensor(tensor, desc, dump_size) -> None:  # noqa: N802 - Ascend C's name
    """DumpTensor(tensor, desc, dump_size): print the first dump_size elements of a LocalTensor
    or GlobalTensor, after a header with desc (your number, e.g. a line), address, dtype, position."""
    core = current_core("DumpTensor")
    desc, count = _uint("DumpTensor desc", desc), _uint("DumpTensor dump_size", dump_size)
    if isinstance(tensor, LocalTensor):
        tensor._live("DumpTensor")
        data, addr, position = tensor._arr, tensor.addr, tensor.position
    elif isinstance(tensor, GlobalTensor):
        buf = tensor._require()
        data = buf.data[tensor._off:tensor._off + tensor._size]
        addr, position = buf.addr + tensor._off * buf.dtype.itemsize, "GM"
    else:
        raise KernelRuntimeError(f"DumpTensor needs a LocalTensor or GlobalTensor, got {type(tensor).__name__}")
    if count > data.size:
        raise BoundsError(f"DumpTensor(dump_size={count}): the tensor has {data.size} elements")
    if position == "GM":
        _charge_gm_dump(core, buf, tensor._off * buf.dtype.itemsize, count * buf.dtype.itemsize)
    sink = _sink()
    head = (f"DumpTensor: desc={desc}, addr={addr}, data_type={_DT_NAMES.get(data.dtype.name, data.dtype.name)}, "
            f"position={position}, block_id={core.block_idx}\n")
    # No more elements formatted than the buffer can still take (each is at least ", x").
    shown = data[:min(count, max(0, (sink.limit - sink.size - len(head)) // 2))]
    # numpy's shortest round-trip text per dtype (0.1 in float16 prints 0.1, not 0.0999755859375).
    values = shown.astype({"bfloat16": np.float32, "bool": np.uint8}.get(data.dtype.name, data.dtype))
    sink.write(head + "[" + ", ".join(map(str, values)) + "]\n")


DUMP_PIECE = 1024   # CANN dav_c220 DumpTensorGM2GMEntityImpl: ONE_DUMP_BACKUP_SIZE, 1 KB per copy


def _charge_gm_dump(core, buf, lo: int, nbytes: int) -> None:
    """Record the reads a DumpTensor of GM makes on the chip: the data goes through UB (L1 on a
    cube core) 1 KB at a time, each piece read from GM by MTE2 between PipeBarrier<PIPE_ALL>s
    (asc-devkit impl/basic_api/dav_c220/kernel_operator_dump_tensor_impl.h,
    DumpTensorGM2GMEntityImpl). So dumped input is paid for like a copy and is never a free
    path to the data. (The pieces' writes into the dump workspace, outside every allocation of
    the run, are not recorded.)"""
    padded = -(-nbytes // 32) * 32
    path = PATH_INDEX["GM->L1" if core.core_type == AIC else "GM->UB"]
    for start in range(lo, lo + padded, DUMP_PIECE):
        end = min(start + DUMP_PIECE, lo + padded, buf.nbytes)
        if end <= start:
            break
        core.barrier(None, "DumpTensor")
        core.instr(MTE2, "DumpTensor", GM_COPY, path, end - start, 1, end - start, (buf.id, start, end))
        core.gm_access(MTE2, buf, start, end - start, end - start, 1, False, "DumpTensor")
    core.barrier(None, "DumpTensor")


def format_c(fmt: str, args: tuple) -> str:
    """`fmt % args` with C's conversions, checked: as many arguments as conversions, each of a
    type its conversion prints."""
    out, pos, used = [], 0, 0
    for m in _SPEC.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        conv = m.group("conv")
        if conv == "%":
            out.append("%")
            continue
        if conv not in _INT_CONV + _FLOAT_CONV + "s":
            raise KernelRuntimeError(f"printf: unsupported conversion '%{conv}' (use %d %i %u %x %f %s %p)")
        if used == len(args):
            raise KernelRuntimeError(f"printf: the format has more conversions than the {len(args)} argument(s)")
        out.append(_convert(m, conv, args[used]))
        used += 1
    if used != len(args):
        raise KernelRuntimeError(f"printf: {len(args)} argument(s) for {used} conversion(s) in the format")
    out.append(fmt[pos:])
    return "".join(out)


def _convert(m: re.Match, conv: str, value) -> str:
    flags, width, prec = m.group("flags"), m.group("width") or "", m.group("prec")
    spec = f"%{flags}{width}{'.' + prec if prec is not None else ''}"
    if conv == "s":
        return (spec + "s") % (value,)
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if conv in _INT_CONV:
        if not isinstance(value, (int, np.integer)):
            raise KernelRuntimeError(f"printf: %{conv} needs an integer, got {type(value).__name__} {value!r}")
        value = int(value)
        if conv in "uxXp" and value < 0:
            value += 1 << _BITS
        if conv == "p":
            return f"0x{value:x}"
        return (spec + ("d" if conv in "iu" else conv)) % value
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise KernelRuntimeError(f"printf: %{conv} needs a number, got {type(value).__name__} {value!r}")
    return (spec + conv) % float(value)


def _sink() -> PrintSink:
    sink = active_printer()
    if sink is None:
        raise KernelRuntimeError("printf/DumpTensor need a kernel file run (their output goes to its print buffer)")
    return sink


def _uint(what: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise KernelRuntimeError(f"{what} must be a non-negative int, got {value!r}")
    return int(value)
