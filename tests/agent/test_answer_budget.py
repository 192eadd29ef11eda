"""The per-answer output budget (issue 27): every request's max_tokens is `answer_max_tokens`
(setting, env, --answer-tokens), apart from the whole run's budget (--max-tokens), whose checks
price the next call at the per-answer figure."""

from __future__ import annotations

from typer.testing import CliRunner

from sage.agent.bench_solver import AgentSolver
from sage.agent.fake_server import FakeOpenAIServer
from sage.bench.runner import BenchConfig
from sage.cli import app
from sage.config import load_settings


def _synth(tmp_path, *args: str):
    return CliRunner().invoke(app, ["synth", "--op", "relu", "--memory-url", f"sqlite:///{tmp_path / 'm.db'}",
                                    "--memory", "none", "--iterations", "0", "--out", str(tmp_path / "k.py"), *args],
                              env={"OPENAI_API_KEY": "sk-test"})


def test_the_setting_defaults_to_16000_and_reads_the_environment(monkeypatch):
    monkeypatch.delenv("SAGE_ANSWER_MAX_TOKENS", raising=False)
    assert load_settings().answer_max_tokens == 16_000
    monkeypatch.setenv("SAGE_ANSWER_MAX_TOKENS", "9000")
    assert load_settings().answer_max_tokens == 9000
    assert load_settings(answer_max_tokens=1234).answer_max_tokens == 1234   # the flag wins


def test_synth_sends_the_answer_budget_as_every_requests_max_tokens(tmp_path):
    with FakeOpenAIServer() as server:
        server.reply("no kernel here")
        _synth(tmp_path, "--model", "m", "--base-url", server.base_url, "--answer-tokens", "1234")
        assert [r["max_tokens"] for r in server.requests] == [1234]
    with FakeOpenAIServer() as server:
        server.reply("no kernel here")
        _synth(tmp_path, "--model", "m", "--base-url", server.base_url)
        assert [r["max_tokens"] for r in server.requests] == [16_000]


def test_the_run_budget_prices_the_next_call_at_the_answer_budget(tmp_path):
    # The first prompt is estimated at about 11.5 K tokens: with a 16,000-token answer it cannot fit in
    # 20,000; with --answer-tokens 2000 it can, so the run's budget and the answer's are two figures.
    with FakeOpenAIServer() as server:
        r = _synth(tmp_path, "--model", "m", "--base-url", server.base_url, "--max-tokens", "20000")
        assert server.requests == []
    assert r.exit_code == 1 and "+ 16000 completion tokens" in " ".join(r.output.split())
    with FakeOpenAIServer() as server:
        server.reply("no kernel here")
        _synth(tmp_path, "--model", "m", "--base-url", server.base_url, "--max-tokens", "20000",
               "--answer-tokens", "2000")
        assert [r["max_tokens"] for r in server.requests] == [2000]


def test_bench_hands_the_answer_budget_to_the_solver(tmp_path, monkeypatch):
    monkeypatch.delenv("SAGE_ANSWER_MAX_TOKENS", raising=False)
    config = BenchConfig(target="npukernelbench", out=tmp_path)
    solver = AgentSolver.from_bench_config(config, memory_url="sqlite:///x.db", answer_max_tokens=3000)
    assert solver.answer_max_tokens == 3000
    assert AgentSolver.from_bench_config(config, memory_url="sqlite:///x.db").answer_max_tokens == 16_000


def test_help_names_both_budgets():
    for command in (["synth"], ["bench", "run"]):
        text = " ".join(CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"}).output.split())
        assert "--answer-tokens" in text and "completion limit of one LLM answer" in text
        assert "token budget of the whole run" in text
