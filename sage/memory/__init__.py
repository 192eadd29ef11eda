"""Experience memory: SQLAlchemy store, retrieval, adoption-traced utility (ATU), utility-gated consolidation (UGC).

Knows nothing of the simulator: it stores what the agent saw, tried and adopted.
"""

from sage.memory.consolidation import Abstractor, TemplateAbstractor
from sage.memory.episode import Episode
from sage.memory.errors import (
    EpisodeClosedError,
    ImportFormatError,
    MemoryStoreError,
    MemoryURLError,
    SchemaVersionError,
    UnknownItemError,
)
from sage.memory.models import (
    MODES,
    AdoptionResult,
    AttemptRecord,
    EpisodeRecord,
    EpisodeReport,
    ExperienceView,
    ItemDetail,
    MemoryConfig,
    MemoryStats,
    Mode,
    Outcome,
    RuleView,
)
from sage.memory.reward import episode_reward
from sage.memory.store import Memory
from sage.memory.tokens import count_tokens

__all__ = [
    "MODES", "Abstractor", "AdoptionResult", "AttemptRecord", "Episode", "EpisodeClosedError", "EpisodeRecord",
    "EpisodeReport", "ExperienceView",
    "ImportFormatError", "ItemDetail", "Memory", "MemoryConfig", "MemoryStats", "MemoryStoreError", "MemoryURLError",
    "Mode", "Outcome", "RuleView", "SchemaVersionError", "TemplateAbstractor", "UnknownItemError", "count_tokens",
    "episode_reward",
]
