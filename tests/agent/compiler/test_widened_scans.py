"""An int64 cumsum of int32 values (torch promotes integer scans to int64) runs as the scan
library's int32 scan, widened at the store (sage.agent.compiler.rewrite.widened_scans)."""

from __future__ import annotations

import numpy as np
import pytest

from sage.agent.compiler.build import Unsupported


def test_an_int64_cumsum_of_int32_values_is_the_int32_scan_widened(compile_graph):
    # torch's int64 scan of int32 group sizes: the vector unit scans int32 and widens at the store
    _, run = compile_graph("n", "n.long().cumsum(0)", "torch.tensor([3, 0, 7, 1], dtype=torch.int32)")
    (out,) = run(np.array([5, 2, 0, 9], dtype=np.int32))
    assert out.dtype == np.int64 and out.tolist() == [5, 7, 7, 16]


def test_an_int64_cumsum_of_int64_values_stays_unsupported(compile_graph):
    with pytest.raises(Unsupported, match="int64 scan"):
        compile_graph("n", "n.cumsum(0)", "torch.tensor([3, 0, 7, 1], dtype=torch.int64)")
