"""Every command and every --help at 80 columns (the width of a pipe): no line wider, no
word cut, no identifier split.

Each command is rendered twice, at COLUMNS=80 and at a width where nothing needs to fold.
The wide render gives the words. In the narrow one, every word must be one of them, or a
piece of one that folds after `/`, `_`, `.`, `,` or `x`; a cut word (`corre…`, `ul`, a lone
`,`) is not. An identifier (a word with `_`, `/` or `.` inside: a task or operator name, a
file) must not fold at all unless it is longer than a line: `level1/23_repeat_` then
`interleave` cannot be copied. A path of several folders may fold after a `/` where it does
not fit its column. And no character of the wide render may be missing from the narrow one
(nothing truncated).
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
SECONDS = re.compile(r"\b\d+(\.\d+)? s\b")   # "in 1.5 s": a wall time, different in every render
FOLDS = "/_.,("          # where a long word may fold; shapes (2x8x256) also after their x


def tokens(text: str) -> list[str]:
    # Elapsed times (the progress bar's, a run's wall time) differ from run to run: not words of the render.
    return [t for t in SECONDS.sub("s", BOX.sub(" ", text)).split() if not ELAPSED.fullmatch(t)]


def fold_pieces(word: str) -> set[str]:
    """Every run of consecutive pieces of `word` split after a fold character."""
    folds = FOLDS + ("x" if re.fullmatch(r"\d+(x\d+)+", word) else "")
    parts = re.findall(rf"[^{re.escape(folds)}]*[{re.escape(folds)}]|[^{re.escape(folds)}]+$", word) or [word]
    return {"".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 1, len(parts) + 1)}


IDENTIFIER = re.compile(r"\w[\w.\-]*[_/.][\w.\-/]*\w")
LINE = 76                # an identifier longer than what a line can hold may fold (a long path)


def identifiers(text: str) -> set[str]:
    """Identifiers of a render: tokens with `_`, `/` or `.` between word characters (figures
    such as 1.23x and 0.67 are words of their own: they never fold either)."""
    found = {m.group(0) for t in tokens(text) for m in [IDENTIFIER.search(t)] if m}
    return {i for i in found if len(i) <= LINE and i.count("/") <= 1}


def assert_fits(narrow: str, wide: str, also: tuple[str, ...] = (), dropped: tuple[str, ...] = ()) -> None:
    """`also`: words the narrow layout adds on purpose; `dropped`: words it leaves out on purpose
    (the header of a column it shows another way)."""
    too_wide = [line for line in narrow.splitlines() if len(line.rstrip()) > 80]
    assert not too_wide, f"lines over 80 columns: {too_wide[:3]}"
    whole = " ".join(tokens(narrow))
    split = sorted(i for i in identifiers(wide) if i not in whole and not any(i in d for d in dropped))
    assert not split, f"identifiers split at 80 columns: {split[:10]}\n{narrow}"
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
                 ["memory", "stats"], ["memory", "export", "export.json"]):
        assert_fits(*both(monkeypatch, places, [*args, "--memory-url", memory]))
    for width in ("narrow", "wide"):
        (places["root"] / width / "export.json").write_text((places["root"] / "narrow" / "export.json").read_text())
    fresh = f"sqlite:///{places['root'] / 'imported.db'}"
    assert_fits(*both(monkeypatch, places, ["memory", "import", "export.json", "--replace", "--memory-url", fresh]))
    assert_fits(*both(monkeypatch, places, ["memory", "reset", "--yes", "--memory-url", fresh]))


def test_bench_run_and_report(monkeypatch, places):
    args = ["bench", places["root"] / "tasks", "--kernels", places["root"] / "kernels", "--workers", 1,
            "--cases", 1, "--out", "run"]
    # The task has no kernel file of its own name: its row is "no kernel" (failed), the table still renders.
    assert_fits(*both(monkeypatch, places, args))
    assert_fits(*both(monkeypatch, places, ["bench", places["root"] / "tasks", "--reference-only", "--workers", 1,
                                            "--out", "reference"]))
    narrow, wide = both(monkeypatch, places, ["bench", "report", "run"])
    assert_fits(narrow, wide)


def test_ops_list(monkeypatch, places):
    narrow, wide = both(monkeypatch, places, ["ops", "list"], wide=250)
    # The longest task name has a line to itself; every name can be copied whole.
    assert "level2/28_multimodal_rope_position_computation_with_grid_based_indexing\n" in narrow
    assert "level1/23_repeat_interleave" in tokens(narrow)
    assert_fits(narrow, wide, dropped=("description",) + tuple(_descriptions(wide)))


def _descriptions(wide: str) -> list[str]:
    """The description column's words: only a wide table has room for it (--json always has it)."""
    import sage.cli.ops  # noqa: F401 - the same entries the command lists

    result = CliRunner().invoke(app, ["ops", "list", "--no-plans", "--json"])
    return [w for e in json.loads(result.stdout) for w in e["description"].split()]


def all_commands() -> list[list[str]]:
    """Every command path of the CLI, the root and groups included."""
    import typer

    root = typer.main.get_command(app)
    found: list[list[str]] = []

    def walk(command, path: list[str]) -> None:
        found.append(path)
        if hasattr(command, "list_commands"):
            import click

            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), [*path, name])

    walk(root, [])
    return found


def test_every_help_fits_and_lists_no_completion_options(monkeypatch, places):
    commands = all_commands()
    assert ["bench", "reference"] in commands and ["memory", "import"] in commands
    for path in commands:
        narrow, wide = both(monkeypatch, places, [*path, "--help"])
        assert "--install-completion" not in narrow and "--show-completion" not in narrow, path
        assert "…" not in narrow and "Usage:" in narrow, path
        assert_fits(narrow, wide)


def test_npu_run_and_presets(monkeypatch, places):
    assert_fits(*both(monkeypatch, places, ["npu", "run", RELU_KERNEL, "--task", RELU_TASK]))
    broken = places["root"] / "broken_kernel.py"
    broken.write_text("from sage.npu.ascendc import *\n\ndef forward(x)\n    return x\n")
    narrow, wide = both(monkeypatch, places, ["npu", "run", broken, "--task", RELU_TASK], code=1)
    assert "KernelSyntaxError (line 3)" in narrow and "    def forward(x)\n" + " " * 18 + "^" in narrow
    assert_fits(narrow, wide)
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
    """The check itself: the defects of the issues fail it, a name split at its `_` too."""
    wide = "│ level4/08_weight_quant_batchmatmul │ correct │ a, b │"
    for narrow in ("│ level4/08_weight_quant_batchmatm │\n│ ul │", "│ corre… │", "│ a │\n│ , │\n│ b │",
                   "│ level4/08_weight_quant_ │ correct │\n│ batchmatmul │ a, b │"):
        with pytest.raises(AssertionError):
            assert_fits(narrow, wide)
    assert_fits("│ level4/08_weight_quant_batchmatmul │ correct │\n│ │ a, │\n│ │ b │", wide)
