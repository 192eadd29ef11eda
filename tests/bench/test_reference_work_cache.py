"""The reference model's work caches return what computing the work anew returns."""

import pytest
import torch
from pydantic import ValidationError

from sage.bench.reference import work as work_mod
from sage.bench.reference.work import shared_work, work_of
from sage.kernels import record_aten
from sage.npu.hardware import load_preset


class GeluChain(torch.nn.Module):
    def forward(self, a):
        return torch.nn.functional.gelu(a) * 2 + a


def _calls():
    return record_aten(GeluChain(), [torch.randn(64, 32)], include_free=False)


def test_shared_work_computes_each_call_once_and_hands_out_the_same_frozen_work(monkeypatch):
    hw = load_preset()
    calls = _calls()
    fresh = [work_of(c, hw) for c in calls]
    computed = []
    real = work_mod._FORMULAS.copy()
    monkeypatch.setattr(work_mod, "_FORMULAS", {k: (lambda f: lambda *a: computed.append(1) or f(*a))(f)
                                                for k, f in real.items()})
    with shared_work():
        first = [work_of(c, hw) for c in calls]
        with pytest.raises(ValidationError):
            first[0].bytes = -1.0                  # shared, so no caller may change it
        again = [work_of(c, hw) for c in calls]
    assert len(computed) == len(calls)
    assert again == fresh and first == fresh and again[0] is first[0]
    after = [work_of(c, hw) for c in calls]        # outside the block nothing is kept
    assert len(computed) == 2 * len(calls) and after == fresh


def test_elementwise_passes_are_the_same_cached_or_not():
    calls = _calls()
    cached = [work_mod.elementwise_passes(c) for c in calls]
    work_mod._lowered_passes.cache_clear()
    assert [work_mod.elementwise_passes(c) for c in calls] == cached
    assert any(p is not None and p > 1 for p in cached)     # gelu's chain lowers to several passes
