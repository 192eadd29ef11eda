"""The import contracts of pyproject.toml ([tool.importlinter]): the layers cli > agent >
bench | memory | export > kernels > npu, and sage.kernels used through its public names. Checked
with import-linter on the real package; the layers contract is shown to catch a violation
on a throwaway package laid out with the same layers."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint(config: Path) -> bool:
    from importlinter.cli import lint_imports   # the public entry behind the `lint-imports` CLI

    return lint_imports(config_filename=str(config), no_cache=True, no_logo=True) == 0   # an exit code


def _layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return contract["layers"]


def test_the_package_keeps_its_layers(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert _lint(ROOT / "pyproject.toml"), "an import crosses the layers: run `lint-imports` for the offending chain"


def test_the_layer_order_is_the_designed_one():
    assert _layers() == ["sage.cli", "sage.agent", "sage.bench | sage.memory | sage.export", "sage.kernels", "sage.npu"]


@pytest.mark.parametrize("importer, imported, broken", [
    ("kernels", "bench", True),        # a lower layer reaching up
    ("npu", "kernels", True),
    ("bench", "memory", True),         # independent siblings
    ("export", "bench", True),
    ("bench", "kernels", False),       # downward: allowed
    ("agent", "npu", False),
])
def test_a_crossing_import_breaks_the_contract(tmp_path, monkeypatch, importer, imported, broken):
    pkg = tmp_path / "layered"
    for part in ("cli", "agent", "bench", "memory", "export", "kernels", "npu"):
        (pkg / part).mkdir(parents=True)
        (pkg / part / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / importer / "mod.py").write_text(f"import layered.{imported}\n")
    layers = [layer.replace("sage.", "layered.") for layer in _layers()]
    config = tmp_path / "layers.toml"
    config.write_text('[tool.importlinter]\nroot_package = "layered"\n\n[[tool.importlinter.contracts]]\n'
                      f'name = "layers"\ntype = "layers"\nlayers = {layers!r}\n'.replace("'", '"'))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert _lint(config) is not broken
