"""`--model offline` is the offline synthesizer everywhere: no request leaves for an endpoint."""

import pytest
from typer.testing import CliRunner

from sage.agent.backends.offline import OfflineBackend
from sage.agent.factory import make_backend
from sage.agent.fake_server import FakeOpenAIServer
from sage.cli import app
from sage.config import load_settings
from tests.agent.conftest import TINY_RELU


@pytest.mark.parametrize("name", ["offline", "Offline", " offline "])
def test_the_model_name_offline_is_no_model(name):
    settings = load_settings(model=name)
    assert settings.model is None
    assert isinstance(make_backend(settings, task=None), OfflineBackend)


def test_the_factory_also_takes_it_from_a_solver(tiny_task):
    class Raw:  # what the bench solver hands make_backend: its own fields, not validated Settings
        model, base_url, preset, seed, search_budget = "offline", None, "ascend910b2", 0, 0
        temperature, answer_max_tokens, llm_timeout_s, llm_retries = 0.2, 100, 1.0, 0

    assert isinstance(make_backend(Raw(), tiny_task), OfflineBackend)


@pytest.mark.slow
def test_bench_with_model_offline_never_calls_the_endpoint(tmp_path, monkeypatch):
    from sage.bench.runner import read_rows

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "tiny_relu.py").write_text(TINY_RELU)
    with FakeOpenAIServer() as server:
        # Where an LLM call would go: the endpoint of the environment, scripted with nothing.
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path / "cache"))
        result = CliRunner().invoke(app, ["bench", str(tasks), "--model", "offline", "--cases", "1",
                                          "--iterations", "0", "--memory", "none", "--workers", "1",
                                          "--out", str(tmp_path / "run"), "--json"])
        requests = list(server.requests)
    assert result.exit_code == 0, result.output
    assert requests == []
    rows = read_rows(tmp_path / "run" / "results.jsonl")
    assert rows and {r.solver for r in rows} == {"agent:offline:none"}
    assert {r.extra.get("backend") for r in rows} == {"offline"}
    assert any(r.status == "correct" for r in rows)
