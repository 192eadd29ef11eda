"""Errors the memory raises on bad input; the CLI turns each into a one-line message."""

from __future__ import annotations


class MemoryStoreError(Exception):
    """Base class (not `MemoryError`, which is Python's out-of-memory error)."""


class MemoryURLError(MemoryStoreError):
    """The memory URL cannot be parsed, names an unknown driver, or the database cannot be opened."""


class SchemaVersionError(MemoryStoreError):
    """The database was written by a newer sage, or is not a sage memory at all."""


class UnknownItemError(MemoryStoreError):
    """An id such as "E12" or "R3" that is malformed or not in the memory."""


class ImportFormatError(MemoryStoreError):
    """An import file that is not a valid sage memory export."""


class EpisodeClosedError(MemoryStoreError):
    """An episode was used after finish()."""
