"""User settings: defaults < sage.toml (project dir) or ~/.sage/config.toml < SAGE_* env vars < CLI flags.

No secret is ever stored here in a file we write: the OpenAI key is read from the
environment (OPENAI_API_KEY) by the backend, never persisted.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

OFFLINE_MODEL = "offline"   # `--model offline`: the built-in synthesizer, as leaving the model unset
OFFLINE_REFINEMENTS = 1     # default refinement turns per task of the offline agent
LLM_REFINEMENTS = 4         # ... and of an LLM
# One answer's completion limit (the `max_tokens` of every request). A strong model's MIX kernels
# were 14-19 K characters (about 4.8 K tokens, issue 27): 4096 cut them off, so the default leaves room
# for a long kernel and its plan; the whole run's budget is --max-tokens, apart from it.
ANSWER_MAX_TOKENS = 16_000


def sage_home() -> Path:
    """~/.sage of this process's HOME (read at each call: tests and users switch HOME)."""
    return Path.home() / ".sage"


def default_memory_url() -> str:
    return f"sqlite:///{sage_home() / 'memory.db'}"


def _config_files() -> list[Path]:
    """Later files win: the user's file, then the project's sage.toml."""
    return [p for p in (sage_home() / "config.toml", Path.cwd() / "sage.toml") if p.is_file()]


class _TomlSource(PydanticBaseSettingsSource):
    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for path in _config_files():
            with path.open("rb") as fh:
                data = tomllib.load(fh)
            merged.update(data.get("sage", data))
        return merged


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SAGE_", extra="ignore")

    preset: str = Field("ascend910b2", description="hardware preset name or path to a preset TOML")
    memory_url: str = Field(default_factory=default_memory_url, description="SQLAlchemy URL of the experience memory")
    memory_mode: str = Field("sage", description="none | uniform | atu | sage")
    model: str | None = Field(None, description="LLM model name; unset or 'offline' means the offline synthesizer")
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint (else OPENAI_BASE_URL)")
    temperature: float = 0.2
    answer_max_tokens: int = Field(ANSWER_MAX_TOKENS, ge=1, description="completion limit of every LLM request "
                                   "(one answer); the whole run's token budget is --max-tokens")
    llm_timeout_s: float = 120.0
    llm_retries: int = 4
    iterations: int | None = Field(None, ge=0, description="refinement turns after the first answer (unset: "
                                   f"{OFFLINE_REFINEMENTS} for the offline agent, {LLM_REFINEMENTS} with an LLM)")
    search_budget: int = Field(4, ge=0, description="simulator runs of the offline agent's schedule search per task")
    seed: int = 0
    runs_dir: Path = Path("runs")

    @property
    def refinements(self) -> int:
        """The refinement turns per task: as set, else the backend's default. The offline
        agent gets 2 evaluated attempts (issue 13: small enough that what memory brings
        shows); a model, which learns from feedback, gets 5."""
        if self.iterations is not None:
            return self.iterations
        return OFFLINE_REFINEMENTS if self.model is None else LLM_REFINEMENTS

    @field_validator("model")
    @classmethod
    def _offline_is_no_model(cls, value: str | None) -> str | None:
        # `--model offline` names the built-in synthesizer, not a model to ask an endpoint for.
        return None if value is not None and value.strip().lower() == OFFLINE_MODEL else value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _TomlSource(settings_cls))


def load_settings(**overrides: Any) -> Settings:
    """Settings with CLI-flag overrides applied (None means "flag not given")."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})
