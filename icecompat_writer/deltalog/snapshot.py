"""A table's state at one version, read from its log alone (no Spark, no JVM).

This is what the checker audits: protocol, metadata, the live files with what their AddFiles claim,
application transaction ids, metadata domains, and the findings met on the way. The typed result is
built from replay.py's reconciled actions; the live files stay columnar (:class:`~.live_columns.LiveFiles`)
and every live AddFile path is checked against the table root here, so a file outside the table is
reported once and never opened by anyone downstream.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from io import BytesIO
from types import MappingProxyType
from typing import Any

from icecompat_writer.errors import TableReadError
from icecompat_writer.storage import FileIO, Location

from .actions import Metadata, Protocol, TableState
from .files import AddFile
from .findings import FindingCode, LogFinding
from .live_columns import LiveFiles, build_live_files
from .paths import (
    DELTA_LOG_DIR,
    LogFileKind,
    commit_file_name,
    list_log_files,
    resolve_data_path,
    table_root_path,
)
from .replay import list_log, replay

__all__ = ["Snapshot", "list_versions", "read_commit", "read_commit_bytes", "read_snapshot"]


@dataclass(frozen=True)
class Snapshot:
    """The reconciled state of a Delta table at ``version``.

    ``files`` are the live logical files in log order (checkpoint first, then commits), kept as
    columns: a sequence of :class:`AddFile` that builds each object when it is asked for, with
    queries that need none (``missing_num_records()``, ``with_deletion_vectors()``, ...).
    ``add_files`` is the same as a tuple of AddFiles, built on first use. ``txns`` maps appId to the
    latest transaction version; ``domain_metadata`` maps each live domain to its configuration
    string. ``in_commit_timestamp`` is the ``inCommitTimestamp`` of this version's commitInfo, when
    the commit has one. ``checkpoint_version`` is the checkpoint replay started from (None: from
    version 0). ``findings`` lists the problems the reader met and survived. ``stats_lost`` holds the
    paths of live files whose statistics the log no longer has anywhere: the checkpoint dropped every
    file's statistics and the commit that added the file is gone (their footers know their counts).
    """

    table_root: Location
    version: int
    protocol: Protocol
    metadata: Metadata
    files: LiveFiles
    txns: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    domain_metadata: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    in_commit_timestamp: int | None = None
    commit_info: Mapping[str, Any] | None = None
    checkpoint_version: int | None = None
    findings: tuple[LogFinding, ...] = ()
    stats_lost: frozenset[str] = frozenset()
    io: FileIO = field(kw_only=True, compare=False, repr=False)
    """The FileIO the log was read with; whoever reads the table's data files or deletion vectors for
    this snapshot reads them with it."""

    @cached_property
    def add_files(self) -> tuple[AddFile, ...]:
        """Every live AddFile, in log order (built from ``files`` on first use)."""
        return self.files.to_tuple()

    @property
    def state(self) -> TableState:
        """Protocol and metadata as the planner and the rules take them."""
        return TableState(protocol=self.protocol, metadata=self.metadata, version=self.version)

    def data_path(self, add_file: AddFile) -> Location | None:
        """The file of ``add_file`` (local or object store), None when its path leaves the table root."""
        return resolve_data_path(self.table_root, add_file.path)

    def findings_of(self, code: FindingCode) -> list[LogFinding]:
        """The findings of one kind (reports group them by kind)."""
        return [f for f in self.findings if f.code is code]


def read_snapshot(
    table_root: str | Location, version: int | None = None, *, io: FileIO
) -> Snapshot:
    """Read the table at ``version`` (the latest when None) from its ``_delta_log``, through ``io``
    (kept in ``Snapshot.io`` for what reads the table's files next).

    Raises :class:`~icecompat_writer.errors.TableReadError` when there is no log, no commit, the
    version does not exist (or cannot be reconstructed), or the replay yields no protocol/metadata.
    Everything else the reader can survive is in ``Snapshot.findings``.
    """
    root = table_root_path(table_root)
    listing = list_log(root, io=io)
    result = replay(listing, version)
    findings = list(result.findings)
    if result.metadata is None or result.protocol is None:
        missing = " and ".join(
            n for n, v in (("protocol", result.protocol), ("metaData", result.metadata)) if v is None
        )
        detail = "; ".join(f.render() for f in findings[:5])
        raise TableReadError(
            f"cannot read {root} at version {result.version}: no {missing} action survived replay"
            + (f" ({detail})" if detail else "")
        )
    try:
        protocol = Protocol.from_json(result.protocol)
        metadata = Metadata.from_json(result.metadata)
    except ValueError as e:  # the actions' own shape checks (the message says it all); anything else
        # is a defect of the reader, not damage, and is raised as it is
        raise TableReadError(
            f"cannot read {root} at version {result.version}: malformed protocol/metadata: {e}"
        ) from None

    files, file_findings = build_live_files(result.files, result.raw_adds, str(root))
    findings.extend(file_findings)

    commit_info = result.commit_info
    ict = commit_info.get("inCommitTimestamp") if commit_info is not None else None
    if isinstance(ict, bool) or not isinstance(ict, int):
        ict = None
    return Snapshot(
        table_root=root,
        version=result.version,
        protocol=protocol,
        metadata=metadata,
        files=files,
        txns=MappingProxyType(dict(result.txns)),
        domain_metadata=MappingProxyType(dict(result.domains)),
        in_commit_timestamp=ict,
        commit_info=None if commit_info is None else MappingProxyType(commit_info),
        checkpoint_version=result.checkpoint_version,
        findings=tuple(findings),
        stats_lost=result.stats_lost,
        io=io,
    )


def list_versions(table_root: str | Location, *, io: FileIO) -> list[int]:
    """Versions that have a commit file in ``_delta_log``, ascending (TableReadError: no log).

    Versions that survive only in a checkpoint or a compaction file are not listed: this is the list
    of commits whose actions :func:`read_commit` can return.
    """
    root = table_root_path(table_root)
    listed = list_log_files(root / DELTA_LOG_DIR, io=io)
    return sorted(lf.version for lf in listed if lf.kind is LogFileKind.COMMIT)


def read_commit(table_root: str | Location, version: int, *, io: FileIO) -> list[dict[str, Any]]:
    """The actions of one commit exactly as written: one dict per line, e.g. ``{"add": {...}}``.

    Strict, unlike the snapshot reader: a missing commit or a damaged line raises TableReadError,
    because a caller asking for one commit (the writer checking a concurrent commit) must not act on
    half of it.
    """
    return read_commit_bytes(table_root, version, io=io)[0]


def read_commit_bytes(
    table_root: str | Location, version: int, *, io: FileIO
) -> tuple[list[dict[str, Any]], bytes]:
    """:func:`read_commit` and the commit file's bytes, read once (for a caller that also digests the
    file)."""
    root = table_root_path(table_root)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise TableReadError(f"invalid table version {version!r}")
    log_dir = root / DELTA_LOG_DIR
    if not io.remote and not io.is_directory(log_dir):  # asked only where asking is free
        raise TableReadError(f"not a Delta table: {log_dir} does not exist")
    path = log_dir / commit_file_name(version)
    try:
        data = io.new_input(path).read()
    except FileNotFoundError:
        raise TableReadError(f"commit {version} does not exist in {log_dir}") from None
    except OSError as e:
        raise TableReadError(f"cannot read commit {version} in {log_dir}: {e}") from e
    out: list[dict[str, Any]] = []
    for number, raw in enumerate(BytesIO(data), start=1):  # split after b"\n" only, as the log readers do
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError as e:
            raise TableReadError(f"commit {version} line {number} is not valid JSON: {e}") from e
        except RecursionError:
            raise TableReadError(f"commit {version} line {number} is JSON nested too deeply") from None
        if not isinstance(obj, dict):
            raise TableReadError(f"commit {version} line {number} is not a JSON object")
        out.append(obj)
    return out, data
