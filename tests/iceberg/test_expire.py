"""Bounded Iceberg history in step with Delta's retention (icecompat_writer.iceberg.expire).

Synthetic Delta logs (pyarrow-written Parquet, hand-written commits with chosen commit times), the
sync after each commit, and ``VACUUM`` as Delta does it: removed data files whose removal is older
than ``delta.deletedFileRetentionDuration`` are deleted. After every step no file that a retained
snapshot or a retained metadata file names is missing, every retained snapshot reads with pyiceberg
to the rows Delta had at its version, and ``metadata/`` holds nothing that no retained metadata file
names.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.table import StaticTable

from icecompat_writer.iceberg import write_iceberg_metadata
from icecompat_writer.iceberg.expire import (
    DELTA_DELETED_FILE_RETENTION,
    DELTA_LOG_RETENTION,
    PROP_DELETE_AFTER_COMMIT,
    PROP_MAX_SNAPSHOTS,
    PROP_MIN_SNAPSHOTS_TO_KEEP,
    PROP_PREVIOUS_VERSIONS_MAX,
    PROP_VACUUM_MARGIN_MS,
    Retention,
    parse_interval_ms,
)
from icecompat_writer.iceberg.metadata import PROP_DELTA_STATE, Snapshot, SnapshotRef, TableMetadata

from ._support import latest_metadata, read_avro

HOUR_MS = 3600 * 1000
DAY_MS = 24 * HOUR_MS

SCHEMA = {
    "type": "struct",
    "fields": [
        {
            "name": "id",
            "type": "long",
            "nullable": True,
            "metadata": {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "id"},
        }
    ],
}
PROTOCOL = {
    "protocol": {
        "minReaderVersion": 2,
        "minWriterVersion": 7,
        "writerFeatures": ["columnMapping", "icebergCompatV2"],
    }
}


def _metadata_action(conf: dict[str, str]) -> dict[str, Any]:
    return {
        "metaData": {
            "id": "9f1c2b7e-3d4a-4c55-8e61-1a2b3c4d5e6f",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(SCHEMA),
            "partitionColumns": [],
            "configuration": {
                "delta.columnMapping.mode": "name",
                "delta.enableIcebergCompatV2": "true",
                "delta.columnMapping.maxColumnId": "1",
                **conf,
            },
            "createdTime": 0,
        }
    }


@dataclass
class Table:
    """A synthetic Delta table and what Delta holds at each version (for the checks)."""

    root: Path
    retention_ms: int
    version: int = -1
    next_file: int = 0
    live: dict[str, int] = field(default_factory=dict)  # path -> its one id value
    removed: dict[str, int] = field(default_factory=dict)  # path -> deletionTimestamp
    rows_at: dict[int, list[int]] = field(default_factory=dict)  # Delta version -> ids

    def commit(self, ts: int, *actions: dict[str, Any]) -> None:
        self.version += 1
        log = self.root / "_delta_log"
        log.mkdir(parents=True, exist_ok=True)
        info = {"commitInfo": {"timestamp": ts, "operation": "WRITE"}}
        lines = [json.dumps(a) for a in (info, *actions)]
        (log / f"{self.version:020d}.json").write_text("\n".join(lines) + "\n")
        self.rows_at[self.version] = sorted(self.live.values())

    def change(self, ts: int, adds: int, removes: int) -> None:
        actions: list[dict[str, Any]] = []
        for path in sorted(self.live)[:removes]:
            del self.live[path]
            self.removed[path] = ts
            actions.append({"remove": {"path": path, "deletionTimestamp": ts, "dataChange": True}})
        for _ in range(adds):
            n = self.next_file
            self.next_file += 1
            name = f"part-{n:05d}.parquet"
            field_ = pa.field("id", pa.int64()).with_metadata({b"PARQUET:field_id": b"1"})
            pq.write_table(pa.table([[n]], schema=pa.schema([field_])), self.root / name)
            self.live[name] = n
            size = (self.root / name).stat().st_size
            stats = json.dumps({"numRecords": 1})
            actions.append(
                {
                    "add": {
                        "path": name,
                        "partitionValues": {},
                        "size": size,
                        "modificationTime": ts,
                        "dataChange": True,
                        "stats": stats,
                    }
                }
            )
        self.commit(ts, *actions)

    def vacuum(self, now_ms: int) -> None:
        """Delta's VACUUM: removed files whose removal is older than the retention are deleted."""
        for path, removed_at in list(self.removed.items()):
            if removed_at < now_ms - self.retention_ms:
                (self.root / path).unlink()
                del self.removed[path]


def _referenced(root: Path, doc: dict[str, Any], data_of: set[int] | None = None) -> set[Path]:
    """Every file a metadata document names that must exist: manifest lists, manifests, and the
    live entries of each manifest (data and delete files; with ``data_of``, of those snapshots only)."""
    out: set[Path] = set()
    for s in doc.get("snapshots") or []:
        ml = Path(s["manifest-list"].removeprefix("file://"))
        assert ml.exists(), f"missing manifest list {ml}"
        out.add(ml)
        rows, _ = read_avro(s["manifest-list"])
        for row in rows:
            mp = Path(row["manifest_path"].removeprefix("file://"))
            assert mp.exists(), f"missing manifest {mp}"
            out.add(mp)
            entries, _ = read_avro(row["manifest_path"])
            for e in entries:
                if e["status"] != 2 and (data_of is None or s["snapshot-id"] in data_of):
                    fp = Path(e["data_file"]["file_path"].removeprefix("file://"))
                    assert fp.exists(), f"missing file {fp} of snapshot {s['snapshot-id']}"
                    out.add(fp)
    return out


def _check(table: Table, props: dict[str, str]) -> None:
    """The invariants after any step (see the module docstring)."""
    meta_dir = table.root / "metadata"
    if not meta_dir.exists():
        return
    current = latest_metadata(table.root)
    doc = json.loads(current.read_text())
    retained = [current] + [Path(e["metadata-file"].removeprefix("file://")) for e in doc["metadata-log"]]
    names: set[Path] = set(retained)
    current_ids = {s["snapshot-id"] for s in doc["snapshots"]}
    for i, path in enumerate(retained):
        assert path.exists(), f"missing retained metadata file {path}"
        # The previous metadata file (the last log entry) always stays, as Iceberg keeps it: the data
        # files of the snapshots only it lists are VACUUM's; everything else must be there.
        previous = i == len(retained) - 1 and i > 0
        kept = json.loads(path.read_text())
        names |= _referenced(table.root, kept, current_ids if previous else None)
        state = (kept.get("properties") or {}).get(PROP_DELTA_STATE)  # the emitter's own record
        if state is not None:
            assert i > 0 or (meta_dir / state).exists(), f"missing {state}"
            names.add(meta_dir / state)
    # every retained snapshot plans with pyiceberg the files Delta had at its version (each file holds
    # its one id); the oldest and the current one are read to rows
    static = StaticTable.from_metadata(str(current))
    for i, s in enumerate(doc["snapshots"]):
        scan = static.scan(snapshot_id=s["snapshot-id"])
        files = [t.file.file_path.rsplit("/", 1)[-1] for t in scan.plan_files()]
        assert sorted(int(f[5:10]) for f in files) == table.rows_at[s["sequence-number"]]
        if i in (0, len(doc["snapshots"]) - 1):
            assert sorted(scan.to_arrow().column("id").to_pylist()) == table.rows_at[s["sequence-number"]]
    # the current snapshot is the last Delta version, and the bounds hold
    assert doc["snapshots"][-1]["sequence-number"] == table.version
    assert doc["refs"]["main"]["snapshot-id"] == doc["current-snapshot-id"]
    assert [e["snapshot-id"] for e in doc["snapshot-log"]][-1] == doc["current-snapshot-id"]
    assert {e["snapshot-id"] for e in doc["snapshot-log"]} <= {s["snapshot-id"] for s in doc["snapshots"]}
    cap = int(props[PROP_MAX_SNAPSHOTS])
    if cap > 0:
        assert len(doc["snapshots"]) <= max(cap, int(props[PROP_MIN_SNAPSHOTS_TO_KEEP]))
    assert len(doc["metadata-log"]) <= int(props[PROP_PREVIOUS_VERSIONS_MAX])
    # metadata/ holds only what retained metadata files name (and old metadata files when kept)
    on_disk = {p for p in meta_dir.iterdir() if p.name != "version-hint.text" and not p.name.startswith(".")}
    leftovers = on_disk - names
    if props[PROP_DELETE_AFTER_COMMIT] == "true":
        assert not leftovers, sorted(p.name for p in leftovers)
    else:
        assert all(p.name.endswith(".metadata.json") for p in leftovers), sorted(p.name for p in leftovers)


STEP = st.one_of(
    st.tuples(st.just("commit"), st.integers(0, 3), st.integers(0, 2), st.integers(0, 36)),
    st.tuples(st.just("vacuum"), st.just(0), st.just(0), st.integers(0, 36)),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(STEP, min_size=3, max_size=14),
    max_snapshots=st.sampled_from(["0", "2", "4", "100"]),
    min_keep=st.sampled_from(["1", "3"]),
    versions_max=st.sampled_from(["1", "2", "5"]),
    delete_after=st.sampled_from(["true", "false"]),
)
def test_history_stays_readable_and_bounded_under_vacuum(
    tmp_path_factory: Any,
    steps: list[tuple[str, int, int, int]],
    max_snapshots: str,
    min_keep: str,
    versions_max: str,
    delete_after: str,
) -> None:
    root = tmp_path_factory.mktemp("aging")
    props = {
        DELTA_DELETED_FILE_RETENTION: "interval 2 days",
        DELTA_LOG_RETENTION: "interval 4 days",
        PROP_MAX_SNAPSHOTS: max_snapshots,
        PROP_MIN_SNAPSHOTS_TO_KEEP: min_keep,
        PROP_PREVIOUS_VERSIONS_MAX: versions_max,
        PROP_DELETE_AFTER_COMMIT: delete_after,
        PROP_VACUUM_MARGIN_MS: "0",
    }
    table = Table(root, 2 * DAY_MS)
    # The sync expires against the wall clock; every commit and VACUUM of the test happens at or
    # before it, so a VACUUM here is never later than the sync that came before it.
    wall = int(time.time() * 1000)
    clock = wall - 6 * DAY_MS
    table.commit(clock, PROTOCOL, _metadata_action(props))
    table.change(clock, 2, 0)
    write_iceberg_metadata(root)
    _check(table, props)
    for kind, adds, removes, hours in steps:
        clock = min(wall, clock + hours * HOUR_MS)
        if kind == "commit":
            table.change(clock, adds, removes)
            write_iceberg_metadata(root)
        else:
            table.vacuum(clock)
        _check(table, props)


# -- the rules one by one ------------------------------------------------------------------------


def test_delta_intervals_parse() -> None:
    assert parse_interval_ms("interval 7 days") == 7 * DAY_MS
    assert parse_interval_ms("interval 1 hour") == HOUR_MS
    assert parse_interval_ms("INTERVAL 2 weeks 3 hours") == 14 * DAY_MS + 3 * HOUR_MS
    assert parse_interval_ms("30 seconds") == 30_000
    assert parse_interval_ms("interval 5 fortnights") is None
    assert parse_interval_ms("soon") is None


def _chain(timestamps: list[int]) -> TableMetadata:
    meta = TableMetadata.new(2, "u", "file:///t")
    parent = None
    for i, ts in enumerate(timestamps):
        meta.snapshots.append(Snapshot(i + 1, i, ts, f"file:///t/metadata/l{i}.avro", {}, 0, parent))
        parent = i + 1
    meta.current_snapshot_id = parent
    meta.refs = {"main": SnapshotRef(len(timestamps))}
    return meta


def test_the_successor_commit_time_decides_vacuum_safety() -> None:
    now = 100 * DAY_MS
    # snapshot 1 (day 80) was current until snapshot 2 (day 94): its removed files are 6 days old
    meta = _chain([80 * DAY_MS, 94 * DAY_MS, 99 * DAY_MS])
    retention = Retention(vacuum_margin_ms=0)  # Delta's defaults: 7 days of deleted files, 30 of log
    assert retention.retained(meta, now) == {1, 2, 3}
    # a day later VACUUM may delete what snapshot 2 removed: snapshot 1 goes, its ancestors with it
    assert retention.retained(meta, now + 2 * DAY_MS) == {2, 3}
    # min-snapshots-to-keep cannot keep a snapshot whose files VACUUM may delete
    assert Retention(vacuum_margin_ms=0, min_snapshots_to_keep=3).retained(meta, now + 2 * DAY_MS) == {2, 3}
    # the current snapshot is never expired
    assert Retention(max_snapshot_age_ms=0, deleted_file_retention_ms=0).retained(meta, 10**15) == {3}


def test_iceberg_age_and_count_bounds() -> None:
    now = 100 * DAY_MS
    meta = _chain([95 * DAY_MS + i * HOUR_MS for i in range(10)])
    assert len(Retention().retained(meta, now)) == 10
    assert Retention(max_snapshots=4).retained(meta, now) == {7, 8, 9, 10}
    assert Retention(max_snapshots=2, min_snapshots_to_keep=3).retained(meta, now) == {8, 9, 10}
    # max-snapshot-age-ms on the snapshot's own time, min-snapshots-to-keep above it
    assert Retention(max_snapshot_age_ms=5 * DAY_MS - 7 * HOUR_MS).retained(meta, now) == {8, 9, 10}
    assert Retention(max_snapshot_age_ms=0, min_snapshots_to_keep=2).retained(meta, now) == {9, 10}


def test_delta_properties_win_over_iceberg_properties() -> None:
    r = Retention.of(
        {DELTA_DELETED_FILE_RETENTION: "interval 1 day", PROP_MAX_SNAPSHOTS: "5"},
        {PROP_MAX_SNAPSHOTS: "50", PROP_PREVIOUS_VERSIONS_MAX: "0", PROP_MIN_SNAPSHOTS_TO_KEEP: "x"},
    )
    assert r.deleted_file_retention_ms == DAY_MS
    assert r.max_snapshots == 5
    assert r.previous_versions_max == 1  # at least one, as Iceberg's addPreviousFile
    assert r.min_snapshots_to_keep == 1  # not a number: Iceberg's default
    assert r.max_snapshot_age_ms == 30 * DAY_MS  # not set: Delta's log retention
    assert r.delete_after_commit is True


def test_a_long_history_is_bounded_and_stays_readable(tmp_path: Path) -> None:
    """Many quick commits (where time alone bounds nothing): the default count bounds hold."""
    root = tmp_path / "busy"
    table = Table(root, 7 * DAY_MS)
    now = int(time.time() * 1000)
    table.commit(now, PROTOCOL, _metadata_action({PROP_MAX_SNAPSHOTS: "5", PROP_PREVIOUS_VERSIONS_MAX: "3"}))
    for i in range(12):
        table.change(now + i, 1, 1 if i % 3 == 2 else 0)
        write_iceberg_metadata(root)
    doc = json.loads(latest_metadata(root).read_text())
    assert [s["sequence-number"] for s in doc["snapshots"]] == list(range(8, 13))
    assert len(doc["metadata-log"]) == 3
    assert sorted(p.name for p in (root / "metadata").glob("v*.metadata.json")) == sorted(
        f"v{n}.metadata.json" for n in (9, 10, 11, 12)
    )
    props = {
        PROP_MAX_SNAPSHOTS: "5",
        PROP_MIN_SNAPSHOTS_TO_KEEP: "1",
        PROP_PREVIOUS_VERSIONS_MAX: "3",
        PROP_DELETE_AFTER_COMMIT: "true",
    }
    _check(table, props)


def test_a_catalog_behind_is_brought_forward_without_the_expired_snapshots(tmp_path: Path) -> None:
    """The updates a REST catalog gets (pyiceberg applies them here as the catalog would) remove the
    snapshots the sync expired, whose manifest lists are deleted."""
    from pyiceberg.table.update import update_table_metadata

    from icecompat_writer.iceberg.catalogs import _forward

    root = tmp_path / "behind"
    table = Table(root, 7 * DAY_MS)
    now = int(time.time() * 1000)
    table.commit(now, PROTOCOL, _metadata_action({PROP_MAX_SNAPSHOTS: "2"}))
    table.change(now, 1, 0)
    write_iceberg_metadata(root)
    theirs = StaticTable.from_metadata(str(latest_metadata(root))).metadata
    for i in range(3):
        table.change(now + i, 1, 0)
        write_iceberg_metadata(root)
    ours = StaticTable.from_metadata(str(latest_metadata(root))).metadata
    _, updates = _forward(theirs, ours)
    moved = update_table_metadata(theirs, updates)
    assert [s.snapshot_id for s in moved.snapshots] == [s.snapshot_id for s in ours.snapshots]
    assert moved.current_snapshot_id == ours.current_snapshot_id


def test_the_emitters_old_state_records_go_with_the_metadata_files_naming_them(tmp_path: Path) -> None:
    """A metadata change writes a new state record each time; the records of dropped metadata files
    are deleted with them, the current one is kept."""
    root = tmp_path / "changing"
    table = Table(root, 7 * DAY_MS)
    now = int(time.time() * 1000)
    props = {
        PROP_MAX_SNAPSHOTS: "3",
        PROP_MIN_SNAPSHOTS_TO_KEEP: "1",
        PROP_PREVIOUS_VERSIONS_MAX: "2",
        PROP_DELETE_AFTER_COMMIT: "true",
    }
    table.commit(now, PROTOCOL, _metadata_action(props))
    table.change(now, 1, 0)
    write_iceberg_metadata(root)
    for i in range(6):  # each commit changes the table's metadata, then adds a file
        table.commit(now + i, _metadata_action({**props, "user.revision": str(i)}))
        write_iceberg_metadata(root)
        table.change(now + i, 1, 0)
        write_iceberg_metadata(root)
    records = sorted(p.name for p in (root / "metadata").glob("*-delta-state.json"))
    doc = json.loads(latest_metadata(root).read_text())
    files = [Path(e["metadata-file"].removeprefix("file://")) for e in doc["metadata-log"]]
    logged = [json.loads(f.read_text()) for f in files]
    named = {(d.get("properties") or {}).get(PROP_DELTA_STATE) for d in logged}
    named.add(doc["properties"][PROP_DELTA_STATE])
    assert doc["properties"][PROP_DELTA_STATE] in records
    assert set(records) <= named, records
    assert len(records) <= 3
    _check(table, props)
