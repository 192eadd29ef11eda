"""A thrown-away launch try leaves nothing behind (sage/npu/sim/tries.py)."""

from __future__ import annotations

import numpy as np
import pytest

from sage.npu.sim import tries
from sage.npu.sim.lanes import NotLaneable
from sage.npu.sim.session import GmBuffer


def test_undo_puts_back_every_byte_oldest_value_last():
    data = np.arange(16, dtype=np.float32)
    buf = GmBuffer(0, data, 0, False)
    undo = tries.GmUndo()
    undo.save(buf, 8, 24)             # elements 2..5
    data[2:6] = -1
    undo.save(buf, 16, 40)            # elements 4..9, after the first write
    data[4:10] = -2
    undo.save(buf, 60, 80)            # past the end: clipped to the allocation
    data[15] = -3
    undo.restore()
    assert np.array_equal(data, np.arange(16, dtype=np.float32))
    assert undo.saved == []


def test_undo_of_strided_bursts_saves_and_puts_back_only_the_bursts():
    data = np.arange(64, dtype=np.float32)                # 8 rows of 8
    buf = GmBuffer(0, data, 0, False)
    undo = tries.GmUndo()
    undo.save_bursts(buf, 8, 8, 32, 8)                     # column stripe: elements 2..3 of each row
    data.reshape(8, 8)[:, 2:4] = -1
    undo.save_bursts(buf, 4, 8, 32, 8)                     # elements 1..2 of each row, after the first write
    data.reshape(8, 8)[:, 1:3] = -2
    assert sum(old.size for _, _, old in undo.saved) == 2 * 8 * 8    # the bursts' bytes, not the 232-byte spans
    undo.restore()
    assert np.array_equal(data, np.arange(64, dtype=np.float32))


def test_undo_keeps_one_copy_of_a_range_written_again_and_again():
    data = np.arange(1024, dtype=np.float32)
    buf = GmBuffer(0, data, 0, False)
    undo = tries.GmUndo()
    for k in range(100):
        undo.save(buf, 0, 4096)
        data[:] = k
    assert len(undo.saved) == 1
    undo.restore()
    assert np.array_equal(data, np.arange(1024, dtype=np.float32))


def test_undo_saves_an_allocation_whole_once_its_pieces_would_cost_more():
    """Strided spans that add up past the allocation's size: one whole copy replaces further
    saves, and the pieces saved before it still put back what was overwritten before it."""
    data = np.arange(64, dtype=np.float32)
    buf = GmBuffer(0, data, 0, False)
    undo = tries.GmUndo()
    for k, lo in enumerate(range(0, 256, 48)):   # overlapping 96-byte spans: 2 before the whole copy
        undo.save(buf, lo, lo + 96)
        data[lo // 4:(lo + 96) // 4] = -1 - k
    pieces = [old.size for _, _, old in undo.saved]
    assert pieces[:2] == [96, 96] and pieces[-1] == 256 and len(pieces) == 3
    undo.restore()
    assert np.array_equal(data, np.arange(64, dtype=np.float32))
    assert undo.saved == [] and not undo.whole


class K:
    pass


def test_preexisting_reaches_what_kernel_code_can_change():
    inner = [1]
    table = {"a": inner}
    obj = K()
    obj.items = [2]
    K.shared = [3]
    glob: dict = {}

    def helper(acc=[4]):  # noqa: B006 - a function of this module, not the kernel's: not walked
        return acc
    roots = (table, obj, (5, [6]), K, helper)
    found = tries.preexisting(roots, glob, {K}, (), set())
    assert {id(table), id(inner), id(obj), id(obj.items), id(K), id(K.shared)} <= found
    assert id(helper.__defaults__[0]) not in found


def test_preexisting_gives_up_on_state_no_guard_sees():
    lst = [1, 2]
    assert tries.preexisting([iter(lst)], {}, set(), (), set()) is None
    assert tries.preexisting([lst.append], {}, set(), (), set()) is None


def test_a_frozen_object_may_not_change():
    kept, fresh = [1], [2]
    tries.freeze({id(kept)})
    try:
        with pytest.raises(NotLaneable):
            tries.check_change(kept)
        tries.check_change(fresh)
    finally:
        tries.freeze(None)
    tries.check_change(kept)
