"""The torch_npu stand-in: the time the vendor's eager execution of a reference takes.

See docs/reference-model.md. It records the forward with `sage.kernels.record_forward` and
times each call by its op registry entry. Public API:

- `reference_time(task, args, preset) -> ReferenceTime`: total and per-operator time;
- `calibrate(hw, cache) -> Calibration`: the vendor efficiencies of the formula classes.
"""

from sage.bench.reference.cache import ReferenceCache, default_cache
from sage.bench.reference.calibration import Calibration, calibrate
from sage.bench.reference.library_run import ReferenceModelError
from sage.bench.reference.model import OpTime, ReferenceTime, reference_time

__all__ = [
    "Calibration", "OpTime", "ReferenceCache", "ReferenceModelError", "ReferenceTime", "calibrate", "default_cache",
    "reference_time",
]
