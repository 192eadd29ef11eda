"""The reference model's speed-ups change no figure: the same cases timed with every one of
them switched off (a fresh TensorMeta per operand, work computed per call, the cycle
collector on) give the same rows, to the last digit, as with them on, cold and warm."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from sage.bench import reference_run
from sage.bench.reference import cycles, model
from sage.bench.reference import work as work_mod
from sage.bench.reference_run import measure_reference
from sage.bench.tasks import load_task
from sage.kernels import record

LEVEL1 = Path(__file__).resolve().parents[2] / "sage" / "bench" / "npukernelbench" / "level1"
# Small cases of tasks that exercise the paths: a data-dependent Python loop of thousands of
# calls (nms on 301 boxes), a chain with folded constants (gelu), a norm, views and copies
# (cat), and a forward that needs real inputs (nonzero).
CASES = {"30_nms.py": [2], "01_gelu.py": [0, 1], "10_layer_norm.py": [0], "13_cat.py": [0], "22_nonzero.py": [0]}


class _NeverKept(dict):
    """A work cache that keeps nothing: every call's work is computed anew."""

    def __setitem__(self, key, value) -> None:
        return None


def _plain(monkeypatch) -> None:
    monkeypatch.setattr(work_mod, "_BY_CONTENT", _NeverKept())
    init = record._Recorder.__init__

    def no_interning(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.metas = None

    monkeypatch.setattr(record._Recorder, "__init__", no_interning)
    monkeypatch.setattr(model, "without_cycle_collection", contextlib.nullcontext)
    monkeypatch.setattr(reference_run, "without_cycle_collection", contextlib.nullcontext)


def _rows() -> dict[str, dict]:
    return {name: measure_reference(load_task(LEVEL1 / name, check_inputs=False, input_budget=None),
                                    "ascend910b2", cases).model_dump(mode="json")
            for name, cases in CASES.items()}


def test_the_optimised_reference_gives_the_plain_figures(monkeypatch):
    monkeypatch.setattr(work_mod, "_BY_CONTENT", {})
    cold = _rows()
    warm = _rows()                                   # every work now from the content cache
    assert len(work_mod._BY_CONTENT) > 0
    with monkeypatch.context() as plain_patch:
        _plain(plain_patch)
        plain = _rows()
        assert len(work_mod._BY_CONTENT) == 0        # the plain path kept nothing
    for name in CASES:
        assert plain[name]["status"] == "reference_ok", plain[name]
        assert all(c["total_us"] for c in plain[name]["cases"]), name
        assert cold[name] == plain[name], name
        assert warm[name] == plain[name], name
    nms = plain["30_nms.py"]["cases"][0]["breakdown"]["ops"]
    assert sum(op["calls"] for op in nms) > 300      # the loop ran: hundreds of launches to agree on


def test_the_collector_is_back_on_after_a_reference_even_when_it_raises():
    import gc

    assert gc.isenabled()
    with pytest.raises(RuntimeError), cycles.without_cycle_collection():
        assert not gc.isenabled()
        raise RuntimeError("the forward raised")
    assert gc.isenabled()
