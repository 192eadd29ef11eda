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


def test_a_bench_run_stops_at_its_token_budget_and_resume_runs_the_rest(tmp_path):
    import json

    from tests.agent.conftest import TINY_RELU

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for name in ("a_relu", "b_relu", "c_relu"):
        (tasks / f"{name}.py").write_text(TINY_RELU)
    out = tmp_path / "run"
    env = {"OPENAI_API_KEY": "sk-test", "SAGE_MEMORY_URL": f"sqlite:///{tmp_path / 'm.db'}"}

    def bench(server, *extra):
        return CliRunner().invoke(app, ["bench", str(tasks), "--model", "m", "--base-url", server.base_url,
                                        "--iterations", "0", "--workers", "1", "--out", str(out), *extra], env=env)

    with FakeOpenAIServer() as server:
        # the first call reports 28,000 prompt tokens: no second call fits in 30,000
        server.reply("no kernel here", prompt_tokens=28000, completion_tokens=100)
        r = bench(server, "--max-tokens", "30000")
        assert len(server.requests) == 1
    assert r.exit_code == 0, r.output
    assert "2 task(s) not judged (run budget: token budget: 28100 of 30000" in " ".join(r.output.split())
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted((row["status"], row["final"]) for row in rows) == [
        ("no_kernel", True), ("not_judged", False), ("not_judged", False)]
    assert json.loads((out / "budget.json").read_text())["prompt_tokens"] == 28000

    with FakeOpenAIServer() as server:
        server.reply("still no kernel", prompt_tokens=10, completion_tokens=10)
        server.reply("still no kernel", prompt_tokens=10, completion_tokens=10)
        r = bench(server, "--resume", "--max-tokens", "1000000")
        assert len(server.requests) == 2                 # only the two tasks not judged before
    assert r.exit_code == 0, r.output
    assert "not judged" not in r.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sum(row["final"] for row in rows) == 3
    assert json.loads((out / "budget.json").read_text())["prompt_tokens"] == 20   # this invocation's spend
