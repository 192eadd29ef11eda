"""The torch_npu stand-in: the time the vendor's eager execution of a reference takes.

See docs/reference-model.md. It traces the forward with `sage.kernels.trace_graph`, times
each eager kernel analytically from public torch_npu measurements (`vendor.py`, fitted by
`benchmarks/calibration.py`) and runs them through the eager timeline of `sage.npu.timeline`.
Public API:

- `reference_time(task, args, preset, expert=False) -> ReferenceTime`: end-to-end and device
  time, the split, per-operator rows, and (on request) the simulated expert library kernels;
- `essential_work(graph, hw)`: the essential-work roofline bound of a forward.
"""

from sage.bench.reference.cache import ReferenceCache, default_cache
from sage.bench.reference.essential import Essential, essential_work
from sage.bench.reference.library_run import ReferenceModelError
from sage.bench.reference.model import OpTime, ReferenceTime, reference_time

__all__ = [
    "Essential", "OpTime", "ReferenceCache", "ReferenceModelError", "ReferenceTime", "default_cache", "essential_work",
    "reference_time",
]
