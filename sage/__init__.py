"""sage: a command-line agent that writes Ascend-C-style NPU kernels."""

import numpy as _np

__version__ = "0.1.0"

# numpy asks the kernel for transparent huge pages on every large array (madvise); where the
# kernel then defragments memory synchronously (defrag=madvise, a machine whose memory many
# big processes fragment), a fresh 1 GB array took 0.1-5.6 s to fill, against a steady 0.55 s
# in 4 KB pages, and reading it is as fast either way. Evaluating a big case allocates several
# (GM images, outputs, float64 truths): small pages, as NUMPY_MADVISE_HUGEPAGE=0 would give.
_madvise = getattr(getattr(_np, "_core", None), "multiarray", None)
if hasattr(_madvise, "_set_madvise_hugepage"):
    _madvise._set_madvise_hugepage(False)
