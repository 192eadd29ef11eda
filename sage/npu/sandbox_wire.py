"""The two messages between the trusted parent and a sandboxed kernel child.

The job (parent → child) travels in a sealed memory file: an 8-byte length, a JSON
header (the kernel text, the preset, limits, the expected outputs, each argument as
either a plain value or a typed slice of the data that follows), then the input arrays'
raw bytes. The child maps it read-only.

The reply (child → parent) goes through a pipe: an 8-byte length, a JSON header of at
most `MAX_REPLY_HEADER` bytes (error, printed text, output shapes and dtypes, the trace's
length), the outputs' raw bytes, then the instruction trace (``sim/runtrace.py``). The
parent reads it with a deadline and checks every size against what it allows *before*
reading: outputs must be exactly what the task's reference produces (or, without a
reference, fit the memory limit), the trace must fit its cap, and nothing the child sends
is unpickled or executed.
"""

from __future__ import annotations

import json
import math
import os
import select
import time
from typing import Any

import ml_dtypes
import numpy as np

MAX_REPLY_HEADER = 256 * 1024
MAX_ERROR_CHARS = 4000          # a kernel's exception message is cut to this before it leaves the child
JOB_MAGIC = b"SAGEJOB1"


class ReplyError(Exception):
    """The child's reply breaks the wire format (only a child that escaped its guards can)."""


class ReplyTimeout(Exception):
    """No (complete) reply before the deadline."""


# -- the job -----------------------------------------------------------------------------------

def encode_job(header: dict, args: list, kwargs: dict) -> tuple[bytes, list[np.ndarray]]:
    """The job header (with argument descriptors filled in) and the arrays to append after it."""
    arrays: list[np.ndarray] = []
    offset = 0

    def describe(value: Any) -> dict:
        nonlocal offset
        if isinstance(value, np.ndarray):
            # ascontiguousarray makes a 0-d array 1-d: a rank-0 input keeps its shape ()
            arr = np.ascontiguousarray(value).reshape(value.shape)
            arrays.append(arr)
            entry = {"array": {"dtype": dtype_name(arr.dtype), "shape": list(arr.shape), "offset": offset}}
            offset += arr.nbytes
            return entry
        if isinstance(value, (list, tuple)) and any(isinstance(v, np.ndarray) for v in value):
            # a list of tensors (torch.cat's argument): each element its own slice of the data
            return {"items": [describe(v) for v in value], "tuple": isinstance(value, tuple)}
        return {"value": value}

    body = dict(header)
    body["args"] = [describe(a) for a in args]
    body["kwargs"] = {k: describe(v) for k, v in kwargs.items()}
    return json.dumps(body).encode(), arrays


def write_job(header: dict, args: list, kwargs: dict) -> int:
    """A sealed, read-only-to-the-child memory file holding the job; returns its descriptor."""
    text, arrays = encode_job(header, args, kwargs)
    fd = _memory_file()
    with os.fdopen(os.dup(fd), "wb", buffering=1 << 20) as out:
        out.write(JOB_MAGIC)
        out.write(len(text).to_bytes(8, "little"))
        out.write(text)
        for arr in arrays:
            out.write(memoryview(arr.reshape(-1).view(np.uint8)))
    return fd


def read_job(fd: int) -> tuple[dict, list, dict]:
    """The job's header, arguments and keyword arguments (arrays are read-only views of the file)."""
    import mmap

    size = os.fstat(fd).st_size
    mapped = mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else b""
    if bytes(mapped[:8]) != JOB_MAGIC:
        raise ValueError("not a sage job file")
    hlen = int.from_bytes(mapped[8:16], "little")
    header = json.loads(bytes(mapped[16:16 + hlen]))
    base = 16 + hlen

    def value(entry: dict) -> Any:
        if "items" in entry:
            items = [value(e) for e in entry["items"]]
            return tuple(items) if entry["tuple"] else items
        if "array" not in entry:
            return entry["value"]
        a = entry["array"]
        dtype = np_dtype(a["dtype"])
        count = math.prod(a["shape"])
        return np.frombuffer(mapped, dtype=dtype, count=count, offset=base + a["offset"]).reshape(a["shape"])

    return header, [value(e) for e in header["args"]], {k: value(e) for k, e in header["kwargs"].items()}


def _memory_file() -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create("sage-job", os.MFD_CLOEXEC)
    import tempfile

    fd, path = tempfile.mkstemp(prefix="sage-job-")
    os.unlink(path)
    return fd


# -- the reply ---------------------------------------------------------------------------------

def encode_reply_header(error: dict | None, printed: str, outputs: list[np.ndarray] | None, trace_bytes: int,
                        isolation: dict | None) -> bytes:
    if error is not None and len(error.get("message", "")) > MAX_ERROR_CHARS:
        error = dict(error, message=error["message"][:MAX_ERROR_CHARS] + " [message cut]")
    header = {"error": error, "printed": printed[:MAX_REPLY_HEADER // 4], "trace_bytes": trace_bytes,
              "outputs": None if outputs is None else [
                  {"shape": list(o.shape), "dtype": dtype_name(o.dtype)} for o in outputs],
              "isolation": isolation}
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text


class Reader:
    """Reads exact byte counts from a pipe before a deadline (which the caller may extend)."""

    def __init__(self, fd: int, deadline: float):
        self.fd = fd
        self.deadline = deadline

    def into(self, view: memoryview) -> None:
        got = 0
        n = len(view)
        while got < n:
            ready, _, _ = select.select([self.fd], [], [], max(0.0, self.deadline - time.monotonic()))
            if not ready:
                raise ReplyTimeout()
            k = os.readv(self.fd, [view[got:]])
            if k == 0:
                raise EOFError()
            got += k

    def exact(self, n: int) -> bytes:
        buf = bytearray(n)
        self.into(memoryview(buf))
        return bytes(buf)


def read_header(reader: Reader) -> dict:
    hlen = int.from_bytes(reader.exact(8), "little")
    if hlen > MAX_REPLY_HEADER:
        raise ReplyError(f"reply header of {hlen} bytes is larger than {MAX_REPLY_HEADER}")
    try:
        header = json.loads(reader.exact(hlen))
    except (ValueError, RecursionError) as exc:
        raise ReplyError(f"reply header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise ReplyError("reply header is not an object")
    return header


def output_specs(header: dict) -> list[tuple[tuple[int, ...], np.dtype]] | None:
    outs = header.get("outputs")
    if outs is None:
        return None
    if not isinstance(outs, list) or len(outs) > 64:
        raise ReplyError("outputs must be a short list")
    specs = []
    for o in outs:
        try:
            shape = tuple(int(n) for n in o["shape"])
            dtype = np_dtype(str(o["dtype"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ReplyError(f"output entry is malformed: {exc}") from None
        if len(shape) > 16 or any(n < 0 for n in shape):
            raise ReplyError(f"output shape {shape} is out of range")
        specs.append((shape, dtype))
    return specs


def dtype_name(dtype: np.dtype) -> str:
    return "bfloat16" if dtype == ml_dtypes.bfloat16 else np.dtype(dtype).name


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        return np.dtype(ml_dtypes.bfloat16)
    dtype = np.dtype(name)
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(f"{name} cannot cross the sandbox boundary")
    return dtype
