"""The running Spark session's Hadoop settings, as the storage layer receives them from the edge.

The storage layer reaches a bucket with exactly the credentials and endpoint Spark uses, yet it never
looks for a Spark session itself: it sits below the Spark adapter. The package entry
(``icecompat_writer/__init__.py``) installs a :class:`SettingsSource` that asks the adapter, and only
once the process has imported pyspark (the CLI and the checker never start one). A process that
installs no source (the guard's rule service, handed its settings with each request) reads none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

__all__ = ["SettingsSource", "hadoop_values", "install"]


class SettingsSource(Protocol):
    """What the driver's running session's Hadoop configuration holds (asked on every use: the
    storage layer keys what it caches by the values, never by a session's identity)."""

    def hadoop_values(self, keys: Sequence[str]) -> dict[str, str] | None:
        """The values the running session holds for ``keys`` (unset ones left out); None without one."""
        ...


_source: SettingsSource | None = None


def install(source: SettingsSource | None) -> SettingsSource | None:
    """Make ``source`` the one the storage layer asks; returns the one it replaces."""
    global _source
    before, _source = _source, source
    return before


def hadoop_values(keys: Sequence[str]) -> dict[str, str] | None:
    return None if _source is None else _source.hadoop_values(keys)
