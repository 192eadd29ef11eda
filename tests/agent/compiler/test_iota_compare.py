"""A row index (torch.arange over a tile's rows) compared with a scalar read from a tensor:
Compare works on whole 256 B repeats, so it reads the index buffer up to its row count
rounded up to 128 elements, and the buffer must hold that many (sage/kernels/library/
tile_layout.py, IOTA_PAD). With 36 rows the buffer held max(S, NR, NC) + 64 = 104 of the 128
read, a BoundsError on public level2/10 (swiglu_quant's group of each row) case 18."""

from __future__ import annotations

import numpy as np
import pytest
import torch


@pytest.mark.parametrize("rows, cols, start", [(36, 72, 5), (130, 40, 129), (7, 300, 0)])
def test_rows_from_a_start_read_from_a_tensor(compile_graph, rows, cols, start):
    compiled, run = compile_graph("x, g", "x * (torch.arange(x.shape[0]) >= g[0]).float().unsqueeze(1)",
                                  f"torch.randn({rows}, {cols}), torch.tensor([{start}], dtype=torch.int32)")
    assert "CompareScalar(mk, iota" in compiled.source      # the index compared on the vector unit
    x = torch.randn(rows, cols)
    g = torch.tensor([start], dtype=torch.int32)
    want = x.numpy() * (np.arange(rows) >= start)[:, None]
    np.testing.assert_array_equal(run(x.numpy(), g.numpy())[0], want)
