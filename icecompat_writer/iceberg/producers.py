"""Snapshot producers: one per kind of Delta commit, each computing one Iceberg snapshot.

A producer is given what its commit does (files added, files removed, delete files added), writes the
snapshot's new files (manifests, manifest list) and returns a frozen :class:`SnapshotChanges`: the
snapshot, its manifest list, its summary and row-lineage counters, the live files once it is current,
the files it wrote and the metadata updates that make it current. It changes nothing of the table;
:mod:`.transaction` applies the changes, one snapshot after another, and commits them once (or aborts,
removing what the run wrote).

A Delta commit is classified by what it does to the set of live files (:func:`producer_for`):

=====================  ===============================================  ===================
producer               Delta commit                                      Iceberg operation
=====================  ===============================================  ===================
:class:`Append`        adds files, removes none                          ``append``
:class:`Delete`        removes files, adds none, ``dataChange=true``     ``delete``
:class:`Overwrite`     removes and adds, ``dataChange=true``             ``overwrite``
:class:`Replace`       rewrites files, ``dataChange=false``              ``replace``
                       (OPTIMIZE, compaction, statistics re-added)
:class:`MetadataOnly`  no file change (schema, property, partitioning)   ``append``, no files
=====================  ===============================================  ===================

A metadata-only commit still gets a snapshot, because each Delta version is one Iceberg snapshot
whose sequence number is that version; it adds nothing, so ``append`` (with zero files) describes it
to a reader without claiming any change of rows.

Every producer works the same way (spec "Snapshots", "Manifests", "Manifest Lists"): new files go
into new manifests written by this snapshot (entries ``ADDED``, snapshot id and sequence numbers left to
inheritance where that gives the right values); manifests holding a removed file are rewritten with
that entry ``DELETED`` and every other one ``EXISTING`` (all values explicit); all other manifests
with live files are carried over unchanged; the manifest list names them all. An :class:`Append`
never reads existing manifests (only the manifest list), which keeps a small commit cheap on a large
table; producers that remove files read the live-file index of :class:`.manifests.LiveFiles`.

Delete files (position deletes, ``content`` 1: deletion vectors in v3, position-delete files in v2)
enter through :meth:`SnapshotProducer.add_position_deletes`: they are written into a delete manifest
(manifest-list ``content`` 1) of this snapshot, with this snapshot's sequence number as their data
sequence number, so they apply to data files with a data sequence number at or below it (spec "Scan
Planning"). A data file has at most one live delete file here: adding one for a data file that already
has one removes the older one (its entry rewritten ``DELETED``), and removing a data file removes its
delete files with it. Which producers accept delete files: :class:`Delete`, :class:`Overwrite` and
:class:`Replace`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from icecompat_writer.storage import Location

from .avro import DataFileRecord, ManifestEntryRecord
from .locations import uri
from .manifests import ADDED, DATA, DELETED, DELETES, EXISTING, Entry, LiveFiles, Manifest, delete_file_key
from .metadata import AddSnapshot, MetadataUpdate, SetSnapshotRef, Snapshot
from .table import IcebergTable, NewFile, SnapshotInfo

__all__ = [
    "Append",
    "Delete",
    "DeleteFile",
    "MetadataOnly",
    "Overwrite",
    "Replace",
    "SnapshotChanges",
    "SnapshotProducer",
    "producer_for",
]

POSITION_DELETES = 1  # data_file.content of a position-delete file (deletion vectors included)


@dataclass
class DeleteFile:
    """A position-delete file for one data file: its ``data_file`` record (``content`` 1, with
    ``referenced_data_file`` set to the data file's URI) and the partition spec it is written under."""

    data_file: DataFileRecord
    spec_id: int | None = None  # None: the table's current spec

    @property
    def path(self) -> str:
        return str(self.data_file["file_path"])

    @property
    def referenced_data_file(self) -> str:
        return str(self.data_file["referenced_data_file"])

    @property
    def key(self) -> str:
        return delete_file_key(self.data_file)


@dataclass(frozen=True)
class SnapshotChanges:
    """What one producer computed for one Delta version, none of it applied yet.

    Its files (manifests, manifest list, and any Puffin file of its delete files) are written but
    referenced by nothing until :mod:`.transaction` applies ``updates`` to the table metadata and
    commits it; ``written`` names them, so an attempt that is not committed can remove them.
    ``files`` is the table's live-file set once the snapshot is current (the table's own set is left
    as it was). For v3, ``first_row_id`` and ``added_rows`` are the snapshot's row-lineage counters:
    the table's ``next-row-id`` becomes their sum.
    """

    info: SnapshotInfo
    snapshot: Snapshot
    manifests: tuple[Manifest, ...]  # the manifest list, in its order
    files: LiveFiles
    written: tuple[Location, ...]
    updates: tuple[MetadataUpdate, ...]

    @property
    def summary(self) -> Mapping[str, str]:
        return self.snapshot.summary

    @property
    def first_row_id(self) -> int | None:
        return self.snapshot.first_row_id

    @property
    def added_rows(self) -> int | None:
        return self.snapshot.added_rows


@dataclass(frozen=True)
class _Existing:
    """The current snapshot's manifests seen by a new one: carried over, or rewritten because they
    hold a file that leaves (data files removed, and delete files of those or replaced by new ones)."""

    kept: list[Manifest]
    rewritten: list[Manifest]
    removed: set[str]  # data files that leave
    removed_deletes: set[str]  # delete files that leave
    removed_sizes: list[tuple[int, int]]  # (records, bytes) of each removed data file


class SnapshotProducer:
    """Collects one commit's changes, then computes its snapshot (:meth:`produce`).

    The producer reads the table (metadata, live files, the Delta state in force) and writes only new
    files; it returns a :class:`SnapshotChanges` and changes nothing of the table.
    """

    operation: ClassVar[str]
    accepts_adds: ClassVar[bool] = False
    accepts_removes: ClassVar[bool] = False
    accepts_delete_files: ClassVar[bool] = False

    def __init__(
        self, table: IcebergTable, *, delta_version: int, timestamp_ms: int, delta_operation: str | None
    ) -> None:
        self.table = table
        self.delta_version = delta_version
        self.timestamp_ms = timestamp_ms
        self.delta_operation = delta_operation
        self._added: list[NewFile] = []
        self._removed: set[str] = set()
        self._delete_files: list[DeleteFile] = []
        self._mark = table.writer.mark()  # files written from here on belong to this snapshot
        # data files written by stream_files: their manifests (entries not kept), and their counts
        self._streamed_runs: list[Manifest] = []
        self._streamed_rest: list[Manifest] = []
        self._streamed: tuple[int, int, int] = (0, 0, 0)  # files, records, bytes

    # -- what the commit does ------------------------------------------------------------------

    def add_files(self, files: Iterable[NewFile]) -> SnapshotProducer:
        files = list(files)
        if files and not self.accepts_adds:
            raise ValueError(f"a {type(self).__name__} snapshot adds no data file")
        self._added.extend(files)
        return self

    def stream_files(self, files: Sequence[NewFile]) -> SnapshotProducer:
        """Add ``files`` (one batch of a commit's many new data files) by writing their data manifests
        now and keeping only the manifests' list rows and the batch's counts, so a commit of millions
        of files is written in bounded memory. Row lineage is exactly as if every file had been given
        to :meth:`add_files`: runs of contiguous Delta ``baseRowId`` get a manifest with that first row
        id (the manifest list orders them by it), files without one get theirs in list order after them.
        Only for a snapshot that removes nothing (the first snapshot of a conversion)."""
        if files and not self.accepts_adds:
            raise ValueError(f"a {type(self).__name__} snapshot adds no data file")
        if not files:
            return self
        t = self.table
        first_row_id = int(t.metadata.next_row_id or 0) if t.fv >= 3 else None
        manifests = self._data_manifests(
            t.snapshot_id_for(self.delta_version), self.delta_version, first_row_id, files
        )
        for m in manifests:
            m.entries = None  # read back from the file if ever needed
            (self._streamed_runs if m.record["first_row_id"] is not None else self._streamed_rest).append(m)
        n, records, size = self._streamed
        self._streamed = (
            n + len(files),
            records + sum(int(f.data_file["record_count"]) for f in files),
            size + sum(int(f.data_file["file_size_in_bytes"]) for f in files),
        )
        return self

    def remove_files(self, uris: Iterable[str]) -> SnapshotProducer:
        """Remove live data files by URI (ones that are not live are ignored, as Delta does)."""
        uris = set(uris)
        if uris and not self.accepts_removes:
            raise ValueError(f"a {type(self).__name__} snapshot removes no data file")
        self._removed |= uris
        return self

    def add_position_deletes(self, files: Iterable[DeleteFile]) -> SnapshotProducer:
        """Add position-delete files (``content`` 1), each replacing any live one of its data file."""
        files = list(files)
        if files and not self.accepts_delete_files:
            raise ValueError(f"a {type(self).__name__} snapshot adds no delete file")
        for f in files:
            if int(f.data_file.get("content", 0)) != POSITION_DELETES or not f.data_file.get(
                "referenced_data_file"
            ):
                raise ValueError(f"{f.path} is not a position-delete file with a referenced data file")
        self._delete_files.extend(files)
        return self

    # -- the snapshot ----------------------------------------------------------------------------

    def produce(self) -> SnapshotChanges:
        """Write this commit's manifests and manifest list and return the snapshot's changes."""
        t = self.table
        version = self.delta_version
        snapshot_id = t.snapshot_id_for(version)
        seq = version  # the Iceberg sequence number of a snapshot is its Delta version
        parent = t.metadata.current_snapshot_id
        first_row_id = int(t.metadata.next_row_id or 0) if t.fv >= 3 else None

        added = self._data_manifests(snapshot_id, seq, first_row_id, self._added)
        streamed = sorted(self._streamed_runs, key=lambda m: int(m.record["first_row_id"]))
        streamed += self._streamed_rest
        existing = self._existing_manifests(snapshot_id, seq)
        new_deletes = self._delete_manifests(snapshot_id, seq)
        manifests, next_row_id = self._manifest_list(streamed + added, existing, new_deletes, first_row_id)
        list_path = t.writer.write_list(
            snapshot_id, manifests, parent_snapshot_id=parent, sequence_number=seq, first_row_id=first_row_id
        )
        if streamed:
            assert not existing.removed and not existing.rewritten, "streamed files are only appended"
            files = t.files.appended(manifests, self._streamed, new_deletes)
        else:
            files = t.files.replaced(
                manifests,
                existing.removed | existing.removed_deletes,
                added + new_deletes,
                existing.rewritten,
            )
        snapshot = Snapshot(
            snapshot_id=snapshot_id,
            sequence_number=seq,
            timestamp_ms=max(int(self.timestamp_ms), t.metadata.last_snapshot_ms),
            manifest_list=uri(list_path),
            summary=self._summary(existing, files),
            schema_id=t.schema_id,
            parent_snapshot_id=parent,
            first_row_id=first_row_id,
            added_rows=None if t.fv < 3 else int(next_row_id or 0) - int(first_row_id or 0),
        )
        return SnapshotChanges(
            info=SnapshotInfo(
                version,
                snapshot_id,
                seq,
                self.operation,
                len(self._added) + self._streamed[0],
                len(existing.removed),
            ),
            snapshot=snapshot,
            manifests=tuple(manifests),
            files=files,
            written=t.writer.written_since(self._mark),
            updates=(AddSnapshot(snapshot), SetSnapshotRef(snapshot_id), t.delta_version_update(version)),
        )

    def _groups(
        self, first_row_id: int | None, added: Sequence[NewFile]
    ) -> list[tuple[int | None, list[NewFile]]]:
        """New files per data manifest. For v3, runs of files whose Delta baseRowIds are contiguous get a
        manifest each, so that Iceberg's first_row_id inheritance reproduces exactly Delta's row ids."""
        groups: list[tuple[int | None, list[NewFile]]] = []
        if self.table.fv >= 3:
            assert first_row_id is not None
            fresh = sorted(
                (f for f in added if f.base_row_id is not None and f.base_row_id >= first_row_id),
                key=lambda f: int(f.base_row_id or 0),
            )
            fresh_ids = {id(f) for f in fresh}
            older = [f for f in added if id(f) not in fresh_ids]
            # Where the current run's row ids end, kept as it grows: summing the run's record counts
            # for every file made grouping quadratic (minutes at 100,000 files in one commit).
            run_end: int | None = None
            for f in fresh:
                base = int(f.base_row_id or 0)
                if groups and run_end == base:
                    groups[-1][1].append(f)
                else:
                    groups.append((base, [f]))
                run_end = base + int(f.data_file["record_count"])
            if older:
                groups.append((None, older))
        elif added:
            groups.append((None, list(added)))
        return groups

    def _data_manifests(
        self, snapshot_id: int, seq: int, first_row_id: int | None, added: Sequence[NewFile]
    ) -> list[Manifest]:
        t = self.table
        spec = t.metadata.spec(t.spec_id)
        fields = t.partition_fields(t.spec_id)
        schema_json = t.current_schema_json()
        out = []
        for run_start, files in self._groups(first_row_id, added):
            entries: list[Entry] = []
            explicit: list[ManifestEntryRecord] = []
            for f in files:
                data_seq = f.row_commit_version if f.row_commit_version is not None else seq
                data_seq = min(data_seq, seq)
                df = f.data_file.copy()
                resolved_first = f.base_row_id if t.fv >= 3 else None
                df["first_row_id"] = None if run_start is not None else resolved_first
                explicit.append(
                    {
                        "status": ADDED,
                        "snapshot_id": snapshot_id,
                        "sequence_number": None if data_seq == seq else data_seq,
                        "file_sequence_number": None,
                        "data_file": df,
                    }
                )
                entries.append(
                    Entry(ADDED, snapshot_id, data_seq, seq, {**df, "first_row_id": resolved_first})
                )
            m = t.writer.write(
                entries,
                spec,
                fields,
                schema_json,
                snapshot_id=snapshot_id,
                sequence_number=seq,
                explicit=explicit,
            )
            m.record["first_row_id"] = run_start
            out.append(m)
        return out

    def _existing_manifests(self, snapshot_id: int, seq: int) -> _Existing:
        """Which current manifests are carried over and which are rewritten without what leaves.

        Only a snapshot that removes files or adds delete files needs the live-file index (every
        manifest read); without it, every manifest with a live file stays, as its list row's counts say.
        """
        t = self.table
        if not (self._removed or self._delete_files or t.files.loaded):
            return _Existing([m for m in t.files.manifests if m.has_live_files], [], set(), set(), [])
        live, sizes = t.files.index()
        removed = {p for p in self._removed if p in live}
        removed_deletes = self._replaced_delete_files(removed)
        gone = removed | removed_deletes
        owners = t.files.owners()
        kept: list[Manifest] = []
        rewritten: list[Manifest] = []
        for m in t.files.manifests:
            here = owners.get(id(m), set())
            if not here:
                continue  # nothing live any more: the manifest leaves the table
            if gone.intersection(here):
                rewritten.append(self._rewrite(m, gone, snapshot_id, seq))
            else:
                kept.append(m)
        return _Existing(kept, rewritten, removed, removed_deletes, [sizes[p] for p in removed])

    def _delete_manifests(self, snapshot_id: int, seq: int) -> list[Manifest]:
        """New delete files, one delete manifest per partition spec; data sequence number ``seq``."""
        t = self.table
        by_spec: dict[int, list[DeleteFile]] = {}
        for f in self._delete_files:
            by_spec.setdefault(t.spec_id if f.spec_id is None else f.spec_id, []).append(f)
        out = []
        for spec_id, files in sorted(by_spec.items()):
            entries = [Entry(ADDED, snapshot_id, seq, seq, f.data_file.copy()) for f in files]
            explicit: list[ManifestEntryRecord] = [
                {
                    "status": ADDED,
                    "snapshot_id": snapshot_id,
                    "sequence_number": None,
                    "file_sequence_number": None,
                    "data_file": f.data_file.copy(),
                }
                for f in files
            ]
            out.append(self._write(entries, spec_id, snapshot_id, seq, explicit, DELETES))
        return out

    def _manifest_list(
        self,
        added: list[Manifest],
        existing: _Existing,
        new_deletes: list[Manifest],
        first_row_id: int | None,
    ) -> tuple[list[Manifest], int | None]:
        """The manifest list's order (new and rewritten data manifests, kept data manifests, new and
        rewritten delete manifests, kept delete manifests) and, for v3, the next row id after it: the
        data manifests this snapshot wrote without a first row id get one, in list order."""
        data_first = [m for m in added + existing.rewritten if m.content == DATA]
        delete_rewritten = [m for m in existing.rewritten if m.content != DATA]
        next_row_id = first_row_id
        if self.table.fv >= 3:
            cursor = int(first_row_id or 0)
            for m in data_first:
                if m.record["first_row_id"] is None:
                    m.record["first_row_id"] = cursor
                else:
                    cursor = int(m.record["first_row_id"]) + int(m.record["added_rows_count"])
            next_row_id = cursor
        kept = existing.kept
        manifests = data_first + [m for m in kept if m.content == DATA] + new_deletes + delete_rewritten
        manifests += [m for m in kept if m.content != DATA]
        return manifests, next_row_id

    def _summary(self, existing: _Existing, files: LiveFiles) -> dict[str, str]:
        """The snapshot summary: what changed, and the totals once it is current (``files``)."""
        total_files, records, size = files.totals
        delete_files, position_deletes = files.delete_totals
        streamed_files, streamed_records, streamed_size = self._streamed
        added_records = streamed_records + sum(int(f.data_file["record_count"]) for f in self._added)
        removed_sizes = existing.removed_sizes
        summary = {
            "operation": self.operation,
            "added-data-files": str(streamed_files + len(self._added)),
            "deleted-data-files": str(len(existing.removed)),
            "added-records": str(added_records),
            "deleted-records": str(sum(r for r, _ in removed_sizes)),
            "added-files-size": str(
                streamed_size + sum(int(f.data_file["file_size_in_bytes"]) for f in self._added)
            ),
            "removed-files-size": str(sum(s for _, s in removed_sizes)),
            "total-data-files": str(total_files),
            "total-records": str(records),
            "total-files-size": str(size),
            "total-delete-files": str(delete_files),
            "total-position-deletes": str(position_deletes),
            "total-equality-deletes": "0",
        }
        if self._delete_files:
            summary["added-delete-files"] = str(len(self._delete_files))
            summary["added-position-delete-files"] = str(len(self._delete_files))
            summary["added-position-deletes"] = str(
                sum(int(f.data_file["record_count"]) for f in self._delete_files)
            )
        if existing.removed_deletes:
            summary["removed-delete-files"] = str(len(existing.removed_deletes))
            summary["removed-position-delete-files"] = str(len(existing.removed_deletes))
        summary["icecompat.delta-version"] = str(self.delta_version)
        if self.delta_operation:
            summary["icecompat.delta-operation"] = self.delta_operation
        return summary

    def _write(
        self,
        entries: list[Entry],
        spec_id: int,
        snapshot_id: int,
        seq: int,
        explicit: list[ManifestEntryRecord],
        content: int,
    ) -> Manifest:
        """One manifest of ``spec_id``, its partition types and schema taken from the table as it is now."""
        t = self.table
        return t.writer.write(
            entries,
            t.metadata.spec(spec_id),
            t.partition_fields(spec_id),
            t.current_schema_json(),
            snapshot_id=snapshot_id,
            sequence_number=seq,
            explicit=explicit,
            content=content,
        )

    def _rewrite(self, m: Manifest, removed: set[str], snapshot_id: int, seq: int) -> Manifest:
        """Copy a manifest with ``removed`` files marked DELETED and the rest EXISTING, all explicit."""
        t = self.table
        entries: list[Entry] = []
        for e in t.files.entries(m):
            if e.status == DELETED:
                continue  # deletes of earlier snapshots are not carried forward
            gone = e.key in removed
            entries.append(
                Entry(
                    status=DELETED if gone else EXISTING,
                    snapshot_id=snapshot_id if gone else e.snapshot_id,
                    sequence_number=e.sequence_number,
                    file_sequence_number=e.file_sequence_number,
                    data_file=e.data_file.copy(),
                )
            )
        spec_id = int(m.record["partition_spec_id"])
        return self._write(entries, spec_id, snapshot_id, seq, [e.explicit() for e in entries], m.content)

    def _replaced_delete_files(self, removed_data: set[str]) -> set[str]:
        """Live delete files that go: those of removed data files, and those a new delete file replaces."""
        targets = set(removed_data) | {f.referenced_data_file for f in self._delete_files}
        return {p for p, (ref, _) in self.table.files.delete_index().items() if ref in targets}


class Append(SnapshotProducer):
    """Only new data files (``append``); existing manifests are carried over without being read."""

    operation = "append"
    accepts_adds = True


class Delete(SnapshotProducer):
    """Only removed data files, or rows deleted through delete files (``delete``)."""

    operation = "delete"
    accepts_removes = True
    accepts_delete_files = True


class Overwrite(SnapshotProducer):
    """Data files removed and added with a change of rows (``overwrite``: MERGE, UPDATE, overwrite)."""

    operation = "overwrite"
    accepts_adds = True
    accepts_removes = True
    accepts_delete_files = True


class Replace(SnapshotProducer):
    """Files rewritten without a change of rows (``replace``: OPTIMIZE, compaction, ``dataChange=false``)."""

    operation = "replace"
    accepts_adds = True
    accepts_removes = True
    accepts_delete_files = True


class MetadataOnly(SnapshotProducer):
    """No file change: a schema, property or partitioning change still takes its Delta version."""

    operation = "append"


def producer_for(
    adds: bool, removes: bool, data_change: bool, deletes: bool = False
) -> type[SnapshotProducer]:
    """The producer for a commit that ``adds``/``removes`` live files (re-adds count as both) and adds
    ``deletes`` (delete files: rows of data files deleted, which no ``append`` may do)."""
    if adds and (removes or deletes):
        return Overwrite if data_change else Replace
    if removes or deletes:
        return Delete if data_change else Replace
    if adds:
        return Append
    return MetadataOnly
