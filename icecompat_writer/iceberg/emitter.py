"""Iceberg metadata written next to a Delta log, pointing at the same Parquet files.

One Iceberg snapshot per Delta version, written by the snapshot producer for that kind of commit
(:mod:`.producers`: append, delete, overwrite, replace, metadata-only). The Iceberg sequence number of a
snapshot is its Delta version, so Iceberg's ``_last_updated_sequence_number`` and Delta's row commit
version are the same number.

Conversion is incremental: the metadata records the last converted Delta version in the table property
``icecompat.delta-version``, and a later run adds snapshots on top of the current one, writing
``v<N+1>.metadata.json``. What was verified travels with it (:mod:`.verification`), so a later run reads
only what the new commits add. Nothing under the table root other than ``metadata/`` is written, and no
data file is touched.

A run is a few named steps: find the current metadata file (:func:`.start.current_metadata`); for a first
run, find where conversion starts (:func:`.start.first_version`); for a later one, read only the commits
after the converted version and what the previous run recorded (:func:`_sync_from_record`: the sync
after a commit costs what the commit costs), or, when that record cannot stand in for the log, adopt
the existing metadata against the replayed snapshot (:func:`_adopt`), catching up in one snapshot when
the commits to continue from were cleaned up (:func:`_catch_up`); verify what the new commits add;
then, in one :class:`.transaction.Transaction`, produce each Delta version's snapshot
(:func:`_produce`) and apply it, record what the next run needs (:func:`_record`), and commit the next
metadata file.
Every file under ``metadata/`` is listed, read, written and deleted through one
:class:`~icecompat_writer.storage.FileIO` (the ``io`` argument).

Layout of the package: :mod:`.metadata` (typed table metadata and its update records), :mod:`.table`
(the table being brought up to date, Delta adds to ``data_file`` records), :mod:`.producers` (one
snapshot producer per commit kind, returning its changes, and the place delete files enter),
:mod:`.transaction` (changes applied in order, one commit or an abort), :mod:`.deletes` (Delta
deletion vectors as Iceberg v3 deletion vectors in Puffin files, :mod:`.puffin`, or as v2
position-delete files, :mod:`.posdeletes`), :mod:`.manifests`
(manifests, manifest lists, live files), :mod:`.verification` (the gate and its record),
:mod:`.locations` (URIs and root confinement).
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from icecompat_writer.deltalog import Snapshot as DeltaSnapshot
from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.deltalog.actions import Metadata, Protocol
from icecompat_writer.deltalog.paths import table_root_path
from icecompat_writer.errors import IcebergSyncWarning, TableReadError, Violation
from icecompat_writer.storage import FileIO, Location, io_for

from . import _delta
from .checks import requested_format_version
from .deletes import deletion_vector_files
from .metadata import (
    METADATA_DIR,
    PROP_DELTA_COMMIT,
    PROP_DELTA_STATE,
    PROP_DELTA_TABLE_ID,
    PROP_DELTA_VERSION,
    PROP_NAME_MAPPING,
    SetProperties,
    TableMetadata,
)
from .producers import SnapshotChanges, producer_for
from .schema import violation
from .start import current_metadata, first_version
from .table import IcebergTable, SnapshotInfo, refuse
from .transaction import Transaction
from .verification import (
    PROP_VERIFIED_RULES,
    Verified,
    record_problem,
    record_update,
    rules_key,
    verify_commits,
    verify_full,
    verify_since,
)

__all__ = [
    "METADATA_DIR",
    "PROP_DELTA_COMMIT",
    "PROP_DELTA_STATE",
    "PROP_DELTA_TABLE_ID",
    "PROP_DELTA_VERSION",
    "PROP_NAME_MAPPING",
    "IcebergResult",
    "SnapshotInfo",
    "write_iceberg_metadata",
]


@dataclass(frozen=True)
class IcebergResult:
    """What a run of :func:`write_iceberg_metadata` left behind.

    ``written`` is False when the Iceberg metadata was already up to date with the Delta log; then
    ``snapshots`` is empty and ``metadata_path`` is the existing current metadata file.
    ``verification`` says how the Delta version was verified (``full`` or ``incremental``, with the
    reason a full check ran) and ``footers_read`` how many data file footers that took.
    """

    table_root: Location
    metadata_path: Location
    metadata_version: int
    format_version: int
    delta_version: int
    snapshots: tuple[SnapshotInfo, ...]
    written: bool
    verification: str = ""
    footers_read: int = 0

    def summary(self) -> str:
        """A few human-readable lines for the command line."""
        if not self.written:
            return f"Iceberg metadata already at Delta version {self.delta_version}: {self.metadata_path}"
        lines = [
            f"wrote {self.metadata_path} (Iceberg format v{self.format_version}, "
            f"{len(self.snapshots)} new snapshot(s), up to Delta version {self.delta_version})"
        ]
        for s in self.snapshots:
            lines.append(
                f"  Delta v{s.delta_version} -> snapshot {s.snapshot_id} ({s.operation}, "
                f"+{s.added_files}/-{s.deleted_files} files)"
            )
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------


def write_iceberg_metadata(
    table_root: str | os.PathLike[str], format_version: int | None = None, *, io: FileIO | None = None
) -> IcebergResult:
    """Write (or bring up to date) Iceberg metadata for the Delta table at ``table_root``.

    ``format_version`` is 2 or 3; by default the table property ``icecompat.iceberg.format-version``
    chooses it, else an existing Iceberg tree keeps its version and a new one is v3 for IcebergCompatV3
    tables, v2 otherwise. An existing tree is never re-versioned: a format (asked for or by the
    property) other than its own is refused. ``io``: the FileIO every file is listed, read, written
    and deleted with (None: :func:`~icecompat_writer.storage.io_for` the table's root, with the
    running session's store settings, else the environment's). Raises
    :class:`CompatViolation` when the table is not compliant with the rules it is held to (the
    catalog's rule ids for its declared profile, see :mod:`.checks`) or cannot be converted faithfully
    (``ICEBERG-EMIT-*``), :class:`TableReadError` when the log cannot be read,
    :class:`ConcurrentWriteError` when another run committed first.
    """
    if format_version is not None and format_version not in (2, 3):
        raise ValueError(f"format_version must be 2 or 3, not {format_version!r}")
    root = table_root_path(os.fspath(table_root))
    if io is None:
        io = io_for(root)
    previous = current_metadata(root, io)
    if previous is None:
        versions = _delta.commit_versions(root, io=io)
        return _first_conversion(root, versions[-1], format_version, io)
    raw = json.loads(io.new_input(previous[1]).read().decode("utf-8"))
    synced = _sync_from_record(root, previous, raw, format_version, io)
    if synced is not None:
        return synced
    versions = _delta.commit_versions(root, io=io)
    return _incremental_conversion(root, versions, previous, raw, format_version, io)


def _first_conversion(root: Location, latest: int, format_version: int | None, io: FileIO) -> IcebergResult:
    """No Iceberg metadata yet: one snapshot per Delta version from the first convertible one."""
    start, state, fv, verified = first_version(root, latest, format_version, io)
    table = IcebergTable.fresh(root, fv, state.metadata, io=io)
    table.checked_inside = verified.inside
    first_commit = _delta.load_commit(root, start, io=io)
    with Transaction(table, None) as tx:
        tx.set_delta_state(state.protocol, state.metadata, start)
        tx.make_directory()
        tx.apply(_produce_first(table, first_commit, state))
        commits = _delta.iter_commits(root, start + 1, latest, io=io)
        last_commit = _convert_commits(tx, commits, state.protocol, state.metadata) or first_commit
        _record(tx, verified, last_commit, None)
        number, path = tx.commit()
    return _result(root, table, number, path, latest, verified)


@dataclass(frozen=True)
class _Recorded:
    """What the previous run recorded about the Delta version it converted, checked against the log:
    the protocol and metadata in force there, and the name of the file they were read from."""

    protocol: Protocol
    metadata: Metadata
    state_file: str


def _recorded_state(
    root: Location, meta: TableMetadata, converted: _delta.Commit, io: FileIO
) -> _Recorded | None:
    """The Delta state the previous run recorded, when it may stand in for a replay of the log.

    Delta commit files are immutable and a version is committed once, so when the log still holds the
    very commit the previous run converted (same bytes: ``icecompat.delta-commit``), its versions up
    to that one are the ones that run read, and the protocol and metadata it recorded as in force
    there still are. That also answers the same-table check up to that version: the recorded Delta
    table id is the one of this log. None (the caller replays the log) when the metadata has no
    record, the commit differs or is gone, or the state file is missing, malformed or names
    another table id.
    """
    props = meta.properties
    name = props.get(PROP_DELTA_STATE, "")
    if not converted.digest or props.get(PROP_DELTA_COMMIT) != converted.digest:
        return None
    if not name or "/" in name or "\\" in name or not name.endswith(".json"):
        return None
    try:
        doc = json.loads(io.new_input(root / METADATA_DIR / name).read().decode("utf-8"))
        protocol = Protocol.from_json(doc["protocol"])
        metadata = Metadata.from_json(doc["metaData"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if metadata.id != props.get(PROP_DELTA_TABLE_ID):
        return None
    return _Recorded(protocol, metadata, name)


def _sync_from_record(
    root: Location,
    previous: tuple[int, Location],
    raw: dict[str, Any],
    format_version: int | None,
    io: FileIO,
) -> IcebergResult | None:
    """The sync after a commit, reading only the commits after the converted version and what the
    previous run left in ``metadata/``; None when that is not enough and the log must be replayed
    (:func:`_incremental_conversion` then runs every check on the snapshot as before).

    Every check of the replaying path is made, from what the new commits and the previous metadata
    already say:

    - which versions are new: one listing of ``_delta_log`` from the converted version on
      (:func:`._delta.commit_versions_from`); the converted commit must still be there and the new
      ones contiguous, else (log clean-up, a gap) the replaying path decides;
    - the same table: the converted commit is byte-identical to the one the previous run converted
      (:func:`_recorded_state`), so the Delta table id in force there is the recorded one; a new
      ``metaData`` action would carry any other id, and a commit that changes the protocol or the
      metadata takes the replaying path anyway;
    - the format version: the previous metadata's own, as in :func:`_adopt`;
    - compliance: no new commit changes the protocol or the metadata, so the recorded ones are in
      force at the latest version, every old file was verified under them, and the verification
      record (:func:`.verification.record_problem`, rule set) holds; then the footers of the new
      commits' files are read (:func:`.verification.verify_commits`), exactly what
      :func:`.verification.verify_since` reads;
    - the live-file count the record keeps is the converted snapshot's own ``total-data-files``,
      which the producers keep equal to Delta's live set (a re-added path replaces its entry).
    """
    props = {str(k): str(v) for k, v in (raw.get("properties") or {}).items()}
    converted = props.get(PROP_DELTA_VERSION, "")
    fv = int(raw.get("format-version", 2))
    if not converted.isdigit() or (format_version is not None and format_version != fv):
        return None  # refused by the replaying path, with every problem named
    last = int(converted)
    versions, checksums = _delta.commit_versions_from(root, last, io=io)
    if not versions or versions[0] != last or versions != list(range(last, versions[-1] + 1)):
        return None
    meta = TableMetadata.from_json(raw)
    recorded = _recorded_state(root, meta, _delta.load_commit(root, last, io=io), io)
    if recorded is None:
        return None
    latest = versions[-1]
    if latest == last:
        return IcebergResult(root, previous[1], previous[0], meta.format_version, latest, (), written=False)
    commits = list(_delta.iter_commits(root, last + 1, latest, io=io))
    if any(c.changes_table for c in commits) or record_problem(meta) is not None:
        return None
    if rules_key(recorded.metadata, fv) != meta.properties.get(PROP_VERIFIED_RULES):
        return None
    count = _delta.checksum_file_count(root, latest, io=io) if latest in checksums else None
    verified = verify_commits(
        root, meta, commits, latest, fv, recorded.protocol, recorded.metadata, count, io=io
    )
    table = IcebergTable(root, meta, recorded.metadata.id, io=io)
    table.checked_inside = verified.inside
    with Transaction(table, previous) as tx:
        tx.set_delta_state(recorded.protocol, recorded.metadata, last)
        table.resume()
        _convert_commits(tx, commits, recorded.protocol, recorded.metadata, new_paths=verified.new_paths)
        _record(tx, verified, commits[-1], recorded)
        number, path = tx.commit()
    return _result(root, table, number, path, latest, verified)


def _record(tx: Transaction, verified: Verified, last: _delta.Commit, recorded: _Recorded | None) -> None:
    """Record, with the metadata being committed, what the next sync needs to read only what is new:
    the verification record, the digest of the last converted commit, and the Delta protocol and
    metadata in force there (a new state file only when they differ from the recorded ones; it is
    written by this run, so an abort removes it with the run's other files)."""
    table = tx.table
    if verified.files < 0:  # counted from the converted snapshot (see verify_commits)
        snap = table.metadata.current_snapshot()
        total = None if snap is None else snap.summary.get("total-data-files", "")
        verified = dataclasses.replace(verified, files=int(total) if total and total.isdigit() else 0)
    assert table.protocol is not None and table.delta_metadata is not None
    state = {"protocol": table.protocol.to_json(), "metaData": table.delta_metadata.to_json()}
    if recorded is not None and state == {
        "protocol": recorded.protocol.to_json(),
        "metaData": recorded.metadata.to_json(),
    }:
        name = recorded.state_file
    else:
        name = f"{table.writer.run_id}-delta-state.json"
        location = table.meta_dir / name
        table.io.new_output(location).write(json.dumps(state, separators=(",", ":")).encode("utf-8"))
        table.writer.written.append(location)
    tx.update(
        record_update(verified),
        SetProperties(((PROP_DELTA_COMMIT, last.digest), (PROP_DELTA_STATE, name))),
    )


def _incremental_conversion(
    root: Location,
    versions: list[int],
    previous: tuple[int, Location],
    raw: dict[str, Any],
    format_version: int | None,
    io: FileIO,
) -> IcebergResult:
    """Iceberg metadata exists and its record cannot stand in for the log (see
    :func:`_sync_from_record`): snapshots for the Delta versions after the one it records, checked
    against the replayed snapshot of the latest version."""
    latest = versions[-1]
    meta, last, snap = _adopt(root, previous, raw, latest, format_version, io)
    if last == latest:
        return IcebergResult(root, previous[1], previous[0], meta.format_version, latest, (), written=False)
    if last + 1 < versions[0]:
        return _catch_up(root, previous, meta, last, versions[0], snap, io)
    commits = list(_delta.iter_commits(root, last + 1, latest, io=io))
    verified = verify_since(root, meta, commits, latest, meta.format_version, snap, io=io)
    if any(c.changes_table for c in commits):
        base = _delta.state_at(root, last, io=io)
        base_protocol, base_metadata = base.protocol, base.metadata
    else:  # no protocol or metadata action since ``last``: those of ``latest`` were in force
        base_protocol, base_metadata = verified.protocol, verified.metadata
    table = IcebergTable(root, meta, base_metadata.id, io=io)
    table.checked_inside = verified.inside
    with Transaction(table, previous) as tx:
        tx.set_delta_state(base_protocol, base_metadata, last)
        table.resume()
        _convert_commits(tx, commits, base_protocol, base_metadata, new_paths=verified.new_paths)
        _record(tx, verified, commits[-1], None)
        number, path = tx.commit()
    return _result(root, table, number, path, latest, verified)


def _catch_up(
    root: Location,
    previous: tuple[int, Location],
    meta: TableMetadata,
    last: int,
    oldest: int,
    snap: DeltaSnapshot,
    io: FileIO,
) -> IcebergResult:
    """The commits after the converted version were cleaned up before a sync converted them (a sync
    outage longer than the log's retention): the current Delta version becomes ONE new snapshot of
    the same Iceberg table, with a warning.

    The versions in between cannot get snapshots of their own (their actions are gone), but the
    table they lead to is known: the latest snapshot, verified in full like a first conversion. Its
    snapshot replaces every live file of the current Iceberg snapshot by the Delta snapshot's live
    files (an ``overwrite``; files that stayed are re-added with their unchanged row ids, so row
    lineage holds, and their deletion vectors are written again). The table uuid, the schemas (a
    schema equal to a recorded one keeps its id), the partition specs, the older snapshots and the
    row-id counter carry over.
    """
    latest = snap.version
    warnings.warn(
        f"Delta commits {last + 1}..{oldest - 1} of {root} were cleaned up before they were converted to "
        f"Iceberg: Delta version {latest} is converted as one Iceberg snapshot on top of the one of "
        f"version {last}; the versions in between have no Iceberg snapshot",
        IcebergSyncWarning,
        stacklevel=4,
    )
    verified = verify_full(
        root, latest, meta.format_version, f"Delta commits {last + 1}..{oldest - 1} are gone", snap, io=io
    )
    commit = _delta.load_commit(root, latest, io=io)
    table = IcebergTable(root, meta, snap.metadata.id, io=io)
    table.checked_inside = verified.inside
    with Transaction(table, previous) as tx:
        tx.set_delta_state(snap.protocol, snap.metadata, latest)
        table.resume()
        live, _ = table.files.index()
        new_files = table.new_files([a.to_json() for a in snap.add_files], latest)
        deletes = any(f.deletion_vector is not None for f in new_files)
        kind = producer_for(bool(new_files), bool(live), True, deletes=deletes)
        producer = kind(
            table, delta_version=latest, timestamp_ms=commit.timestamp_ms, delta_operation=commit.operation
        )
        producer.add_position_deletes(deletion_vector_files(table, new_files, latest, io=table.io))
        tx.apply(producer.add_files(new_files).remove_files(set(live)).produce())
        _record(tx, verified, commit, None)
        number, path = tx.commit()
    return _result(root, table, number, path, latest, verified)


def _adopt(
    root: Location,
    previous: tuple[int, Location],
    raw: dict[str, Any],
    latest: int,
    format_version: int | None,
    io: FileIO,
) -> tuple[TableMetadata, int, DeltaSnapshot]:
    """The existing metadata (``raw``, as read), the Delta version it records, and the Delta snapshot
    at ``latest``.

    Refused when the metadata was not written for this Delta table (``ICEBERG-EMIT-EXISTING-METADATA``)
    or a format version other than its own is asked for, by ``format_version`` or else by the table
    property ``icecompat.iceberg.format-version`` (``ICEBERG-EMIT-FORMAT-VERSION``).
    """
    props = {str(k): str(v) for k, v in (raw.get("properties") or {}).items()}
    converted = props.get(PROP_DELTA_VERSION)
    snap = read_snapshot(root, latest, io=io)  # protocol, metadata and live files at ``latest`` (one replay)
    problems: list[Violation] = []
    if converted is None or not str(converted).isdigit():
        problems.append(
            violation(
                "ICEBERG-EMIT-EXISTING-METADATA",
                "",
                file=previous[1],
                property=PROP_DELTA_VERSION,
            )
        )
    elif props.get(PROP_DELTA_TABLE_ID) != snap.metadata.id:
        problems.append(
            violation(
                "ICEBERG-EMIT-EXISTING-METADATA",
                "",
                variant="other-table",
                observed=props.get(PROP_DELTA_TABLE_ID),
                expected=snap.metadata.id,
            )
        )
    fv = int(raw.get("format-version", 2))
    asked = requested_format_version(snap.metadata) if format_version is None else format_version
    if asked is not None and asked != fv:
        problems.append(
            violation(
                "ICEBERG-EMIT-FORMAT-VERSION",
                "",
                variant="existing" if format_version is not None else "existing-property",
                observed=asked,
                expected=fv,
            )
        )
    refuse(problems, "")
    meta = TableMetadata.from_json(raw)
    last = int(str(converted))
    if last > latest:
        raise TableReadError(f"Iceberg metadata is at Delta version {last} but the log ends at {latest}")
    return meta, last, snap


def _convert_commits(
    tx: Transaction,
    commits: Iterable[_delta.Commit],
    protocol: Protocol,
    metadata: Metadata,
    *,
    new_paths: bool = False,
) -> _delta.Commit | None:
    """One snapshot per commit, each applied before the next is produced; protocol/metadata changes are
    checked as they come. Returns the last commit converted (None: there was none).

    ``new_paths``: the caller proved that no commit adds a path that is live before it (then appends
    never read the existing manifests).
    """
    table = tx.table
    last: _delta.Commit | None = None
    for commit in commits:
        last = commit
        changed = False
        for kind, obj in commit.actions:
            if kind == "protocol":
                protocol, changed = Protocol.from_json(obj), True
            elif kind == "metaData":
                metadata, changed = Metadata.from_json(obj), True
        if changed:
            tx.set_delta_state(protocol, metadata, commit.version)
        adds: dict[str, dict[str, Any]] = {}
        for obj in commit.of_kind("add"):
            adds[str(obj["path"])] = obj
        removes = [str(o["path"]) for o in commit.of_kind("remove") if str(o["path"]) not in adds]
        file_actions = list(adds.values()) + commit.of_kind("remove")
        data_change = not file_actions or any(bool(a.get("dataChange", True)) for a in file_actions)
        tx.apply(_produce(table, commit, removes, list(adds.values()), data_change, new_paths=new_paths))
    return last


def _produce(
    table: IcebergTable,
    commit: _delta.Commit,
    removes: Iterable[str],
    adds: list[dict[str, Any]],
    data_change: bool,
    *,
    new_paths: bool,
) -> SnapshotChanges:
    """The snapshot of one Delta version (``removes``/``adds``: Delta paths of the commit), computed by
    the producer for its kind of commit; the table is not changed."""
    new_files = table.new_files(adds, commit.version)
    removed = {table.file_uri(p) for p in removes}
    if removed or (new_files and not new_paths):
        live, _ = table.files.index()
        # A file re-added while live (new statistics, same data) is replaced: old entry deleted, new added.
        removed = {p for p in removed | {f.path for f in new_files} if p in live}
    deletes = any(f.deletion_vector is not None for f in new_files)
    kind = producer_for(bool(new_files), bool(removed), data_change, deletes=deletes)
    producer = kind(
        table,
        delta_version=commit.version,
        timestamp_ms=commit.timestamp_ms,
        delta_operation=commit.operation,
    )
    producer.add_position_deletes(deletion_vector_files(table, new_files, commit.version, io=table.io))
    return producer.add_files(new_files).remove_files(removed).produce()


CONVERSION_BATCH = 10_000
"""Live files turned into ``data_file`` records and written into manifests at a time by the first
snapshot of a conversion (its manifests hold at most this many entries)."""


def _produce_first(table: IcebergTable, commit: _delta.Commit, state: _delta.DeltaState) -> SnapshotChanges:
    """The first snapshot of a conversion: every live file of ``state`` (the Delta version ``commit``)
    added, in batches of :data:`CONVERSION_BATCH` whose manifests are written as they come
    (:meth:`.producers.SnapshotProducer.stream_files`), so no list of all the files is ever built.
    Every problem of every batch is refused together, as for any commit."""
    files = state.files
    deletes = bool(files.with_deletion_vectors())
    kind = producer_for(len(files) > 0, False, True, deletes=deletes)
    producer = kind(
        table,
        delta_version=commit.version,
        timestamp_ms=commit.timestamp_ms,
        delta_operation=commit.operation,
    )
    problems: list[Violation] = []
    for batch in files.batches(CONVERSION_BATCH):
        new_files = table.new_files([a.to_json() for a in batch], commit.version, problems)
        if problems:
            continue  # nothing more is written; the rest is read for its problems
        producer.add_position_deletes(deletion_vector_files(table, new_files, commit.version, io=table.io))
        producer.stream_files(new_files)
    refuse(problems, f"at Delta version {commit.version}")
    return producer.produce()


def _result(
    root: Location, table: IcebergTable, number: int, path: Location, latest: int, verified: Verified
) -> IcebergResult:
    """The public result of a run that committed."""
    return IcebergResult(
        table_root=root,
        metadata_path=path,
        metadata_version=number,
        format_version=table.fv,
        delta_version=latest,
        snapshots=tuple(table.new_snapshots),
        written=True,
        verification="full" + (f" ({verified.reason})" if verified.reason else "")
        if verified.full
        else "incremental",
        footers_read=verified.footers_read,
    )
