"""The torch_npu stand-in: the time the vendor's eager execution of a reference takes.

See docs/reference-model.md. Public API:

- `record_aten(model, args) -> list[AtenCall]`: the aten operators a forward dispatches;
- `reference_time(task, args, preset) -> ReferenceTime`: total and per-operator time;
- `calibrate(hw, cache) -> Calibration`: the vendor efficiencies of the formula classes.
"""

from sage.bench.reference.aten import AtenCall, TensorMeta, record_aten, record_forward
from sage.bench.reference.cache import ReferenceCache, default_cache
from sage.bench.reference.calibration import Calibration, calibrate
from sage.bench.reference.library_run import ReferenceModelError
from sage.bench.reference.model import OpTime, ReferenceTime, reference_time

__all__ = [
    "AtenCall", "Calibration", "OpTime", "ReferenceCache", "ReferenceModelError", "ReferenceTime",
    "TensorMeta", "calibrate", "default_cache", "record_aten", "record_forward", "reference_time",
]
