"""What the memory keeps of an episode agrees with the kernel the episode kept.

Before, the last attempt's feedback never reached the offline reflection, so the "whole
schedule" lesson described the attempt before it: `memory show` said BUFFER_NUM 1 while the
kernel written to disk used 2.
"""

import json
import re

import pytest
from typer.testing import CliRunner

from sage.cli import app

pytestmark = pytest.mark.slow


def test_the_whole_schedule_lesson_is_the_kept_kernels(tmp_path, monkeypatch):
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path / "cache"))
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    kernel = tmp_path / "softmax_kernel.py"
    result = CliRunner().invoke(app, ["synth", "--op", "softmax", "--case", "1", "--memory-url", url,
                                      "--out", str(kernel), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout[result.stdout.index("{"):])
    assert payload["status"] == "correct"
    source = kernel.read_text()
    # The values the kept kernel's code runs with (independent of how the lesson is worded).
    # (BUFFER_NUM_k<n>: a shape-generic file's kernel n; BUFFER_NUM_v<n>[g<m>]: a per-case variant's)
    buffers = {int(n) for n in re.findall(r"^BUFFER_NUM_(?:k\d+|v\d+(?:g\d+)?) = (\d+)$", source, re.M)}
    assert len(buffers) == 1
    (buffer_num,) = buffers

    shown = CliRunner().invoke(app, ["memory", "inspect", "--json", "--memory-url", url])
    schedule = [e for e in json.loads(shown.stdout)["experiences"] if e["title"].startswith("Whole schedule")]
    assert schedule, "a refined kernel that beat the first one is remembered as a whole schedule"
    lesson = schedule[0]
    assert lesson["hints"]["buffer_num"] == buffer_num
    assert f"BUFFER_NUM {buffer_num}" in lesson["advice"]
    assert lesson["operators"] == 1 and lesson["adopted_on"] == 0   # learned on softmax, not adopted yet

    text = CliRunner().invoke(app, ["memory", "show", lesson["id"], "--memory-url", url], env={"COLUMNS": "200"})
    assert f"BUFFER_NUM {buffer_num}" in text.stdout and "learned on softmax" in text.stdout
