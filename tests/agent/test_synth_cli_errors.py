"""`sage synth` input and endpoint errors: a clear message and exit code, never a traceback."""

from typer.testing import CliRunner

from sage.agent.fake_server import FakeOpenAIServer
from sage.cli import app


def _run(*args: str, env: dict | None = None):
    return CliRunner().invoke(app, ["synth", *args], env=env)


def test_unknown_operator(tmp_path):
    r = _run("--op", "sofmax", "--memory-url", f"sqlite:///{tmp_path / 'm.db'}")
    assert r.exit_code == 2 and "unknown operator 'sofmax'" in r.output and "softmax" in r.output
    assert "Traceback" not in r.output


def test_bad_memory_mode_and_case(tmp_path):
    r = _run("--op", "softmax", "--memory", "forever", "--memory-url", f"sqlite:///{tmp_path / 'm.db'}")
    assert r.exit_code == 2 and "--memory must be one of" in r.output
    r = _run("--op", "softmax", "--case", "7", "--memory-url", f"sqlite:///{tmp_path / 'm.db'}")
    assert r.exit_code == 2 and "case 7 does not exist" in r.output


def test_unreachable_endpoint(tmp_path):
    with FakeOpenAIServer() as server:
        url = server.base_url  # closed as soon as the block ends
    r = _run("--op", "relu", "--model", "m", "--base-url", url, "--memory-url", f"sqlite:///{tmp_path / 'm.db'}",
             env={"SAGE_LLM_RETRIES": "0"})
    assert r.exit_code == 1
    assert "cannot reach the LLM endpoint" in r.output and "Traceback" not in r.output


def test_endpoint_rejecting_the_model(tmp_path):
    with FakeOpenAIServer() as server:
        server.fail(404, "model 'nope' not found")
        r = _run("--op", "relu", "--model", "nope", "--base-url", server.base_url,
                 "--memory-url", f"sqlite:///{tmp_path / 'm.db'}")
    assert r.exit_code == 1 and "does not serve model 'nope'" in r.output
