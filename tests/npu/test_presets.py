import re
from pathlib import Path

import pytest

from sage.npu.hardware import PRESET_DIR, load_preset, list_presets

REPO = Path(__file__).resolve().parents[2]


def test_three_presets_load():
    assert list_presets() == ["ascend910b2", "ascend910b4", "ascend910c"]
    spec = load_preset()
    assert spec.name == "ascend910b2"
    assert (spec.chip.aic_cores, spec.chip.aiv_cores, spec.chip.clock_mhz) == (24, 48, 1800)
    assert spec.buffers.ub_bytes == 196608 and spec.buffers.l0c_bytes == 131072
    assert spec.vector.costs["vadd"].b16 == (5.9, 2.07)
    assert load_preset("ascend910b4").chip.hbm_gbps == 800.0


def test_unknown_preset_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown hardware preset"):
        load_preset("nope")


@pytest.mark.parametrize("name", ["ascend910b2", "ascend910b4", "ascend910c"])
def test_configs_copy_equals_packaged_preset(name):
    assert (REPO / "configs" / f"{name}.toml").read_text() == (PRESET_DIR / f"{name}.toml").read_text()


@pytest.mark.parametrize("name", ["ascend910b2", "ascend910b4", "ascend910c"])
def test_every_number_cites_its_source(name):
    """Each line holding a number says where it comes from: a docs/hardware.md row, an estimate or an analogy."""
    for line in (PRESET_DIR / f"{name}.toml").read_text().splitlines():
        code = line.split("#", 1)[0]
        if re.search(r"=\s*[\[{]?\s*-?\d", code):
            comment = line.split("#", 1)[1] if "#" in line else ""
            assert re.search(r"HW |estimate|analogy", comment), f"{name}: no source for: {line}"


def test_load_by_path(tmp_path):
    path = tmp_path / "custom.toml"
    path.write_text((PRESET_DIR / "ascend910b2.toml").read_text().replace('name = "ascend910b2"', 'name = "custom"'))
    assert load_preset(str(path)).name == "custom"
