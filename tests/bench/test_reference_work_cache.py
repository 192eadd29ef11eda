"""The reference model's work caches return what computing the work anew returns."""

import pytest
import torch
from pydantic import ValidationError

from sage.bench.reference import work as work_mod
from sage.bench.reference.work import shared_work, work_of
from sage.kernels import TensorMeta, record_aten
from sage.npu.hardware import load_preset


class GeluChain(torch.nn.Module):
    def forward(self, a):
        return torch.nn.functional.gelu(a) * 2 + a


def _calls():
    return record_aten(GeluChain(), [torch.randn(64, 32)], include_free=False)


def _counting_formulas(monkeypatch) -> list:
    """Each formula of work.py counted when it runs; the content cache emptied first."""
    computed: list = []
    real = work_mod._FORMULAS.copy()
    monkeypatch.setattr(work_mod, "_FORMULAS", {k: (lambda f: lambda *a: computed.append(1) or f(*a))(f)
                                                for k, f in real.items()})
    monkeypatch.setattr(work_mod, "_BY_CONTENT", {})
    return computed


def test_shared_work_computes_each_call_once_and_hands_out_the_same_frozen_work(monkeypatch):
    hw = load_preset()
    calls = _calls()
    monkeypatch.setattr(work_mod, "_BY_CONTENT", {})
    fresh = [work_of(c, hw) for c in calls]
    computed = _counting_formulas(monkeypatch)
    with shared_work():
        first = [work_of(c, hw) for c in calls]
        with pytest.raises(ValidationError):
            first[0].bytes = -1.0                  # shared, so no caller may change it
        again = [work_of(c, hw) for c in calls]
    assert len(computed) == len(calls)
    assert again == fresh and first == fresh and again[0] is first[0]


def test_work_is_computed_once_per_distinct_call_whatever_the_call_object(monkeypatch):
    hw = load_preset()
    calls = _calls()
    computed = _counting_formulas(monkeypatch)
    first = [work_of(c, hw) for c in calls]
    assert len(computed) == len(calls)              # the three calls differ (gelu, mul, add)
    again = [work_of(c, hw) for c in _calls()]      # traced anew: other objects, the same content
    assert len(computed) == len(calls) and again == first
    # A call that differs in one figure (mul's scalar 2 made 3) is its own entry.
    changed = calls[1].model_copy(update={"scalars": [3]})
    assert work_mod.call_key(changed) != work_mod.call_key(calls[1])
    work_of(changed, hw)
    assert len(computed) == len(calls) + 1


def test_a_negative_zero_operand_is_not_the_positive_one():
    add = _calls()[2]
    a, b = (add.model_copy(update={"inputs": [add.inputs[0], TensorMeta(shape=(), dtype="float32", value=v)]})
            for v in (0.0, -0.0))
    assert work_mod.call_key(a) != work_mod.call_key(b)


def test_elementwise_passes_are_the_same_cached_or_not():
    calls = _calls()
    cached = [work_mod.elementwise_passes(c) for c in calls]
    work_mod._lowered_passes.cache_clear()
    assert [work_mod.elementwise_passes(c) for c in calls] == cached
    assert any(p is not None and p > 1 for p in cached)     # gelu's chain lowers to several passes


def test_the_content_cache_is_emptied_when_full_and_the_work_stays_the_same(monkeypatch):
    hw = load_preset()
    calls = _calls()
    monkeypatch.setattr(work_mod, "_BY_CONTENT", {})
    want = [work_of(c, hw) for c in calls]
    monkeypatch.setattr(work_mod, "_BY_CONTENT", {})
    monkeypatch.setattr(work_mod, "_BY_CONTENT_MAX", 2)
    got = [work_of(c, hw) for c in calls]
    assert len(work_mod._BY_CONTENT) == 1            # full at the third call: emptied, then it alone
    assert got == want
