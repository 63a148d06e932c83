"""Snapshot producers driven directly: kinds refuse what they do not do, each returns its changes
without touching the table, one transaction applies and commits them or aborts leaving nothing behind.

Position-delete files are added here through the producer API itself (a real v2 position-delete
Parquet file; a v2 table cannot take deletion vectors), then read back by pyiceberg and DuckDB, which
must drop exactly the deleted rows. No Spark: the Delta logs are written by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable

from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.deltalog.actions import Metadata, Protocol
from icecompat_writer.errors import ConcurrentWriteError
from icecompat_writer.iceberg import write_iceberg_metadata
from icecompat_writer.iceberg.avro import data_file_record, read_avro
from icecompat_writer.iceberg.metadata import (
    AddSnapshot,
    SetProperties,
    SetSnapshotRef,
    TableMetadata,
)
from icecompat_writer.iceberg.producers import (
    Append,
    Delete,
    DeleteFile,
    MetadataOnly,
    Overwrite,
    Replace,
    SnapshotChanges,
    SnapshotProducer,
    producer_for,
)
from icecompat_writer.iceberg.table import IcebergTable
from icecompat_writer.iceberg.transaction import Transaction
from icecompat_writer.storage import io_for

from . import test_synthetic as ts
from ._support import duckdb_rows, latest_metadata, metadata_json, normalise, static_table

# Reserved field ids of a position-delete file (spec "Position Delete Files").
FILE_PATH_ID, POS_ID = 2147483546, 2147483545


def _table(root: Path) -> None:
    """A v2 table of two files: a.parquet ids 1-4, b.parquet id 5."""
    mapped = ts._mapped(ts.PLAIN_SCHEMA)
    a = ts._data_file(root, "a.parquet", [(1, "a"), (2, "b"), (3, "c"), (4, "d")], True)
    b = ts._data_file(root, "b.parquet", [(5, "e")], True)
    ts._commit(root, 0, ts.PROTOCOL_V7, ts._metadata(mapped, ts.COMPAT), a, b)
    write_iceberg_metadata(root)


def _open(root: Path) -> tuple[IcebergTable, tuple[int, Path]]:
    """The table as the emitter holds it between commits, and its current metadata file."""
    current = latest_metadata(root)
    meta = TableMetadata.from_json(json.loads(current.read_text()))
    snap = read_snapshot(root, io=io_for(root))
    table = IcebergTable(root, meta, snap.metadata.id, io=io_for(root))
    table.set_delta_state(snap.protocol, snap.metadata, snap.version)
    table.resume()
    return table, (int(current.name[1:-14]), current)


def _commit(table: IcebergTable, previous: tuple[int, Path], producer: SnapshotProducer) -> SnapshotChanges:
    """Produce one snapshot and commit it as the next metadata file."""
    changes = producer.produce()
    with Transaction(table, previous) as tx:
        tx.apply(changes)
        tx.commit()
    return changes


def _position_deletes(root: Path, name: str, data_uri: str, positions: list[int]) -> DeleteFile:
    schema = pa.schema(
        [
            pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": str(FILE_PATH_ID).encode()}),
            pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": str(POS_ID).encode()}),
        ]
    )
    path = root / "metadata" / name
    pq.write_table(pa.table([[data_uri] * len(positions), positions], schema=schema), path)
    record = data_file_record(
        file_path=f"file://{path}",
        partition={},
        record_count=len(positions),
        file_size=path.stat().st_size,
        value_counts=None,
        null_value_counts=None,
        lower_bounds=None,
        upper_bounds=None,
    )
    record["content"] = 1
    record["referenced_data_file"] = data_uri
    return DeleteFile(record)


def _ids(root: Path) -> list[int]:
    return sorted(r["id"] for r in normalise(static_table(root).scan().to_arrow()))


def test_position_deletes_are_applied_by_readers_and_replaced_per_data_file(tmp_path: Path) -> None:
    _table(tmp_path)
    a_uri = f"file://{tmp_path}/a.parquet"

    table, previous = _open(tmp_path)
    first = _position_deletes(tmp_path, "d1.parquet", a_uri, [1])
    producer = Delete(table, delta_version=1, timestamp_ms=1_700_000_001_000, delta_operation="DELETE")
    changes = _commit(table, previous, producer.add_position_deletes([first]))
    assert changes.info.operation == "delete"
    assert _ids(tmp_path) == [1, 3, 4, 5]
    assert sorted(r["id"] for r in duckdb_rows(tmp_path)) == [1, 3, 4, 5]
    snap = metadata_json(tmp_path)["snapshots"][-1]
    assert snap["sequence-number"] == 1
    assert (snap["summary"]["total-delete-files"], snap["summary"]["total-position-deletes"]) == ("1", "1")
    planned = {d.file_path for t in static_table(tmp_path).scan().plan_files() for d in t.delete_files}
    assert planned == {first.path}

    # A second delete file for the same data file replaces the first (it carries every position).
    table, previous = _open(tmp_path)
    second = _position_deletes(tmp_path, "d2.parquet", a_uri, [1, 3])
    producer = Delete(table, delta_version=2, timestamp_ms=1_700_000_002_000, delta_operation="DELETE")
    _commit(table, previous, producer.add_position_deletes([second]))
    assert _ids(tmp_path) == [1, 3, 5]
    summary = metadata_json(tmp_path)["snapshots"][-1]["summary"]
    assert (summary["total-delete-files"], summary["total-position-deletes"]) == ("1", "2")
    assert summary["removed-delete-files"] == "1"
    planned = {d.file_path for t in static_table(tmp_path).scan().plan_files() for d in t.delete_files}
    assert planned == {second.path}

    # Removing the data file removes its delete file with it.
    table, previous = _open(tmp_path)
    producer = Delete(table, delta_version=3, timestamp_ms=1_700_000_003_000, delta_operation="DELETE")
    _commit(table, previous, producer.remove_files([a_uri]))
    assert _ids(tmp_path) == [5]
    summary = metadata_json(tmp_path)["snapshots"][-1]["summary"]
    assert (summary["total-delete-files"], summary["deleted-data-files"], summary["total-data-files"]) == (
        "0",
        "1",
        "1",
    )


def test_each_producer_refuses_what_its_kind_does_not_do(tmp_path: Path) -> None:
    _table(tmp_path)
    table, _ = _open(tmp_path)
    with pytest.raises(ValueError, match="Append snapshot removes no data file"):
        Append(table, delta_version=1, timestamp_ms=0, delta_operation=None).remove_files(["file:///x"])
    with pytest.raises(ValueError, match="MetadataOnly snapshot adds no delete file"):
        MetadataOnly(table, delta_version=1, timestamp_ms=0, delta_operation=None).add_position_deletes(
            [_position_deletes(tmp_path, "d.parquet", f"file://{tmp_path}/a.parquet", [0])]
        )
    with pytest.raises(ValueError, match="not a position-delete file"):
        record = data_file_record(
            file_path="file:///d.parquet",
            partition={},
            record_count=1,
            file_size=1,
            value_counts=None,
            null_value_counts=None,
            lower_bounds=None,
            upper_bounds=None,
        )
        Delete(table, delta_version=1, timestamp_ms=0, delta_operation=None).add_position_deletes(
            [DeleteFile(record)]
        )
    assert [producer_for(a, r, d).operation for a, r, d in [(True, False, True), (False, True, True)]] == [
        "append",
        "delete",
    ]
    assert [producer_for(a, r, d).operation for a, r, d in [(True, True, True), (True, True, False)]] == [
        "overwrite",
        "replace",
    ]
    assert producer_for(False, False, True) is MetadataOnly


def _listing(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "metadata").iterdir())}


def _new_file(table: IcebergTable, root: Path, name: str, rows: list[tuple[int, str]], version: int) -> Any:
    """A Delta ``add`` of a new Parquet file, as the table turns it into a data file to add."""
    return table.new_files([ts._data_file(root, name, rows, True)["add"]], version)


def test_a_producer_returns_its_changes_and_leaves_the_table_as_it_was(tmp_path: Path) -> None:
    _table(tmp_path)
    table, previous = _open(tmp_path)
    before_meta, before_files, before_disk = table.metadata.to_json(), table.files, _listing(tmp_path)
    a_uri, b_uri = f"file://{tmp_path}/a.parquet", f"file://{tmp_path}/b.parquet"
    parent = table.metadata.current_snapshot_id
    new = _new_file(table, tmp_path, "c.parquet", [(6, "f"), (7, "g")], 1)

    producer = Overwrite(table, delta_version=1, timestamp_ms=1_700_000_001_000, delta_operation="MERGE")
    changes = producer.add_files(new).remove_files([a_uri]).produce()

    # Nothing of the table changed: its metadata, its live files, and no metadata file was committed.
    assert table.metadata.to_json() == before_meta
    assert table.files is before_files and table.files.totals == (2, 5, before_files.totals[2])
    assert {n for n in _listing(tmp_path) if n.endswith(".json") or n.endswith(".text")} == {
        n for n in before_disk if n.endswith(".json") or n.endswith(".text")
    }
    # The changes: one snapshot of the Delta version, on top of the current one, and its files.
    snap = changes.snapshot
    assert (snap.sequence_number, snap.parent_snapshot_id, snap.operation) == (1, parent, "overwrite")
    assert changes.info.operation == "overwrite"
    assert (changes.info.added_files, changes.info.deleted_files) == (1, 1)
    assert changes.summary["deleted-records"] == "4" and changes.summary["added-records"] == "2"
    assert changes.summary["total-data-files"] == "2" and changes.summary["total-records"] == "3"
    assert changes.files.totals[:2] == (2, 3)
    live, _ = changes.files.index()
    assert set(live) == {b_uri, new[0].path}
    assert [type(u) for u in changes.updates] == [AddSnapshot, SetSnapshotRef, SetProperties]
    assert changes.updates[2] == SetProperties(
        (("icecompat.delta-version", "1"), ("icecompat.delta-table-id", table.delta_table_id))
    )
    # written: the new manifest, the rewritten one (a.parquet DELETED, b.parquet EXISTING), the list.
    written = [p.name for p in changes.written]
    assert len(written) == 3 and written[-1].startswith(f"snap-{snap.snapshot_id}-")
    assert all((tmp_path / "metadata" / n).is_file() and n not in before_disk for n in written)
    listed, _ = read_avro(changes.written[-1], io=io_for(changes.written[-1]))
    assert [m["manifest_path"] for m in listed] == [m.uri for m in changes.manifests]
    rewritten, _ = read_avro(changes.written[1], io=io_for(changes.written[1]))
    assert sorted((r["status"], r["data_file"]["file_path"]) for r in rewritten) == [(0, b_uri), (2, a_uri)]

    # Aborted: every file the attempt wrote is gone, the tree is byte for byte what it was.
    Transaction(table, previous).abort()
    assert _listing(tmp_path) == before_disk


def test_one_transaction_applies_the_changes_in_order_and_commits_once(tmp_path: Path) -> None:
    _table(tmp_path)
    table, previous = _open(tmp_path)
    new = _new_file(table, tmp_path, "c.parquet", [(6, "f")], 1)
    with Transaction(table, previous) as tx:
        first = Append(table, delta_version=1, timestamp_ms=1_700_000_001_000, delta_operation="WRITE")
        tx.apply(first.add_files(new).produce())
        # The next producer builds on the applied snapshot (parent, live files), before any commit.
        again = Replace(table, delta_version=2, timestamp_ms=1_700_000_000_000, delta_operation="OPTIMIZE")
        second = again.add_files(_new_file(table, tmp_path, "d.parquet", [(6, "f")], 2))
        second_changes = second.remove_files([new[0].path]).produce()
        tx.apply(second_changes)
        tx.apply(MetadataOnly(table, delta_version=3, timestamp_ms=0, delta_operation=None).produce())
        number, path = tx.commit()
    meta = metadata_json(tmp_path)
    assert (number, path.name) == (2, "v2.metadata.json") and latest_metadata(tmp_path) == path
    snaps = meta["snapshots"]
    assert [s["summary"]["operation"] for s in snaps] == ["append", "append", "replace", "append"]
    assert [s.get("parent-snapshot-id") for s in snaps[1:]] == [s["snapshot-id"] for s in snaps[:-1]]
    assert meta["current-snapshot-id"] == snaps[-1]["snapshot-id"] == meta["refs"]["main"]["snapshot-id"]
    assert [e["snapshot-id"] for e in meta["snapshot-log"]] == [s["snapshot-id"] for s in snaps]
    assert meta["last-sequence-number"] == 3 and meta["properties"]["icecompat.delta-version"] == "3"
    # A commit older than its parent keeps the snapshot timeline monotonic.
    assert snaps[2]["timestamp-ms"] == snaps[1]["timestamp-ms"] == 1_700_000_001_000
    assert second_changes.summary["total-data-files"] == snaps[3]["summary"]["total-data-files"] == "3"
    assert _ids(tmp_path) == [1, 2, 3, 4, 5, 6]
    with pytest.raises(ValueError, match="committed"):
        tx.apply(second_changes)


def test_a_lost_race_aborts_and_removes_every_file_the_attempt_wrote(tmp_path: Path) -> None:
    _table(tmp_path)
    table, previous = _open(tmp_path)
    before = _listing(tmp_path)
    rival = tmp_path / "metadata" / "v2.metadata.json"
    rival.write_bytes(b"{}")  # another run committed version 2 first
    producer = Delete(table, delta_version=1, timestamp_ms=1_700_000_001_000, delta_operation="DELETE")
    changes = producer.remove_files([f"file://{tmp_path}/b.parquet"]).produce()
    assert changes.written and all(p.is_file() for p in changes.written)
    with pytest.raises(ConcurrentWriteError, match="another conversion committed first"):
        with Transaction(table, previous) as tx:
            tx.apply(changes)
            tx.commit()
    assert _listing(tmp_path) == {**before, "v2.metadata.json": b"{}"}


def test_the_delta_state_is_recorded_through_updates_returned_first(tmp_path: Path) -> None:
    delta_meta = Metadata.from_json(ts._metadata(ts._mapped(ts.PLAIN_SCHEMA), ts.COMPAT)["metaData"])
    protocol = Protocol.from_json(ts.PROTOCOL_V7["protocol"])
    table = IcebergTable.fresh(tmp_path, 2, delta_meta, io=io_for(tmp_path))
    before = table.metadata.to_json()
    updates = table.delta_state_updates(protocol, delta_meta, 0)
    assert table.metadata.to_json() == before  # nothing recorded until the updates are applied
    assert [type(u).__name__ for u in updates] == [
        "AddSchema",
        "AddPartitionSpec",
        "SetCurrentSchema",
        "SetDefaultSpec",
        "RaiseLastColumnId",
        "SetProperties",
    ]
    table.metadata.apply(updates)
    meta = table.metadata
    assert (meta.current_schema_id, table.schema_id, meta.default_spec_id, table.spec_id) == (0, 0, 0, 0)
    assert [f["name"] for f in meta.schema(0).json["fields"]] == ["id", "v"] and meta.last_column_id == 2
    assert json.loads(meta.properties["schema.name-mapping.default"])[0]["names"] == ["id"]
    # The same Delta state again: nothing new to add, the existing schema and spec are reused.
    again = table.delta_state_updates(protocol, delta_meta, 1)
    assert [type(u).__name__ for u in again][:2] == ["SetCurrentSchema", "SetDefaultSpec"]
    table.metadata.apply(again)
    assert (len(meta.schemas), len(meta.partition_specs)) == (1, 1)


def test_a_failure_after_the_commit_point_removes_nothing(tmp_path: Path) -> None:
    _table(tmp_path)
    table, previous = _open(tmp_path)
    hint = tmp_path / "metadata" / "version-hint.text"
    hint.unlink()
    hint.mkdir()  # the version hint cannot be written: the failure comes after the metadata file
    producer = Delete(table, delta_version=1, timestamp_ms=1_700_000_001_000, delta_operation="DELETE")
    changes = producer.remove_files([f"file://{tmp_path}/b.parquet"]).produce()
    with pytest.raises(IsADirectoryError):
        with Transaction(table, previous) as tx:
            tx.apply(changes)
            tx.commit()
    committed = tmp_path / "metadata" / "v2.metadata.json"
    assert tx.committed == (2, committed) and all(p.is_file() for p in changes.written)
    with pytest.raises(ValueError, match="cannot be aborted"):
        tx.abort()
    hint.rmdir()
    # The committed metadata is whole: a reader finds every file it references.
    table_read = StaticTable.from_metadata(str(committed))
    assert sorted(r["id"] for r in table_read.scan().to_arrow().to_pylist()) == [1, 2, 3, 4]
