"""The files of ``_delta_log`` as one listing, grouped for choosing the files of a version: commits,
compactions, and the complete checkpoints in order of preference (multi-part checkpoints with parts
missing kept apart, for their findings)."""

from __future__ import annotations

from dataclasses import dataclass, field

from icecompat_writer import storage
from icecompat_writer.storage import FileIO, Location

from .paths import (
    DELTA_LOG_DIR,
    LogFile,
    LogFileKind,
    list_log_entries,
)

__all__ = ["CheckpointCandidate", "LogListing", "list_log"]

# Order of preference among checkpoints of one version: V2 (UUID-named) first, multi-part last.
_KIND_RANK = {
    LogFileKind.UUID_CHECKPOINT: 0,
    LogFileKind.CLASSIC_CHECKPOINT: 1,
    LogFileKind.MULTIPART_CHECKPOINT: 2,
}


@dataclass(frozen=True)
class CheckpointCandidate:
    """One complete checkpoint: a single file, or every part of a multi-part checkpoint in order."""

    version: int
    kind: LogFileKind
    files: tuple[LogFile, ...]


@dataclass
class LogListing:
    """What ``_delta_log`` holds, grouped for segment selection."""

    table_root: Location
    log_dir: Location
    io: FileIO
    names: frozenset[str] = frozenset()
    commits: dict[int, LogFile] = field(default_factory=dict)
    compactions: dict[int, list[LogFile]] = field(default_factory=dict)
    checkpoints: list[CheckpointCandidate] = field(default_factory=list)
    incomplete_checkpoints: list[tuple[int, int, tuple[int, ...]]] = field(default_factory=list)

    def rel(self, path: Location) -> str:
        """``path`` relative to the table root, for findings."""
        rel = storage.relative_text(path, self.table_root)
        return str(path) if rel is None else rel

    @property
    def latest_version(self) -> int | None:
        """The newest version any file names (commit, complete checkpoint, compaction end)."""
        versions = list(self.commits)
        versions.extend(c.version for c in self.checkpoints)
        versions.extend(c.end_version for cs in self.compactions.values() for c in cs if c.end_version)
        return max(versions) if versions else None

    def version_exists(self, version: int) -> bool:
        """Whether ``version`` has a file of its own: its commit, a checkpoint, or a compaction end."""
        if version in self.commits or any(c.version == version for c in self.checkpoints):
            return True
        return any(c.end_version == version for cs in self.compactions.values() for c in cs)


def list_log(table_root: Location, *, io: FileIO) -> LogListing:
    """List and classify ``<table_root>/_delta_log`` (one listing through ``io``, which the listing
    keeps for every file the replay reads); TableReadError when there is no log."""
    log_dir = table_root / DELTA_LOG_DIR
    files, names = list_log_entries(log_dir, io=io)
    listing = LogListing(table_root=table_root, log_dir=log_dir, io=io, names=names)
    parts: dict[tuple[int, int], dict[int, LogFile]] = {}
    for lf in files:
        if lf.kind is LogFileKind.COMMIT:
            listing.commits[lf.version] = lf
        elif lf.kind is LogFileKind.COMPACTION:
            listing.compactions.setdefault(lf.version, []).append(lf)
        elif lf.kind is LogFileKind.MULTIPART_CHECKPOINT:
            assert lf.num_parts is not None and lf.part is not None
            parts.setdefault((lf.version, lf.num_parts), {})[lf.part] = lf
        elif lf.kind in (LogFileKind.CLASSIC_CHECKPOINT, LogFileKind.UUID_CHECKPOINT):
            listing.checkpoints.append(CheckpointCandidate(lf.version, lf.kind, (lf,)))
    for (version, num_parts), found in parts.items():
        if len(found) == num_parts:
            ordered = tuple(found[i] for i in range(1, num_parts + 1))
            listing.checkpoints.append(
                CheckpointCandidate(version, LogFileKind.MULTIPART_CHECKPOINT, ordered)
            )
        else:
            listing.incomplete_checkpoints.append((version, num_parts, tuple(sorted(found))))
    listing.checkpoints.sort(key=lambda c: (-c.version, _KIND_RANK[c.kind], c.files[0].name))
    return listing
