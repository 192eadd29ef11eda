"""The library's hardware numbers come from the preset: a preset with half the UB gets
smaller tiles, one with fewer cores launches fewer blocks, by the documented sizing rule."""

from __future__ import annotations

import re
from pathlib import Path

from sage.kernels import ElementwiseSpec, Knobs, RowSpec, elementwise_source, inp, op, row_source, target_of
from sage.npu.hardware import PRESET_DIR, load_preset

ADD = ElementwiseSpec(expr=op("add", inp(0), inp(1)), in_dtypes=("float32", "float32"), kinds=("full", "full"),
                      out_dtype="float32")


def _constant(source: str, name: str) -> int:
    return int(re.search(rf"^{name} = (\d+)$", source, re.M).group(1))


def _preset_with(tmp_path: Path, old: str, new: str):
    text = (PRESET_DIR / "ascend910b2.toml").read_text()
    assert old in text
    path = tmp_path / "custom.toml"
    path.write_text(text.replace(old, new))
    return load_preset(str(path))


def test_tiles_fit_the_presets_ub(tmp_path):
    # float32 a + b, double-buffered: per tile element 2 x (4 + 4 + 4) B of queues and 4 B
    # for the result temp = 28 B; 9 buffers each keep 32 B of slack; 2 KiB reserved;
    # the tile is a multiple of 32 B / 4 B = 8 elements.
    knobs = Knobs(tile_len=65536)
    full = elementwise_source(ADD, knobs, target=target_of(load_preset("ascend910b2")))
    half = elementwise_source(ADD, knobs, target=target_of(_preset_with(tmp_path, "ub_bytes = 196608",
                                                                        "ub_bytes = 98304")))
    assert _constant(full, "TILE") == (196608 - 2048 - 9 * 32) // 28 // 8 * 8 == 6936
    assert _constant(half, "TILE") == (98304 - 2048 - 9 * 32) // 28 // 8 * 8 == 3424


def test_blocks_and_cores_follow_the_preset(tmp_path):
    b4 = target_of(load_preset("ascend910b4"))
    assert _constant(elementwise_source(ADD, target=b4), "CORES") == b4.vector_cores == 40
    wide = target_of(_preset_with(tmp_path, "ub_block_bytes = 32", "ub_block_bytes = 64"))
    source = elementwise_source(ADD, target=wide)
    assert _constant(source, "ALIGN") == 64 // 4
    assert "return (elems * size + 63) // 64 * 64" in source


def test_reduction_folds_to_one_vector_repeat(tmp_path):
    wide = target_of(_preset_with(tmp_path, "repeat_bytes = 256", "repeat_bytes = 512"))
    spec = RowSpec(op="sum", dtype="float32")
    assert ", 64)" in row_source(spec, Knobs(fold_reduce=True))        # 256 B of float32 lanes
    assert ", 128)" in row_source(spec, Knobs(fold_reduce=True), target=wide)
