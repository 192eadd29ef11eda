"""The JSON-lines case file of a MultiKernelBench / NPUKernelBench task (`NAME.json` beside `NAME.py`).

One case per line: `{"inputs": [...]}`, the forward arguments in order. Each input has a
`type`:
- `tensor`: `dtype` and `shape` (`[]` is rank 0, a 0 in the shape is zero-size). An optional
  input (`"required": false`) with no shape is passed as None. `range: [lo, hi]` draws
  uniformly from it (integers inclusive); otherwise floats are standard normal, signed
  integers in [-10, 10), unsigned in [0, 10), bools fair coins.
- `tensor_list`: `dtype` and `shapes`, a list of tensors made as above.
- `scalar`: a Python number of `dtype`, from `value`, else `range_values` (a number, or
  `[lo, hi]` drawn uniformly).
- `attr`: `value` as it is (any JSON value); `"dtype": "tuple"` makes a list a tuple.
Other keys (the public files carry many: `id`, `standard`, `align_32B`, ...) are ignored.

The public task files read their case file themselves in `get_input_groups()`; this reader
is for task files that have a case file but no input functions, and for task authors who
would rather call it than write the parsing again (`read_case_file(Path(__file__).with_suffix(".json"))`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import torch

from sage.bench.case_support import MAX_CASE_ELEMENTS

# dtype names the public case files use, long and short forms.
DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32, "fp32": torch.float32,
    "float16": torch.float16, "fp16": torch.float16, "half": torch.float16,
    "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
    "float64": torch.float64, "fp64": torch.float64, "double": torch.float64,
    "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
    "uint8": torch.uint8, "uint16": torch.uint16, "uint32": torch.uint32, "uint64": torch.uint64,
    "bool": torch.bool,
    "complex64": torch.complex64, "complex128": torch.complex128,
}
_PYTHON_SCALARS = {"int": int, "float": float, "bool": bool, "complex": complex}
# Default integer draws when a tensor input has no `range`: small, so sums and products
# of a few elements stay exact in every integer type.
_SIGNED_RANGE = (-10, 9)
_UNSIGNED_RANGE = (0, 9)


class CaseFileError(ValueError):
    """A line of the case file that does not follow the format; says which case and input."""

    def __init__(self, file: Path, line: int, problem: str, case: int | None = None):
        self.file = Path(file)
        self.line = line
        self.case = case
        self.problem = problem
        where = f" line {line}" if line else ""
        which = f" (case {case})" if case is not None else ""
        super().__init__(f"{self.file.name}{where}{which}: {problem}")


def read_case_file(path: Path | str) -> list[list]:
    """Fresh forward arguments for every case of the file (random values drawn anew on each call)."""
    path = Path(path)
    return [make_case(path, index, line, spec) for index, (line, spec) in enumerate(case_specs(path))]


def case_specs(path: Path | str) -> list[tuple[int, dict]]:
    """(line number, parsed case) for every non-blank line; a line that is not a case raises."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CaseFileError(path, 0, f"cannot be read ({exc.strerror or exc})") from exc
    specs = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            spec = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise CaseFileError(path, number, f"not JSON ({exc.msg} at column {exc.colno})", len(specs)) from exc
        if not isinstance(spec, dict) or not isinstance(spec.get("inputs"), list):
            raise CaseFileError(path, number, "a case must be an object with an `inputs` list", len(specs))
        specs.append((number, spec))
    if not specs:
        raise CaseFileError(path, 0, "has no cases")
    return specs


def make_case(path: Path, index: int, line: int, spec: dict) -> list:
    """The forward arguments of case `index` (on `line` of the file at `path`)."""
    args = []
    for position, item in enumerate(spec["inputs"]):
        if not isinstance(item, dict):
            raise CaseFileError(path, line, f"input {position} is not an object", index)
        kind = item.get("type")
        maker = _MAKERS.get(kind)
        label = f"input {position} ({item.get('name', '?')!s})"
        if maker is None:
            raise CaseFileError(path, line, f"{label}: unknown type {kind!r} (known: {', '.join(_MAKERS)})", index)
        try:
            args.append(maker(item))
        except (TypeError, ValueError, RuntimeError) as exc:
            raise CaseFileError(path, line, f"{label}: {exc}", index) from exc
    return args


def _tensor(item: dict) -> torch.Tensor | None:
    shape = item.get("shape")
    if shape is None:
        if item.get("required", True):
            raise ValueError("a required tensor needs a `shape`")
        return None
    return _draw(_dtype(item), _shape(shape), item.get("range"))


def _tensor_list(item: dict) -> list[torch.Tensor]:
    shapes = item.get("shapes")
    if not isinstance(shapes, list):
        raise ValueError("a tensor_list needs `shapes`, a list of shapes")
    dtype = _dtype(item)
    return [_draw(dtype, _shape(s), item.get("range")) for s in shapes]


def _scalar(item: dict) -> bool | int | float | complex:
    value = item.get("value")
    if value is None:
        value = item.get("range_values")
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        value = value[0] + (value[1] - value[0]) * torch.rand((), dtype=torch.float64).item()
    if not isinstance(value, (int, float)):
        raise ValueError("a scalar needs a numeric `value` or `range_values`")
    name = item.get("dtype", "float")
    if name in _PYTHON_SCALARS:
        return _PYTHON_SCALARS[name](value)
    dtype = _dtype(item)
    if dtype == torch.bool:
        return bool(value)
    if dtype.is_complex:
        return complex(value)
    if dtype.is_floating_point:
        return float(value)
    return int(value)


def _attr(item: dict) -> Any:
    if "value" not in item and item.get("required", True):
        raise ValueError("a required attr needs a `value`")
    value = item.get("value")
    return tuple(value) if item.get("dtype") == "tuple" and isinstance(value, list) else value


_MAKERS = {"tensor": _tensor, "tensor_list": _tensor_list, "scalar": _scalar, "attr": _attr}


def _dtype(item: dict) -> torch.dtype:
    name = item.get("dtype")
    if name not in DTYPES:
        raise ValueError(f"unknown dtype {name!r}")
    return DTYPES[name]


def _shape(shape: Any) -> list[int]:
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                              for d in shape):
        raise ValueError(f"shape {shape!r} is not a list of sizes >= 0")
    return shape


def _draw(dtype: torch.dtype, shape: list[int], bounds: Any) -> torch.Tensor:
    if math.prod(shape) > MAX_CASE_ELEMENTS:
        # Shape and dtype without the memory: the evaluator reports the case as too large
        # (case_support.size_support) instead of the machine running out of memory making it.
        return torch.empty(shape, dtype=dtype, device="meta")
    if bounds is not None and not (isinstance(bounds, list) and len(bounds) == 2
                                   and all(isinstance(b, (int, float)) for b in bounds) and bounds[0] <= bounds[1]):
        raise ValueError(f"range {bounds!r} is not [low, high]")
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, dtype=torch.bool)
    if dtype.is_complex:
        return torch.complex(torch.randn(shape), torch.randn(shape)).to(dtype)
    if dtype.is_floating_point:
        if bounds is None:
            return torch.randn(shape, dtype=dtype)
        return (torch.rand(shape, dtype=torch.float64) * (bounds[1] - bounds[0]) + bounds[0]).to(dtype)
    low, high = bounds if bounds is not None else (_UNSIGNED_RANGE if _is_unsigned(dtype) else _SIGNED_RANGE)
    # torch.randint has no uint16/32/64 kernels: draw in int64 and convert.
    return torch.randint(math.ceil(low), math.floor(high) + 1, shape, dtype=torch.int64).to(dtype)


def _is_unsigned(dtype: torch.dtype) -> bool:
    return dtype in (torch.uint8, torch.uint16, torch.uint32, torch.uint64)
