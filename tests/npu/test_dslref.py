"""docs/dsl.md is generated from the code and the preset, and its example runs."""

from pathlib import Path

import numpy as np

from sage.npu import ascendc
from sage.npu.dslref import EXAMPLE, render
from sage.npu.execute import run_kernel_source

REPO = Path(__file__).resolve().parents[2]


def test_committed_card_equals_the_generator_output():
    assert (REPO / "docs" / "dsl.md").read_text() == render(), \
        "docs/dsl.md is stale: run `.venv/bin/python -m sage.npu.dslref > docs/dsl.md`"


def test_card_covers_every_exported_name_and_stays_compact():
    card = render()
    missing = [n for n in ascendc.__all__ if n not in card]
    assert not missing, missing
    # compact: it goes into every prompt (2700 before the language, queue and core-type rules; 3600 before the
    # high-level APIs and the Atlas A2 legality rules; 3950 before the printf/DumpTensor section; 4100 before
    # the resource caps; 4200 before issue 27's MIX rules: GetBlockNum, SyncAll's span, PIPE_S, AllocTensor order)
    assert len(card.split()) <= 4300
    assert "5.9+2.07r" in card  # vadd from the preset


def test_the_example_in_the_card_is_correct():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(48 * 2048 * 2).astype(np.float16)
    y = rng.standard_normal(x.size).astype(np.float16)
    result = run_kernel_source(EXAMPLE, [x, y], filename="kernel_add.py")
    assert result.error is None
    np.testing.assert_array_equal(result.outputs[0], x + y)
    assert result.profile.bottleneck == "MTE2"
