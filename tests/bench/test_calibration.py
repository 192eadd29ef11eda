"""docs/calibration.md and the fitted vendor parameters: in sync with the script, and honest."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def calibration():
    spec = importlib.util.spec_from_file_location("calibration_script", ROOT / "benchmarks" / "calibration.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod          # pydantic resolves the script's annotations through it
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def generated(calibration):
    return calibration.generate()


def test_doc_and_parameters_are_what_the_script_produces(calibration, generated):
    params, doc, _ = generated
    assert (ROOT / "docs" / "calibration.md").read_text(encoding="utf-8") == doc, \
        "docs/calibration.md is stale: run benchmarks/calibration.py"
    assert calibration.PARAMS_FILE.read_text(encoding="utf-8") == calibration.params_text(params), \
        "vendor_params.json is stale: run benchmarks/calibration.py"


def test_enough_public_figures_each_with_a_source(calibration):
    figures = calibration.read_figures()
    assert len(figures) >= 20
    assert all(f.source.url.startswith("https://") and f.measured_us > 0 for f in figures)
    assert len({f.id for f in figures}) == len(figures)


def test_a_source_is_on_one_side_and_every_group_with_held_figures_has_fit_figures(calibration, generated):
    _, _, rows = generated
    sides = {}
    for r in rows:
        sides.setdefault(r.figure.source.url, set()).add(r.figure.split)
    assert all(len(s) == 1 for s in sides.values())
    assert {"fit", "held"} <= set().union(*sides.values())
    fit_groups = {r.group for r in rows if r.figure.split == "fit"}
    assert {r.group for r in rows if r.figure.split == "held"} <= fit_groups


def test_leave_one_source_out_never_sees_the_source_it_predicts(calibration, generated):
    """Re-fit without one source, with that source's figures changed 10x: its LOSO predictions
    are the ones reported, and the doc reports their median."""
    import math
    from statistics import median

    from sage.npu.hardware import load_preset
    _, doc, rows = generated
    hw = load_preset(calibration.PRESET)
    src = "https://github.com/flagos-ai/FlagGems/pull/6014"
    posed = [calibration.pose(f, hw) for f in calibration.read_figures()]
    for p in posed:
        if p.figure.source.url == src:
            p.figure.measured_us *= 10.0        # must not matter: this source is left out
    others = calibration.fit([p for p in posed if p.figure.source.url != src], hw)
    for p, r in zip(posed, rows):
        if p.figure.source.url == src:
            assert r.loso_us == calibration.model_us(p, hw, others)
    loso = math.exp(median(r.loso_error for r in rows))
    assert f"| leave one source out (every figure) | " in doc and f"| {loso:.2f}× |" in doc


def test_every_miss_over_one_and_a_half_is_explained(calibration, generated):
    _, _, rows = generated
    for r in rows:
        if r.error > calibration.MISS:
            assert len(r.figure.note) > 40, f"{r.figure.id} misses by {r.model_us / r.figure.measured_us:.2f}x " \
                                           "without an explanation"
