"""The final status of a synthesis names the best attempt's own error, never the repeat that
ended the loop."""

from tests.agent.test_loop_openai import _good_kernel

from sage.agent.answer import render_answer
from sage.agent.backends.openai_backend import OpenAIBackend, OpenAIConfig
from sage.agent.fake_server import FakeOpenAIServer
from sage.agent.loop import AgentConfig, synthesize
from sage.agent.records import Turn
from sage.agent.loop import _failure_reason


def test_a_repeated_broken_kernel_reports_the_kernels_error(tiny_task):
    broken = _good_kernel(tiny_task).replace("Relu(", "Relu_missing(", 1)
    bad_line = next(i for i, line in enumerate(broken.splitlines(), 1) if "Relu_missing(" in line)
    with FakeOpenAIServer() as server:
        server.reply(render_answer(broken, [], "first try"))
        server.reply(render_answer(broken, [], "the same again"))
        backend = OpenAIBackend(OpenAIConfig(model="fake", base_url=server.base_url), api_key="sk-test")
        result = synthesize(tiny_task, backend, None, AgentConfig(iterations=3, memory_mode="none"))
    assert [t.status for t in result.turns] == ["error", "repeat"]
    assert result.status == "error"
    assert "earlier attempt" not in result.reason
    assert result.reason.startswith(f"attempt 1: KernelRuntimeError (line {bad_line}): ")
    assert "Relu_missing" in result.reason


def test_a_wrong_kernel_outranks_a_later_crash():
    turns = [Turn(index=1, status="incorrect", message="output 0: 10 of 64 elements outside tolerance"),
             Turn(index=2, status="error", error_type="BoundsError", error_line=7, message="DataCopy out of range"),
             Turn(index=3, status="repeat", message="the same kernel as an earlier attempt")]
    assert _failure_reason(turns) == "attempt 1: output 0: 10 of 64 elements outside tolerance"
    assert _failure_reason(turns[1:]) == "attempt 2: BoundsError (line 7): DataCopy out of range"
    assert _failure_reason(turns[2:]) is None


def test_synth_shows_what_the_kept_kernel_printed(tiny_task, tmp_path, monkeypatch):
    import json

    from typer.testing import CliRunner

    from sage.cli import app

    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path / "cache"))
    lines = _good_kernel(tiny_task).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("def forward("))
    lines.insert(at + 1, '    printf("forward on %d element(s)\\n", 7)')   # host side: every case prints it
    chatty = "\n".join(lines) + "\n"
    args = ["synth", "--task", str(tiny_task.path), "--model", "fake", "--iterations", "0", "--memory", "none",
            "--memory-url", f"sqlite:///{tmp_path / 'm.db'}", "--out", str(tmp_path / "k.py")]
    for extra in (["--verbose"], ["--json"]):
        with FakeOpenAIServer() as server:
            server.reply(render_answer(chatty, [], "prints"))
            result = CliRunner().invoke(app, [*args, "--base-url", server.base_url, *extra],
                                        env={"OPENAI_API_KEY": "sk-test", "COLUMNS": "120"})
        assert result.exit_code == 0, result.output
        if extra == ["--verbose"]:
            assert "printed by the kernel on case 1:" in result.output
            assert "forward on 7 element(s)" in result.output
        else:
            payload = json.loads(result.stdout[result.stdout.index("{"):])
            assert payload["printed"] == {"0": "forward on 7 element(s)\n", "1": "forward on 7 element(s)\n"}
            assert payload["preset"] == "ascend910b2" and payload["seed"] == 0
