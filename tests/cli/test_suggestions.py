"""Every command that takes an operator name suggests the nearest ones."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage.cli import app

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.mark.parametrize("args, suggestion", [
    (["synth", "--op", "sofmax"], "softmax"),
    (["npu", "run", str(FIXTURES / "kernels" / "relu_correct.py"), "--op", "sofmax"], "softmax"),
    (["bench", "reference", "--op", "layer_nrom"], "layer_norm"),
    (["bench", "npukernelbench", "--ops", "layer_nrom"], "layer_norm"),
    (["bench", "npukernelbench", "--ops", "gelu,hardsigmod", "--reference-only"], "hardsigmoid"),
])
def test_a_typo_gets_the_nearest_names(args, suggestion, tmp_path):
    result = CliRunner().invoke(app, [*args, *(["--memory-url", f"sqlite:///{tmp_path / 'm.db'}"]
                                               if args[0] == "synth" else [])])
    assert result.exit_code == 2, result.output
    assert "did you mean" in result.output.lower() and suggestion in result.output
    assert "Traceback" not in result.output
