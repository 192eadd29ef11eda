"""The byte-range race tracker: exact for few segments, bounded for many."""

from sage.npu.sim.races import RangeTracker

MTE2, V = 4, 1


def test_read_after_write_needs_the_writer_in_the_readers_clock():
    t = RangeTracker()
    t.record_write(0, 256, MTE2, 1)
    no_sync = [0] * 7
    synced = [0] * 7
    synced[MTE2] = 1
    assert t.conflict(0, 64, V, no_sync, write=False) == (MTE2, 1)
    assert t.conflict(0, 64, V, synced, write=False) is None
    assert t.conflict(256, 512, V, no_sync, write=False) is None  # other bytes


def test_partial_writes_keep_exact_ranges():
    t = RangeTracker()
    t.record_write(0, 128, MTE2, 1)
    t.record_write(128, 256, MTE2, 2)
    vc = [0] * 7
    vc[MTE2] = 1  # V knows the first copy finished, not the second
    assert t.conflict(0, 128, V, vc, write=False) is None
    assert t.conflict(64, 192, V, vc, write=False) == (MTE2, 2)


def test_write_after_read_is_checked():
    t = RangeTracker()
    t.record_read(0, 64, V, 3)
    assert t.conflict(0, 32, MTE2, [0] * 7, write=True) == (V, 3)


def test_scattered_writes_stay_bounded_and_conservative():
    t = RangeTracker()
    for i in range(20000):
        pos = (i * 7919) % 100000 * 4
        t.record_write(pos, pos + 4, 0, i + 1)
    assert len(t.starts) < 2100
    # every written byte is still covered by a writer the reader must be ordered after
    assert t.conflict(7919 * 4, 7919 * 4 + 4, V, [0] * 7, write=False) is not None
