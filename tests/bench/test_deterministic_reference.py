"""The reference and the truth run with torch's deterministic algorithms: an index_put_ with
repeated indices (level1/19_index_put) then writes them in index order, the last one winning,
on every run; by default torch's CPU kernel writes them from several threads and the winner
changes from run to run (a correct kernel failed against its own reference by chance)."""

from __future__ import annotations

import numpy as np
import torch


class _Put(torch.nn.Module):
    def forward(self, x, i, v):
        return x.index_put_((i,), v)


def test_repeated_indices_land_in_index_order_in_the_reference_and_the_truth():
    from sage.bench.evaluate import reference_outputs, truth_outputs

    g = torch.Generator().manual_seed(0)
    x, i, v = torch.randn(7168, generator=g), torch.randint(0, 7168, (3584,), generator=g), torch.randn(3584, generator=g)
    serial = x.clone()
    for a, b in zip(i.tolist(), v.tolist()):                  # the op's definition: one write after another
        serial[a] = b
    threads = torch.get_num_threads()
    torch.set_num_threads(4)                                  # several writers, as on the judging machine
    try:
        for _ in range(4):
            (eager,) = reference_outputs(_Put(), [x, i, v])
            (truth,) = truth_outputs(_Put(), [x, i, v], 1)
            assert np.array_equal(eager, serial.numpy()) and np.array_equal(truth, serial.double().numpy())
    finally:
        torch.set_num_threads(threads)
    assert not torch.are_deterministic_algorithms_enabled()  # the setting is the caller's again
