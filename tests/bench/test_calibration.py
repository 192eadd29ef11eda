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


def test_fit_and_held_back_sets_are_disjoint_and_the_held_back_error_is_small(calibration, generated):
    _, _, rows = generated
    fit = [r for r in rows if r.figure.split == "fit"]
    held = [r for r in rows if r.figure.split == "held"]
    assert fit and held and len(fit) + len(held) == len(rows)
    s = calibration.summary(rows, "held")
    assert s["median"] <= 0.25


def test_every_miss_over_half_is_explained(generated):
    _, _, rows = generated
    for r in rows:
        if abs(r.error) > 0.5:
            assert len(r.figure.note) > 40, f"{r.figure.id} misses by {r.error:+.0%} without an explanation"
