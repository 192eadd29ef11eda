"""`sage synth` budget options: bad values are one-line errors; a bound or budget that cannot
pay for the first call stops before any request, with nothing written."""

from typer.testing import CliRunner

from sage.agent.fake_server import FakeOpenAIServer
from sage.cli import app


def _run(tmp_path, *args: str):
    return CliRunner().invoke(app, ["synth", "--op", "relu", "--memory-url", f"sqlite:///{tmp_path / 'm.db'}",
                                    "--out", str(tmp_path / "k.py"), *args], env={"OPENAI_API_KEY": "sk-test"})


def test_a_cost_budget_needs_prices(tmp_path):
    r = _run(tmp_path, "--max-cost", "1")
    assert r.exit_code == 2 and "--max-cost needs the model's --prices" in r.output
    r = _run(tmp_path, "--max-cost", "1", "--prices", "three")
    assert r.exit_code == 2 and "--prices:" in r.output and "Traceback" not in r.output


def test_a_prompt_bound_below_the_first_prompt_stops_before_any_request(tmp_path):
    with FakeOpenAIServer() as server:
        r = _run(tmp_path, "--model", "m", "--base-url", server.base_url, "--max-prompt-tokens", "500")
        assert server.requests == []
    assert r.exit_code == 2 and "the first prompt does not fit" in r.output and "over --max-prompt-tokens 500" in r.output
    assert not (tmp_path / "k.py").exists()


def test_a_token_budget_below_the_first_call_writes_nothing(tmp_path):
    with FakeOpenAIServer() as server:
        r = _run(tmp_path, "--model", "m", "--base-url", server.base_url, "--max-tokens", "1000")
        assert server.requests == []
    assert r.exit_code == 1 and "the run budget cannot pay for the first call" in r.output
    assert "nothing was written" in r.output and "Traceback" not in r.output
