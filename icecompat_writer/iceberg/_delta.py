"""The slice of the Delta log the emitter reads, on top of the shared reader (``icecompat_writer.deltalog``).

The emitter works commit by commit (one Iceberg snapshot per Delta version), so besides reconciled
states (``read_snapshot``, which also reads checkpoints) it needs each commit's raw actions in order.
Everything is kept in the log's JSON shape (``("add", {...})``) so a file that came from a checkpoint
and one that came from a commit look the same to the emitter.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from icecompat_writer.deltalog import list_versions, read_commit, read_snapshot
from icecompat_writer.deltalog.actions import Metadata, Protocol
from icecompat_writer.errors import TableReadError
from icecompat_writer.storage import DEFAULT_IO, FileIO, Location

__all__ = ["Commit", "DeltaState", "commit_versions", "iter_commits", "load_commit", "state_at"]


@dataclass(frozen=True)
class Commit:
    """One Delta commit: its version, when it was made, its operation name and its actions in order."""

    version: int
    timestamp_ms: int
    operation: str | None
    actions: tuple[tuple[str, dict[str, Any]], ...]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [obj for k, obj in self.actions if k == kind]

    @property
    def changes_table(self) -> bool:
        """Whether the commit sets a new protocol or metadata."""
        return any(k in ("protocol", "metaData") for k, _ in self.actions)


@dataclass
class DeltaState:
    """Protocol, metadata and live ``add`` objects (JSON shape, by path) at some version."""

    version: int
    protocol: Protocol
    metadata: Metadata
    adds: dict[str, dict[str, Any]] = field(default_factory=dict)


def commit_versions(root: Location, *, io: FileIO = DEFAULT_IO) -> list[int]:
    """Versions with a commit file, ascending; TableReadError when there are none."""
    versions = list_versions(root, io=io)
    if not versions:
        raise TableReadError(f"not a Delta table: no commits in {root / '_delta_log'}")
    return versions


def load_commit(root: Location, version: int, *, io: FileIO = DEFAULT_IO) -> Commit:
    """One commit with its timestamp (in-commit timestamp, else commitInfo.timestamp, else file time)."""
    actions: list[tuple[str, dict[str, Any]]] = []
    for line in read_commit(root, version, io=io):
        actions.extend((str(k), v) for k, v in line.items() if isinstance(v, dict))
    info = next((obj for k, obj in actions if k == "commitInfo"), {})
    ts = info.get("inCommitTimestamp", info.get("timestamp"))
    if isinstance(ts, bool) or not isinstance(ts, int):
        ts = io.new_input(root / "_delta_log" / f"{version:020d}.json").mtime_ms()
    op = info.get("operation")
    return Commit(version, int(ts), None if op is None else str(op), tuple(actions))


def iter_commits(root: Location, start: int, end: int, *, io: FileIO = DEFAULT_IO) -> Iterator[Commit]:
    """Commits ``start..end`` inclusive, in order (TableReadError if one is missing)."""
    for version in range(start, end + 1):
        yield load_commit(root, version, io=io)


def state_at(root: Location, version: int, *, io: FileIO = DEFAULT_IO) -> DeltaState:
    """The reconciled table state at ``version`` (checkpoints are used where the log has them)."""
    snap = read_snapshot(root, version, io=io)
    return DeltaState(
        version=snap.version,
        protocol=snap.protocol,
        metadata=snap.metadata,
        adds={a.path: a.to_json() for a in snap.add_files},
    )
