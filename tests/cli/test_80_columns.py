"""Every command at 80 columns (the width of a pipe): no line wider, no word split or cut.

Each command is rendered twice, at COLUMNS=80 and at a width where nothing needs to fold.
The wide render gives the words. In the narrow one, every word must be one of them, or a
piece of one that folds after `/`, `_`, `.`, `,` or `x` (`level4/08_weight_quant_` then
`batchmatmul`, never `..._batchmatm` then `ul`); a cut word (`corre…`, `ul`, a lone `,`) is
not. And no character of the wide render may be missing from the narrow one (nothing
truncated).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage.cli import app
from tests.agent.conftest import TINY_RELU

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parents[1] / "fixtures"
RELU_TASK = FIXTURES / "tasks" / "relu.py"
RELU_KERNEL = FIXTURES / "kernels" / "relu_correct.py"
BOX = re.compile(r"[\u2500-\u259f]")          # box drawing and block characters of the tables
ELAPSED = re.compile(r"\d+:\d\d:\d\d")
FOLDS = "/_.,("          # where a long word may fold; shapes (2x8x256) also after their x


def tokens(text: str) -> list[str]:
    # Elapsed times of the progress bar differ from run to run: not words of the render.
    return [t for t in BOX.sub(" ", text).split() if not ELAPSED.fullmatch(t)]


def fold_pieces(word: str) -> set[str]:
    """Every run of consecutive pieces of `word` split after a fold character."""
    folds = FOLDS + ("x" if re.fullmatch(r"\d+(x\d+)+", word) else "")
    parts = re.findall(rf"[^{re.escape(folds)}]*[{re.escape(folds)}]|[^{re.escape(folds)}]+$", word) or [word]
    return {"".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 1, len(parts) + 1)}


def assert_fits(narrow: str, wide: str, also: tuple[str, ...] = (), dropped: tuple[str, ...] = ()) -> None:
    """`also`: words the narrow layout adds on purpose; `dropped`: words it leaves out on purpose
    (the header of a column it shows another way)."""
    too_wide = [line for line in narrow.splitlines() if len(line.rstrip()) > 80]
    assert not too_wide, f"lines over 80 columns: {too_wide[:3]}"
    allowed = set()
    for word in [*tokens(wide), *also]:
        allowed |= fold_pieces(word)
    cut = [t for t in tokens(narrow) if t not in allowed]
    assert not cut, f"words split or cut at 80 columns: {cut[:10]}\n{narrow}"
    missing = Counter("".join(tokens(wide))) - Counter("".join(tokens(narrow))) - Counter("".join(dropped))
    assert not missing, f"characters lost at 80 columns: {dict(missing)}\n{narrow}"


def render(monkeypatch, cwd: Path, args: list, width: int, code: int = 0) -> str:
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": str(width)})
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result.output


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("eighty")
    (root / "tasks").mkdir()
    (root / "tasks" / "tiny_relu.py").write_text(TINY_RELU)
    (root / "kernels").mkdir()
    (root / "kernels" / "relu.py").write_text(RELU_KERNEL.read_text())
    for width in ("narrow", "wide"):
        (root / width).mkdir()
    return {"root": root, "task": root / "tasks" / "tiny_relu.py"}


@pytest.fixture(autouse=True)
def _private_home(monkeypatch, tmp_path_factory):
    home = tmp_path_factory.getbasetemp() / "home80"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "reference-cache"))


def both(monkeypatch, places, args: list, wide: int = 250, code: int = 0) -> tuple[str, str]:
    """The command at 80 columns and at `wide`, each run in its own folder (same relative paths)."""
    return (render(monkeypatch, places["root"] / "narrow", args, 80, code),
            render(monkeypatch, places["root"] / "wide", args, wide, code))


def test_synth_and_memory_commands(monkeypatch, places):
    results = {}
    for width, columns in (("narrow", 80), ("wide", 250)):
        memory = f"sqlite:///{places['root'] / width / 'memory.db'}"
        results[width] = render(monkeypatch, places["root"] / width,
                                ["synth", "--task", places["task"], "--memory-url", memory, "--iterations", 2],
                                columns, code=0)
    assert "tiny_relu_kernel.py" in results["narrow"]
    assert_fits(results["narrow"], results["wide"])

    memory = f"sqlite:///{places['root'] / 'narrow' / 'memory.db'}"
    for args in (["memory", "inspect"], ["memory", "inspect", "--rules"], ["memory", "show", "E1"],
                 ["memory", "stats"]):
        assert_fits(*both(monkeypatch, places, [*args, "--memory-url", memory]))


def test_bench_run_and_report(monkeypatch, places):
    args = ["bench", places["root"] / "tasks", "--kernels", places["root"] / "kernels", "--workers", 1,
            "--cases", 1, "--out", "run"]
    # The task has no kernel file of its own name: its row is "no kernel" (failed), the table still renders.
    assert_fits(*both(monkeypatch, places, args))
    narrow, wide = both(monkeypatch, places, ["bench", "report", "run"])
    assert_fits(narrow, wide)


def test_ops_list(monkeypatch, places):
    narrow, wide = both(monkeypatch, places, ["ops", "list", "--level", 4], wide=130)
    assert "batchmatmul" in narrow and "offline" in narrow
    assert_fits(narrow, wide)


def test_npu_run_and_presets(monkeypatch, places):
    assert_fits(*both(monkeypatch, places, ["npu", "run", RELU_KERNEL, "--task", RELU_TASK]))
    narrow, wide = both(monkeypatch, places, ["npu", "presets"])
    presets = json.loads(CliRunner().invoke(app, ["npu", "presets", "--json"]).stdout)
    # At 80 columns the descriptions follow the table ("name: description"), whole.
    assert_fits(narrow, wide, also=tuple(f"{p['name']}:" for p in presets), dropped=("description",))
    for preset in presets:
        assert f"{preset['name']}: {' '.join(preset['description'].split())}" in " ".join(tokens(narrow))


def test_bench_reference(monkeypatch, places):
    for op in ("layer_norm", "level2/25_masked_softmax_with_attention_dropout_backward"):
        assert_fits(*both(monkeypatch, places, ["bench", "reference", "--op", op]))


def test_the_check_catches_what_rich_did_before():
    """The check itself: the three defects of the issue fail it."""
    wide = "│ level4/08_weight_quant_batchmatmul │ correct │ a, b │"
    for narrow in ("│ level4/08_weight_quant_batchmatm │\n│ ul │", "│ corre… │", "│ a │\n│ , │\n│ b │"):
        with pytest.raises(AssertionError):
            assert_fits(narrow, wide)
    assert_fits("│ level4/08_weight_quant_ │ correct │\n│ batchmatmul │ a, b │", wide)
