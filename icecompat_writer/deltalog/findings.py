"""Problems met while reading a Delta log that the reader survived.

A checker must report on damaged tables rather than stop at the first broken line, so the reader keeps
going wherever the protocol leaves a sound way forward (skip a corrupt line, fall back to an older
checkpoint, use a compaction file for a missing commit) and records what it met as a
:class:`LogFinding`. Whatever makes a snapshot impossible (no log, no metadata, an unknown version)
is a :class:`~icecompat_writer.errors.TableReadError` instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from icecompat_writer.compat import StrEnum

__all__ = ["FindingCode", "LogFinding"]


class FindingCode(StrEnum):
    """Kinds of findings; the string values are stable identifiers for reports."""

    CORRUPT_LINE = "corrupt_line"
    """A line of a JSON log file is not a JSON object (truncated write, garbage)."""
    INVALID_ACTION = "invalid_action"
    """A well-formed JSON action lacks what the protocol requires (e.g. an ``add`` without ``path``)."""
    MISSING_COMMIT = "missing_commit"
    """A commit between the checkpoint used and the snapshot version is absent and nothing covers it."""
    UNREADABLE_FILE = "unreadable_file"
    """A log file listed in ``_delta_log`` could not be opened or read."""
    INCOMPLETE_CHECKPOINT = "incomplete_checkpoint"
    """A multi-part checkpoint with missing parts; skipped as the protocol requires."""
    UNREADABLE_CHECKPOINT = "unreadable_checkpoint"
    """A checkpoint that could not be read; an older checkpoint or the commits were used instead."""
    UNREADABLE_SIDECAR = "unreadable_sidecar"
    """A sidecar a V2 checkpoint references is missing or unreadable."""
    INVALID_CHECKPOINT = "invalid_checkpoint"
    """A checkpoint breaking a rule of its spec (e.g. a UUID-named one without checkpointMetadata)."""
    STALE_LAST_CHECKPOINT = "stale_last_checkpoint"
    """``_last_checkpoint`` names a checkpoint that does not exist (complete) in the listing."""
    UNREADABLE_LAST_CHECKPOINT = "unreadable_last_checkpoint"
    """``_last_checkpoint`` is not valid JSON / not an object with a version."""
    DAMAGED_COMPACTION = "damaged_compaction"
    """A log compaction file had corrupt lines; the commits it covers were used instead."""
    PATH_OUTSIDE_TABLE = "path_outside_table"
    """A live AddFile path (or its deletion vector path) resolves outside the table root."""
    UNPARSEABLE_STATS = "unparseable_stats"
    """An AddFile's ``stats`` is not a JSON object; ``num_records`` is unknown."""
    STATS_FROM_COMMITS = "stats_from_commits"
    """The checkpoint used keeps no statistics for some live files; they were read from the commits
    that added them (a table with both ``delta.checkpoint.writeStatsAs*`` properties false)."""
    CATALOG_MANAGED = "catalog_managed"
    """The table is catalog-managed: recent commits may exist only in its catalog."""


@dataclass(frozen=True)
class LogFinding:
    """One problem met while reading the log.

    ``file`` is the affected file's path relative to the table root (e.g.
    ``_delta_log/00000000000000000003.json``) when there is one; ``line`` is 1-based.
    """

    code: FindingCode
    message: str
    file: str | None = None
    line: int | None = None

    def render(self) -> str:
        where = ""
        if self.file is not None:
            where = f" ({self.file}" + (f", line {self.line}" if self.line is not None else "") + ")"
        return f"{self.code.value}: {self.message}{where}"
