"""Iceberg history with a bound, in step with Delta's retention: snapshot expiry and metadata clean-up.

Every sync writes a new ``v<N>.metadata.json``. Without a bound each one would carry every snapshot,
``snapshot-log`` and ``metadata-log`` entry since the first conversion, and ``metadata/`` would keep
every manifest, manifest list and metadata file ever written. Each commit therefore does what Iceberg
Java's ``ExpireSnapshots`` (``RemoveSnapshots``) and its metadata-log trimming do, in two halves:

* :func:`prepare`, before the commit point, on the metadata about to be written: snapshots that are
  no longer retained leave ``snapshots``; ``snapshot-log`` loses their entries and, as Iceberg
  writes it, every entry before the last removed one (a gap would make time travel answer with the
  wrong snapshot); ``metadata-log`` keeps the newest ``write.metadata.previous-versions-max``
  entries (at least one, as Iceberg's ``addPreviousFile``). The main branch is the only reference
  and always points at the current snapshot, which is never expired.
* :func:`clean_up`, only after the new metadata file is committed: the manifest lists of snapshots
  no retained metadata file lists any more, the manifests and the delete files under ``metadata/``
  (Puffin deletion vectors) that no retained snapshot references, and (``write.metadata.
  delete-after-commit.enabled``) the metadata files that left ``metadata-log``. A crash between the
  commit and these deletes leaves orphans only, never a reference to a missing file. Nothing outside
  ``metadata/`` is ever deleted, and no data file (those are Delta's, ``VACUUM`` owns them).

Which snapshots are retained (:class:`Retention`). Walking back from the current snapshot, as Iceberg
does for a branch, a snapshot is kept while all of these hold, and the walk stops at the first that
fails:

* VACUUM-safe: the snapshot's files stay live until the NEXT commit removes some of them, and Delta's
  ``VACUUM`` deletes a removed file once it was removed more than ``delta.deletedFileRetentionDuration``
  (default 7 days) ago. So the successor's commit time decides: a snapshot is kept only while its
  successor committed less than that duration, minus a margin, before now. The margin
  (``icecompat.iceberg.history.vacuum-margin-ms``, default one hour) covers a ``VACUUM`` run a little
  after the sync. This is the same bound Delta's own time travel has.
* Iceberg's age rule: the snapshot is one of the newest ``history.expire.min-snapshots-to-keep``
  (default 1), or it is younger than ``history.expire.max-snapshot-age-ms``; when that property is
  not set, younger than ``delta.logRetentionDuration`` (default 30 days), past which Delta cannot
  time travel to the version either.
* The count bound: at most ``icecompat.iceberg.history.max-snapshots`` (default 100; 0 or less: no
  bound) snapshots, or ``min-snapshots-to-keep`` when that is larger. Time alone cannot bound a table
  that commits often: a table committed to every few seconds would keep a week of snapshots.

When they disagree, VACUUM-safety wins: ``min-snapshots-to-keep`` and ``max-snapshot-age-ms`` keep
snapshots only as long as Delta keeps their files. To keep more Iceberg history, raise
``delta.deletedFileRetentionDuration`` (VACUUM then keeps the files longer too).

Every property is read from the Delta table's properties first (``ALTER TABLE ... SET TBLPROPERTIES``
is how a Delta table is configured), then from the Iceberg metadata's own ``properties``.

Where the defaults differ from Iceberg's: Iceberg expires nothing until ``expireSnapshots`` is run,
has no count bound, and keeps old metadata files (``delete-after-commit`` false). Here expiry runs on
every sync, the count bound is 100, and ``delete-after-commit`` is true, so that ``metadata/`` stays
bounded without anyone running maintenance; ``previous-versions-max`` keeps Iceberg's 100.

The file clean-up relies on the history being one line (the main branch, each snapshot the parent of
the next, as the sync writes it): a manifest or delete file, once left out of a snapshot, is never
referenced again, and every retained metadata file lists a suffix of the snapshots, the oldest
retained metadata file (the first ``metadata-log`` entry) the longest. So a file that an expired
snapshot references and some retained snapshot references is referenced by the oldest retained
snapshot, the only one whose manifests the clean-up reads.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from icecompat_writer.errors import CompatViolation, IcebergSyncWarning, TableReadError
from icecompat_writer.storage import FileIO, Location

from .avro import read_avro
from .locations import local, owned, uri
from .manifests import DELETED, DELETES
from .metadata import PROP_DELTA_STATE, SnapshotLogEntry, TableMetadata

__all__ = [
    "DEFAULT_MAX_SNAPSHOTS",
    "DEFAULT_PREVIOUS_VERSIONS_MAX",
    "DEFAULT_VACUUM_MARGIN_MS",
    "DELTA_DELETED_FILE_RETENTION",
    "DELTA_LOG_RETENTION",
    "PROP_DELETE_AFTER_COMMIT",
    "PROP_MAX_SNAPSHOTS",
    "PROP_MAX_SNAPSHOT_AGE_MS",
    "PROP_MIN_SNAPSHOTS_TO_KEEP",
    "PROP_PREVIOUS_VERSIONS_MAX",
    "PROP_VACUUM_MARGIN_MS",
    "Expiry",
    "Retention",
    "clean_up",
    "parse_interval_ms",
    "prepare",
    "read_metadata",
    "removes_data_files",
]

PROP_MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
PROP_MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
PROP_PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
PROP_DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"
PROP_MAX_SNAPSHOTS = "icecompat.iceberg.history.max-snapshots"
PROP_VACUUM_MARGIN_MS = "icecompat.iceberg.history.vacuum-margin-ms"
DELTA_LOG_RETENTION = "delta.logRetentionDuration"
DELTA_DELETED_FILE_RETENTION = "delta.deletedFileRetentionDuration"

_DAY_MS = 24 * 3600 * 1000
DEFAULT_LOG_RETENTION_MS = 30 * _DAY_MS  # Delta's default delta.logRetentionDuration
DEFAULT_DELETED_FILE_RETENTION_MS = 7 * _DAY_MS  # Delta's default delta.deletedFileRetentionDuration
DEFAULT_MIN_SNAPSHOTS_TO_KEEP = 1  # Iceberg's
DEFAULT_PREVIOUS_VERSIONS_MAX = 100  # Iceberg's
DEFAULT_MAX_SNAPSHOTS = 100  # ours: Iceberg has no count bound
DEFAULT_VACUUM_MARGIN_MS = 3600 * 1000
DEFAULT_DELETE_AFTER_COMMIT = True  # Iceberg's is false

# Delta's interval units (CalendarInterval syntax: "interval 7 days", "interval 1 hour")
_UNITS_MS = {
    "week": 7 * _DAY_MS,
    "day": _DAY_MS,
    "hour": 3600 * 1000,
    "minute": 60 * 1000,
    "second": 1000,
    "millisecond": 1,
}
_PART = re.compile(r"(-?\d+)\s*([a-z]+?)s?\b")


def parse_interval_ms(text: str) -> int | None:
    """Milliseconds of a Delta interval property (``interval 7 days``, ``2 weeks 1 day``); None when
    it does not parse (Delta would have refused it when it was set)."""
    body = text.strip().lower()
    if body.startswith("interval"):
        body = body[len("interval") :]
    total, pos, found = 0, 0, False
    for m in _PART.finditer(body):
        if body[pos : m.start()].strip():
            return None
        unit = m.group(2)
        if unit == "microsecond":
            total += int(m.group(1)) // 1000
        elif unit in _UNITS_MS:
            total += int(m.group(1)) * _UNITS_MS[unit]
        else:
            return None
        pos, found = m.end(), True
    if not found or body[pos:].strip():
        return None
    return total


def removes_data_files(summary: Mapping[str, str]) -> bool:
    """Whether a snapshot's commit removed data files (whose removal starts VACUUM's clock). A summary
    that does not say counts as removing, except an append's (an append removes nothing)."""
    count = summary.get("deleted-data-files")
    if count is None:
        return summary.get("operation") != "append"
    return not count.isdigit() or int(count) > 0


@dataclass(frozen=True)
class Retention:
    """The effective retention of one table (see the module docstring for each field's source)."""

    deleted_file_retention_ms: int = DEFAULT_DELETED_FILE_RETENTION_MS
    max_snapshot_age_ms: int = DEFAULT_LOG_RETENTION_MS
    min_snapshots_to_keep: int = DEFAULT_MIN_SNAPSHOTS_TO_KEEP
    max_snapshots: int = DEFAULT_MAX_SNAPSHOTS
    vacuum_margin_ms: int = DEFAULT_VACUUM_MARGIN_MS
    previous_versions_max: int = DEFAULT_PREVIOUS_VERSIONS_MAX
    delete_after_commit: bool = DEFAULT_DELETE_AFTER_COMMIT

    @classmethod
    def of(cls, delta_configuration: Mapping[str, str], iceberg_properties: Mapping[str, str]) -> Retention:
        """The retention a table's Delta properties (first) and Iceberg properties ask for; a value
        that does not parse counts as not set."""

        def prop(key: str) -> str | None:
            value = delta_configuration.get(key, iceberg_properties.get(key))
            return None if value is None else str(value).strip()

        def integer(key: str, default: int) -> int:
            raw = prop(key)
            try:
                return default if raw is None else int(raw)
            except ValueError:
                return default

        def interval(key: str, default: int) -> int:
            raw = prop(key)
            parsed = None if raw is None else parse_interval_ms(raw)
            return default if parsed is None else parsed

        log_retention = interval(DELTA_LOG_RETENTION, DEFAULT_LOG_RETENTION_MS)
        deleted = interval(DELTA_DELETED_FILE_RETENTION, DEFAULT_DELETED_FILE_RETENTION_MS)
        delete_raw = prop(PROP_DELETE_AFTER_COMMIT)
        return cls(
            deleted_file_retention_ms=max(0, deleted),
            max_snapshot_age_ms=max(0, integer(PROP_MAX_SNAPSHOT_AGE_MS, log_retention)),
            min_snapshots_to_keep=max(1, integer(PROP_MIN_SNAPSHOTS_TO_KEEP, DEFAULT_MIN_SNAPSHOTS_TO_KEEP)),
            max_snapshots=integer(PROP_MAX_SNAPSHOTS, DEFAULT_MAX_SNAPSHOTS),
            vacuum_margin_ms=max(0, integer(PROP_VACUUM_MARGIN_MS, DEFAULT_VACUUM_MARGIN_MS)),
            previous_versions_max=max(1, integer(PROP_PREVIOUS_VERSIONS_MAX, DEFAULT_PREVIOUS_VERSIONS_MAX)),
            delete_after_commit=(
                DEFAULT_DELETE_AFTER_COMMIT if delete_raw is None else delete_raw.lower() == "true"
            ),
        )

    def vacuum_cutoff(self, now_ms: int) -> int:
        """A snapshot is VACUUM-safe while its successor committed at or after this time."""
        return now_ms - self.deleted_file_retention_ms + self.vacuum_margin_ms

    def retained(self, meta: TableMetadata, now_ms: int) -> set[int]:
        """Ids of the snapshots kept at ``now_ms``: the current one, and its ancestors back to the
        first that fails a rule."""
        by_id = {s.snapshot_id: s for s in meta.snapshots}
        current = meta.current_snapshot_id
        if current is None or current not in by_id:
            return set()
        keep = {current}
        cap = max(self.max_snapshots, self.min_snapshots_to_keep) if self.max_snapshots > 0 else None
        vacuum_cutoff = self.vacuum_cutoff(now_ms)
        age_cutoff = now_ms - self.max_snapshot_age_ms
        removal_ms: int | None = None  # the earliest later commit that removed data files
        successor = by_id[current]
        parent = successor.parent_snapshot_id
        while parent is not None and parent in by_id and parent not in keep:
            snapshot = by_id[parent]
            if removes_data_files(successor.summary):
                removal_ms = successor.timestamp_ms
            vacuum_safe = removal_ms is None or removal_ms >= vacuum_cutoff
            iceberg_keeps = len(keep) < self.min_snapshots_to_keep or snapshot.timestamp_ms >= age_cutoff
            if not (vacuum_safe and iceberg_keeps) or (cap is not None and len(keep) >= cap):
                break
            keep.add(parent)
            successor, parent = snapshot, snapshot.parent_snapshot_id
        return keep


@dataclass
class Expiry:
    """What :func:`prepare` changed, for :func:`clean_up` after the commit."""

    retention: Retention
    removed_snapshots: list[int] = field(default_factory=list)
    dropped_metadata: list[str] = field(default_factory=list)  # metadata files that left the log
    oldest_retained: list[dict[str, Any]] = field(
        default_factory=list
    )  # snapshots of the first kept log file


def prepare(
    meta: TableMetadata,
    retention: Retention,
    now_ms: int,
    read: Callable[[str], Mapping[str, Any] | None] = lambda _uri: None,
) -> Expiry:
    """Expire snapshots and trim ``snapshot-log`` and ``metadata-log`` of ``meta`` (in place), as
    Iceberg Java writes them; ``meta.metadata_log`` already holds the entry of the previous file.

    ``metadata-log`` keeps the newest ``previous-versions-max`` entries, and of those older than the
    previous file only the files whose every snapshot is still VACUUM-safe: an old metadata file names
    the data files of its snapshots too. The previous file always stays, as in Iceberg (a catalog
    loads the table from it before its pointer moves on); only the snapshots it alone lists may name
    data files that VACUUM deletes before the next sync. ``read`` reads a metadata file (None: gone);
    the oldest kept one is read (one file a sync in the steady state: each file leaves the log once).
    """
    expiry = Expiry(retention)
    history = {s.sequence_number: (s.timestamp_ms, removes_data_files(s.summary)) for s in meta.snapshots}
    newest = max(history, default=-1)
    keep = retention.retained(meta, now_ms)
    if keep:
        removed = [s.snapshot_id for s in meta.snapshots if s.snapshot_id not in keep]
        if removed:
            gone = set(removed)
            meta.snapshots = [s for s in meta.snapshots if s.snapshot_id in keep]
            meta.snapshot_log = _snapshot_log(meta.snapshot_log, keep, gone)
            for name in ("statistics", "partition-statistics"):
                stats = meta.extra.get(name)
                if isinstance(stats, list):
                    meta.extra[name] = [s for s in stats if s.get("snapshot-id") not in gone]
            expiry.removed_snapshots = removed
    log = meta.metadata_log
    dropped = log[: max(0, len(log) - retention.previous_versions_max)]
    log = log[len(dropped) :]
    cutoff = retention.vacuum_cutoff(now_ms)
    while log:
        doc = read(log[0].metadata_file)
        snapshots = _snapshots_of(doc)
        if doc is not None and not snapshots:
            break
        if doc is not None and (len(log) == 1 or _all_vacuum_safe(snapshots, history, newest, cutoff)):
            # the previous file always stays (Iceberg keeps at least one): a catalog's pointer moves
            # from it to the new one, and a catalog loads the table from it first
            expiry.oldest_retained = snapshots
            break
        dropped.append(log.pop(0))  # gone, or names files VACUUM may delete (or not known safe)
    meta.metadata_log = log
    kept = {e.metadata_file for e in log}
    expiry.dropped_metadata = [e.metadata_file for e in dropped if e.metadata_file not in kept]
    return expiry


def _all_vacuum_safe(
    snapshots: list[dict[str, Any]], history: Mapping[int, tuple[int, bool]], newest: int, cutoff: int
) -> bool:
    """Whether every snapshot of an old metadata file is VACUUM-safe: no later commit that removed
    data files committed before ``cutoff``. The commits after its oldest snapshot are looked up in
    the file itself and in the table's current history; one found in neither makes it unknown, and
    unknown counts as unsafe."""
    known = dict(history)
    for s in snapshots:
        summary = {str(k): str(v) for k, v in (s.get("summary") or {}).items()}
        known.setdefault(
            int(s.get("sequence-number", 0)), (int(s["timestamp-ms"]), removes_data_files(summary))
        )
    oldest = min(int(s.get("sequence-number", 0)) for s in snapshots)
    for seq in range(oldest + 1, newest + 1):
        found = known.get(seq)
        if found is None:
            return False
        ts, removes = found
        if removes and ts < cutoff:
            return False
    return True


def _snapshot_log(log: list[SnapshotLogEntry], keep: set[int], gone: set[int]) -> list[SnapshotLogEntry]:
    """Iceberg's ``updateSnapshotLog``: entries of kept snapshots stay, and an entry of a removed one
    drops every entry before it (no gap in the history of what was current when)."""
    out: list[SnapshotLogEntry] = []
    for entry in log:
        if entry.snapshot_id in keep:
            out.append(entry)
        elif entry.snapshot_id in gone:
            out.clear()
    return out


# -- after the commit --------------------------------------------------------------------------


def clean_up(
    io: FileIO, root: Location, committed: TableMetadata, expiry: Expiry, written: Sequence[Location] = ()
) -> int:
    """Delete what no retained metadata file references any more (see the module docstring); returns
    how many files were deleted. ``written``: the files this run wrote, of which those of snapshots
    expired in the same run (a first conversion or a catch-up of many commits) were never referenced
    by any committed file. Runs after the commit point: a failure is a warning, never an error (the
    commit stands, and what was not deleted is only an orphan)."""
    if not expiry.dropped_metadata and not expiry.removed_snapshots:
        return 0
    try:
        deleted = _unreferenced_new(io, root, committed, written)
        if expiry.dropped_metadata:
            deleted += _clean_up(io, root, committed, expiry)
        return deleted
    except (OSError, TableReadError, ValueError, KeyError, TypeError) as err:
        warnings.warn(
            f"Iceberg metadata of {root} committed; removing files it no longer references failed "
            f"({type(err).__name__}: {err}); they stay as unreferenced files",
            IcebergSyncWarning,
            stacklevel=2,
        )
        return 0


def _unreferenced_new(
    io: FileIO, root: Location, committed: TableMetadata, written: Sequence[Location]
) -> int:
    """Delete the files this run wrote that no retained snapshot references: no other metadata file
    can name them, so the retained snapshots this run made are the only ones whose lists are read."""
    if not written:
        return 0
    state = committed.properties.get(PROP_DELTA_STATE)  # the emitter's record: named by a property
    new = {uri(p): p for p in written if state is None or p.name != state}
    referenced: set[str] = set()
    delete_manifests: list[str] = []
    for s in committed.snapshots:
        if s.manifest_list not in new:
            continue
        referenced.add(s.manifest_list)
        for row in _manifest_list(io, root, s.manifest_list) or []:
            referenced.add(str(row["manifest_path"]))
            if int(row.get("content") or 0) == DELETES:
                delete_manifests.append(str(row["manifest_path"]))
    unreferenced = {u for u in new if u not in referenced}
    if not unreferenced:
        return 0
    if any(not u.endswith(".avro") for u in unreferenced):  # a delete file: is it still named?
        for m in delete_manifests:
            unreferenced -= _delete_file_paths(io, root, m, live_only=False)
    return io.delete(_owned(io, root, sorted(unreferenced)))


def read_metadata(io: FileIO, root: Location, file_uri: str) -> dict[str, Any] | None:
    """A metadata file named in ``metadata-log`` as JSON; None when it is gone."""
    try:
        doc = json.loads(io.new_input(local(file_uri, root)).read().decode("utf-8"))
    except (FileNotFoundError, ValueError):  # gone, or not a metadata file: it leaves the log
        return None
    return doc if isinstance(doc, dict) else None


def _snapshots_of(doc: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [s for s in (doc or {}).get("snapshots") or [] if isinstance(s, dict)]


def _clean_up(io: FileIO, root: Location, committed: TableMetadata, expiry: Expiry) -> int:
    # The oldest retained snapshot: in the oldest retained metadata file (its snapshots reach back
    # furthest) or, with no log, in the committed file.
    retained = [s.to_json() for s in committed.snapshots] + expiry.oldest_retained
    if not retained:
        return 0
    oldest = min(retained, key=lambda s: int(s.get("sequence-number", 0)))
    horizon = int(oldest.get("sequence-number", 0))
    retained_lists = {str(s["manifest-list"]) for s in retained}

    # Snapshots of the metadata files that left the log and of no retained file. Many dropped files
    # (a first sync with a bound on a long history) are read at the two ends only: a snapshot listed
    # by neither is left as an orphan, never deleted while referenced.
    dropped = expiry.dropped_metadata
    readable = dropped if len(dropped) <= 8 else [dropped[0], dropped[-1]]
    candidates: dict[str, dict[str, Any]] = {}
    for file_uri in readable:
        for s in _snapshots_of(read_metadata(io, root, file_uri)):
            if int(s.get("sequence-number", 0)) < horizon and str(s["manifest-list"]) not in retained_lists:
                candidates[str(s["manifest-list"])] = s
    expired_manifests: dict[str, int] = {}  # manifest uri -> content
    lists: list[str] = []
    for list_uri in candidates:
        rows = _manifest_list(io, root, list_uri)
        if rows is None:
            continue  # gone already (an earlier clean-up stopped half-way)
        lists.append(list_uri)
        for row in rows:
            expired_manifests[str(row["manifest_path"])] = int(row.get("content") or 0)
    kept_rows = _manifest_list(io, root, str(oldest["manifest-list"])) or []
    kept_manifests = {str(r["manifest_path"]): int(r.get("content") or 0) for r in kept_rows}
    manifests = {m: c for m, c in expired_manifests.items() if m not in kept_manifests}

    delete_files: set[str] = set()
    for m, content in manifests.items():
        if content == DELETES:
            delete_files |= _delete_file_paths(io, root, m, live_only=False)
    if delete_files:
        for m, content in kept_manifests.items():
            if content == DELETES:
                delete_files -= _delete_file_paths(io, root, m, live_only=True)

    doomed = [*sorted(delete_files), *sorted(manifests), *lists]
    if expiry.retention.delete_after_commit:
        doomed += dropped  # last: a metadata file outlives every file it names
    return io.delete(_owned(io, root, doomed))


def _manifest_list(io: FileIO, root: Location, list_uri: str) -> list[dict[str, Any]] | None:
    try:
        rows, _ = read_avro(local(list_uri, root), io=io)
    except FileNotFoundError:
        return None
    return rows


def _delete_file_paths(io: FileIO, root: Location, manifest_uri: str, *, live_only: bool) -> set[str]:
    """The delete files (position deletes, deletion-vector Puffin files) a delete manifest names."""
    try:
        rows, _ = read_avro(local(manifest_uri, root), io=io)
    except FileNotFoundError:
        return set()
    return {str(r["data_file"]["file_path"]) for r in rows if not (live_only and int(r["status"]) == DELETED)}


def _owned(io: FileIO, root: Location, uris: Iterable[str]) -> list[Location]:
    """The locations of ``uris`` that lie inside ``metadata/``; anything else is never deleted."""
    out: list[Location] = []
    for u in uris:
        try:
            out.append(owned(root, local(u, root), "a file to delete", io=io))
        except (CompatViolation, ValueError):
            continue
    return out
