"""The slice of the Delta log the emitter reads, on top of the shared reader (``icecompat_writer.deltalog``).

The emitter works commit by commit (one Iceberg snapshot per Delta version), so besides reconciled
states (``read_snapshot``, which also reads checkpoints) it needs each commit's raw actions in order.
Everything is kept in the log's JSON shape (``("add", {...})``) so a file that came from a checkpoint
and one that came from a commit look the same to the emitter.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from icecompat_writer.deltalog import list_versions, read_snapshot
from icecompat_writer.deltalog.actions import Metadata, Protocol
from icecompat_writer.deltalog.live_columns import LiveFiles
from icecompat_writer.deltalog.paths import DELTA_LOG_DIR, LogFileKind, commit_file_name, parse_log_file_name
from icecompat_writer.deltalog.snapshot import read_commit_bytes
from icecompat_writer.errors import TableReadError
from icecompat_writer.storage import FileIO, Location

__all__ = [
    "Commit",
    "DeltaState",
    "checksum_file_count",
    "commit_versions",
    "commit_versions_from",
    "iter_commits",
    "load_commit",
    "state_at",
]


@dataclass(frozen=True)
class Commit:
    """One Delta commit: its version, when it was made, its operation name and its actions in order."""

    version: int
    timestamp_ms: int
    operation: str | None
    actions: tuple[tuple[str, dict[str, Any]], ...]
    digest: str = ""
    """``sha256:<hex>`` of the commit file's bytes: the next sync checks that the log still holds this
    very commit before it trusts what it recorded about the versions up to it."""

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [obj for k, obj in self.actions if k == kind]

    @property
    def changes_table(self) -> bool:
        """Whether the commit sets a new protocol or metadata."""
        return any(k in ("protocol", "metaData") for k, _ in self.actions)


@dataclass
class DeltaState:
    """Protocol, metadata and live files at some version: kept as the snapshot reader's columns
    (:class:`~icecompat_writer.deltalog.live_columns.LiveFiles`), from which a conversion builds
    :class:`~icecompat_writer.deltalog.files.AddFile` objects a batch at a time."""

    version: int
    protocol: Protocol
    metadata: Metadata
    files: LiveFiles = field(default_factory=LiveFiles.empty)


def commit_versions(root: Location, *, io: FileIO) -> list[int]:
    """Versions with a commit file, ascending; TableReadError when there are none."""
    versions = list_versions(root, io=io)
    if not versions:
        raise TableReadError(f"not a Delta table: no commits in {root / '_delta_log'}")
    return versions


def commit_versions_from(
    root: Location, first: int, *, io: FileIO
) -> tuple[list[int], frozenset[int]]:
    """Versions ``>= first`` with a commit file, ascending, and those with a checksum file (``.crc``),
    from one listing of ``_delta_log`` that starts at ``first``
    (:meth:`~icecompat_writer.storage.FileIO.list_from`): the log's past is not listed.
    TableReadError when there is no log."""
    log_dir = root / DELTA_LOG_DIR
    try:
        listed = io.list_from(log_dir, f"{first - 1:020d}.~" if first > 0 else "")
    except FileNotFoundError:
        raise TableReadError(f"not a Delta table: {log_dir} does not exist") from None
    except NotADirectoryError:
        raise TableReadError(f"not a Delta table: {log_dir} is not a directory") from None
    except OSError as e:
        raise TableReadError(f"cannot list the Delta log {log_dir}: {e}") from e
    versions: list[int] = []
    checksums: set[int] = set()
    for entry in listed:
        parsed = parse_log_file_name(entry.location)
        if parsed is None or parsed.version < first:
            continue
        if parsed.kind is LogFileKind.COMMIT:
            versions.append(parsed.version)
        elif parsed.kind is LogFileKind.CHECKSUM:
            checksums.add(parsed.version)
    return sorted(versions), frozenset(checksums)


def checksum_file_count(root: Location, version: int, *, io: FileIO) -> int | None:
    """``numFiles`` of the version's checksum file (``<version>.crc``, which delta-spark writes with
    each commit: the live-file count of that version); None when it is missing or unreadable."""
    try:
        doc = json.loads(io.new_input(root / DELTA_LOG_DIR / f"{version:020d}.crc").read())
    except (OSError, ValueError, RecursionError):
        return None
    count = doc.get("numFiles") if isinstance(doc, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None


def load_commit(root: Location, version: int, *, io: FileIO) -> Commit:
    """One commit with its timestamp (in-commit timestamp, else commitInfo.timestamp, else file time)
    and the digest of its bytes.

    Strict: a missing commit or a damaged line raises TableReadError (a sync must not convert half of
    a commit)."""
    lines, data = read_commit_bytes(root, version, io=io)
    actions = [(str(k), v) for line in lines for k, v in line.items() if isinstance(v, dict)]
    info = next((obj for k, obj in actions if k == "commitInfo"), {})
    ts = info.get("inCommitTimestamp", info.get("timestamp"))
    if isinstance(ts, bool) or not isinstance(ts, int):
        ts = io.new_input(root / DELTA_LOG_DIR / commit_file_name(version)).mtime_ms()
    op = info.get("operation")
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    return Commit(version, int(ts), None if op is None else str(op), tuple(actions), digest)


def iter_commits(root: Location, start: int, end: int, *, io: FileIO) -> Iterator[Commit]:
    """Commits ``start..end`` inclusive, in order (TableReadError if one is missing)."""
    for version in range(start, end + 1):
        yield load_commit(root, version, io=io)


def state_at(root: Location, version: int, *, io: FileIO) -> DeltaState:
    """The reconciled table state at ``version`` (checkpoints are used where the log has them)."""
    snap = read_snapshot(root, version, io=io)
    return DeltaState(
        version=snap.version,
        protocol=snap.protocol,
        metadata=snap.metadata,
        files=snap.files,
    )
