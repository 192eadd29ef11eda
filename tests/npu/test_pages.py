"""GM images of 256 MB and more are made in 4 KB pages (sage/npu/pages.py); smaller arrays,
and everything after the block, keep numpy's huge-page setting."""

from __future__ import annotations

import numpy as np
import pytest

from sage.npu import pages


def _current() -> bool:
    state = pages._set_madvise(True)      # returns the setting it replaces
    pages._set_madvise(state)
    return bool(state)


@pytest.mark.skipif(pages._set_madvise is None, reason="this numpy has no madvise switch")
def test_only_large_arrays_are_made_in_small_pages_and_the_setting_comes_back():
    before = _current()
    with pages.pages_for(pages.SMALL_PAGES_FROM - 1):
        assert _current() == before
    with pages.pages_for(pages.SMALL_PAGES_FROM):
        assert _current() is False
    assert _current() == before
    with pytest.raises(ValueError), pages.pages_for(pages.SMALL_PAGES_FROM):
        raise ValueError("restored on the way out too")
    assert _current() == before
    assert np.empty(4).size == 4
