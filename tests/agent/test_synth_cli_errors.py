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


def test_a_missing_key_is_said_at_once(tmp_path, monkeypatch):
    """The hosted endpoint with no OPENAI_API_KEY: one line naming the key and --model offline,
    before any request (no retries, no connection attempt), for synth and bench alike."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    memory = f"sqlite:///{tmp_path / 'm.db'}"
    for args in (["synth", "--op", "relu", "--model", "gpt-4.1", "--memory-url", memory],
                 ["bench", "npukernelbench", "--level", "0", "--model", "gpt-4.1", "--out", str(tmp_path / "run")]):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 2, r.output
        assert "OPENAI_API_KEY is not set" in r.stderr and "--model offline" in r.stderr
        assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run" / "results.jsonl").exists()
