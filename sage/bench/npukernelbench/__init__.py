"""The npukernelbench operator suite: task files in level0..level4 and ops/ (plain single-operator tasks)."""

from pathlib import Path


def suite_root() -> Path:
    """The folder holding the suite's level folders and ``ops/``."""
    return Path(__file__).parent
