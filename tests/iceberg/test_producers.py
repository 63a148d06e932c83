"""Snapshot producers driven directly: kinds refuse what they do not do, and delete files are applied.

Delta commits with deletion vectors are refused before any producer runs, so position-delete files are
added here through the producer API itself (a real v2 position-delete Parquet file), then read back by
pyiceberg and DuckDB, which must drop exactly the deleted rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.iceberg import write_iceberg_metadata
from icecompat_writer.iceberg.avro import data_file_record
from icecompat_writer.iceberg.metadata import TableMetadata
from icecompat_writer.iceberg.producers import Append, Delete, DeleteFile, MetadataOnly, producer_for
from icecompat_writer.iceberg.table import IcebergTable

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
    snap = read_snapshot(root)
    table = IcebergTable(root, meta, snap.metadata.id)
    table.set_delta_state(snap.protocol, snap.metadata, snap.version)
    table.resume()
    return table, (int(current.name[1:-14]), current)


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
    info = Delete(table, delta_version=1, timestamp_ms=1_700_000_001_000, delta_operation="DELETE")
    info = info.add_position_deletes([first]).commit()
    table.commit(previous)
    assert info.operation == "delete"
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
    Delete(
        table, delta_version=2, timestamp_ms=1_700_000_002_000, delta_operation="DELETE"
    ).add_position_deletes([second]).commit()
    table.commit(previous)
    assert _ids(tmp_path) == [1, 3, 5]
    summary = metadata_json(tmp_path)["snapshots"][-1]["summary"]
    assert (summary["total-delete-files"], summary["total-position-deletes"]) == ("1", "2")
    assert summary["removed-delete-files"] == "1"
    planned = {d.file_path for t in static_table(tmp_path).scan().plan_files() for d in t.delete_files}
    assert planned == {second.path}

    # Removing the data file removes its delete file with it.
    table, previous = _open(tmp_path)
    Delete(table, delta_version=3, timestamp_ms=1_700_000_003_000, delta_operation="DELETE").remove_files(
        [a_uri]
    ).commit()
    table.commit(previous)
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
