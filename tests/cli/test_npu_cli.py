"""`sage npu run` and `sage npu presets` through the real CLI app."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage.cli import app

FIXTURES = Path(__file__).parents[1] / "fixtures"
KERNELS = FIXTURES / "kernels"
RELU_TASK = FIXTURES / "tasks" / "relu.py"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _private_reference_cache(monkeypatch, tmp_path_factory):
    # The reference model caches timings on disk; tests keep theirs out of ~/.sage.
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "reference-cache"))


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_run_json_has_the_documented_fields(tmp_path):
    trace = tmp_path / "trace.json"
    result = invoke("npu", "run", KERNELS / "relu_correct.py", "--task", RELU_TASK, "--case", 1,
                    "--trace", trace, "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    for key in ("correct", "error", "cycles", "times", "pipes", "bottleneck", "roofline_fraction",
                "reference_times", "speedup"):
        assert key in payload
    for side in ("times", "reference_times"):       # the three times of each side (docs/evaluation.md)
        t = payload[side]
        assert set(t) == {"kernel_us", "device_us", "end_to_end_us"}
        assert 0 < t["kernel_us"] < t["device_us"] < t["end_to_end_us"]
    case = payload["cases"][0]
    assert case["times"]["end_to_end_us"] == pytest.approx(payload["times"]["end_to_end_us"])
    assert payload["speedup"] == pytest.approx(payload["reference_times"]["end_to_end_us"]
                                               / payload["times"]["end_to_end_us"])
    assert payload["correct"] is True and payload["error"] is None and payload["case"] == 1
    assert payload["cycles"] > 0 and payload["bottleneck"] in payload["pipes"]
    assert set(payload["pipes"]["V"]) == {"busy_cycles", "utilisation"}
    assert [c["index"] for c in payload["cases"]] == [1]
    events = json.loads(trace.read_text())["traceEvents"]
    assert events and all("ph" in e for e in events)


def test_run_reports_a_kernel_error_with_exit_1():
    result = invoke("npu", "run", KERNELS / "relu_alias.py", "--task", RELU_TASK, "--case", 0, "--json")
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["correct"] is False and payload["error"]["type"] == "OutputSpecError"
    assert set(payload["error"]) == {"type", "message", "line"}


def test_run_rich_output_shows_cases_and_profile():
    result = invoke("npu", "run", KERNELS / "relu_correct.py", "--task", RELU_TASK, "--case", 0)
    assert result.exit_code == 0, result.output
    assert "correct" in result.stdout and "bottleneck" in result.stdout and "MTE2" in result.stdout


def test_run_by_op_name():
    result = invoke("npu", "run", KERNELS / "relu_correct.py", "--op", "relu", "--case", 0, "--json")
    assert result.exit_code in (0, 1), result.output
    assert json.loads(result.stdout)["task"] == "relu"


@pytest.mark.parametrize("args, text", [
    (["npu", "run", "missing_kernel.py", "--op", "relu"], "no such kernel file"),
    (["npu", "run", str(KERNELS / "relu_correct.py")], "give exactly one of --task FILE or --op NAME"),
    (["npu", "run", str(KERNELS / "relu_correct.py"), "--op", "sofmax"], "Did you mean"),
    (["npu", "run", str(KERNELS / "relu_correct.py"), "--task", str(FIXTURES / "broken/syntax_error.py")],
     "syntax error at line 5"),
    (["npu", "run", str(KERNELS / "relu_correct.py"), "--task", str(FIXTURES / "broken/no_model.py")],
     "missing `Model`"),
    (["npu", "run", str(KERNELS / "relu_correct.py"), "--task", str(RELU_TASK), "--preset", "tpu9"],
     "unknown hardware preset"),
    (["npu", "run", str(KERNELS / "relu_correct.py"), "--task", str(RELU_TASK), "--case", "7"],
     "case 7 does not exist"),
    (["npu", "run", str(KERNELS / "relu_correct.py"), "--task",
      str(FIXTURES / "thirdparty/multikernelbench/npu_fused/rotary_mul.py")], "calls .npu()"),
])
def test_run_bad_input_exits_2_without_traceback(args, text):
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert text in result.output and "Traceback" not in result.output


def test_presets_json():
    result = invoke("npu", "presets", "--json")
    assert result.exit_code == 0
    names = [p["name"] for p in json.loads(result.stdout)]
    assert "ascend910b2" in names
    assert invoke("npu", "presets").exit_code == 0
