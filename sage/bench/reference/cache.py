"""On-disk and in-memory cache of reference timings.

Keys are strings built by the caller from (kernel or op identity, shapes, dtypes, preset);
values are JSON objects. The file is `$SAGE_CACHE_DIR/reference.json`, by default
`~/.sage/cache/reference.json`. Several bench workers may write at once: each write takes
an exclusive lock, merges with what is on disk and replaces the file atomically, so no
worker loses another's entries and a reader never sees a half-written file.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from pathlib import Path
from typing import Any

CACHE_ENV = "SAGE_CACHE_DIR"


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".sage" / "cache"


class ReferenceCache:
    def __init__(self, path: Path | None = None):
        self.path = path or cache_dir() / "reference.json"
        self._mem: dict[str, Any] = {}
        self._loaded = False

    def _load_disk(self) -> dict[str, Any]:
        if not self.path.is_file():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            # A corrupt cache file is only lost work: timings are recomputed and rewritten.
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> Any | None:
        if key in self._mem:
            return self._mem[key]
        if not self._loaded:
            self._mem = {**self._load_disk(), **self._mem}
            self._loaded = True
        return self._mem.get(key)

    def put(self, key: str, value: Any) -> None:
        self._mem[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = self.path.with_suffix(".lock")
        with open(lock, "a") as lf:
            fcntl.flock(lf, fcntl.LOCK_EX)
            merged = self._load_disk()
            merged[key] = value
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".reference.", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(merged, fh)
            os.replace(tmp, self.path)
            fcntl.flock(lf, fcntl.LOCK_UN)


_DEFAULT: dict[Path, ReferenceCache] = {}


def default_cache() -> ReferenceCache:
    """One cache object per cache path in this process (tests switch SAGE_CACHE_DIR)."""
    path = cache_dir() / "reference.json"
    if path not in _DEFAULT:
        _DEFAULT[path] = ReferenceCache(path)
    return _DEFAULT[path]
