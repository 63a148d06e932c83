"""Deletion vectors end to end: a table written by compat_write with DVs on, rounds of DELETE, UPDATE and
MERGE in delta-spark (and one commit whose DV is stored inline), converted to Iceberg v3 one Delta
version at a time and read by pyiceberg, DuckDB and delta-spark; the same kinds of commit and OPTIMIZE
synced by the session guard in each format the table property chooses (v3 deletion vectors in Puffin
files, v2 position-delete files); damaged DVs found by the checker and refused by the emitter.
"""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyiceberg.table.deletion_vector import DeletionVector, deletion_vectors_from_puffin_file
from pyiceberg.table.puffin import PuffinFile
from pyroaring import BitMap
from pyspark.sql import SparkSession

from icecompat_writer import compat_write
from icecompat_writer.checking.check import check_table
from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.deltalog.deletion_vectors import (
    DV_MAGIC,
    dv_location,
    read_deletion_vectors,
    z85_encode,
)
from icecompat_writer.errors import CompatViolation
from icecompat_writer.iceberg import write_iceberg_metadata
from icecompat_writer.iceberg.catalogs import sync_catalog
from icecompat_writer.iceberg.posdeletes import FILE_PATH_FIELD_ID, POS_FIELD_ID
from icecompat_writer.jvm.bridge import guard_iceberg_syncs
from icecompat_writer.storage import io_for
from tests.catalogservers import RestCatalogServer, iceberg_java_read
from tests.readerwalk import write_table

from ._support import (
    duckdb_rows,
    latest_metadata,
    live_files_with_lineage,
    metadata_json,
    normalise,
    read_avro,
    spark_rows,
    static_table,
)

pytestmark = pytest.mark.spark

ROUNDS = [
    "DELETE FROM delta.`{p}` WHERE id IN (1, 2, 15)",
    "UPDATE delta.`{p}` SET v = 'u' WHERE id IN (3, 25)",  # a file's DV replaced, another file's first
    "MERGE INTO delta.`{p}` t USING (SELECT * FROM VALUES (4, 'm'), (16, 'm'), (100, 'n') AS s(id, v)) s "
    "ON t.id = s.id WHEN MATCHED AND s.id = 4 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v "
    "WHEN NOT MATCHED THEN INSERT (id, v, part) VALUES (s.id, s.v, 0)",
    "DELETE FROM delta.`{p}` WHERE id >= 30 OR id < 10",  # every row of files that carry DVs
]


@dataclass
class History:
    path: Path
    versions: list[int]


def _portable(positions: list[int]) -> bytes:
    out = struct.pack("<Q", 1 if positions else 0)
    if positions:
        out += struct.pack("<I", 0) + BitMap(positions).serialize()
    return struct.pack("<I", DV_MAGIC) + out


def _inline_dv_commit(spark: SparkSession, path: Path) -> None:
    """Delete one more row of a file that has a DV, storing the new DV inline in the log (delta-spark
    reads such DVs but writes them to files): remove + add of the same file, as delta-spark commits it."""
    snapshot = read_snapshot(path, io=io_for(path))
    add = next(
        a
        for a in snapshot.add_files
        if a.deletion_vector is not None and a.deletion_vector.storage_type == "u"
    )
    dv = add.deletion_vector
    assert dv is not None
    read = read_deletion_vectors(path, [(add.path, dv)], io=io_for(path))
    old = DeletionVector._deserialize_bitmap(read.vectors[add.path].blob[8:-4])
    deleted = sorted(int(p) for p in old[0])
    assert add.num_records is not None
    extra = next(p for p in range(add.num_records) if p not in deleted)
    data = _portable(sorted([*deleted, extra]))
    inline = {"storageType": "i", "pathOrInlineDv": z85_encode(data), "sizeInBytes": len(data),
              "cardinality": len(deleted) + 1}  # fmt: skip
    new_add = {**add.to_json(), "deletionVector": inline, "dataChange": True}
    remove = {"path": add.path, "deletionVector": dv.to_json(), "dataChange": True,
              "deletionTimestamp": 1, "extendedFileMetadata": True,
              "partitionValues": dict(add.partition_values),
              "size": add.size, "baseRowId": add.base_row_id,
              "defaultRowCommitVersion": add.default_row_commit_version}  # fmt: skip
    version = snapshot.version + 1
    info: dict[str, Any] = {"timestamp": 1_900_000_000_000, "operation": "DELETE", "operationParameters": {}}
    if str(snapshot.metadata.configuration.get("delta.enableInCommitTimestamps", "")).lower() == "true":
        info["inCommitTimestamp"] = 1_900_000_000_000
    lines = [{"commitInfo": info}, {"remove": remove}, {"add": new_add}]
    target = path / "_delta_log" / f"{version:020d}.json"
    target.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.fixture(scope="module")
def history(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    path = tmp_path_factory.mktemp("dv") / "t"
    df = spark.range(0, 40, 1, 4).selectExpr(
        "id", "CAST(id % 3 AS STRING) AS v", "CAST(id % 2 AS INT) AS part"
    )
    compat_write(
        df, str(path), profile="v3", partition_by="part", properties={"delta.enableDeletionVectors": "true"}
    )
    for statement in ROUNDS:
        spark.sql(statement.format(p=path))
    _inline_dv_commit(spark, path)
    yield History(path, list(range(read_snapshot(path, io=io_for(path)).version + 1)))


def _delta_rows(spark: SparkSession, path: Path, version: int) -> list[dict[str, Any]]:
    return spark_rows(spark.read.format("delta").option("versionAsOf", version).load(str(path)))


def _parquet_positions(df: dict[str, Any]) -> list[int]:
    """The positions of one v2 position-delete file, its schema, order and scope checked against the
    spec ("Position Delete Files") and its manifest entry."""
    assert df["file_format"] == "PARQUET" and df["content"] == 1
    assert "/metadata/" in df["file_path"] and df["file_path"].endswith(".parquet")
    local = Path(df["file_path"].removeprefix("file://"))
    assert local.stat().st_size == df["file_size_in_bytes"]
    table = pq.read_table(local)
    ids = [(f.name, f.type, f.metadata[b"PARQUET:field_id"]) for f in table.schema if f.metadata]
    assert [(n, str(t), int(i)) for n, t, i in ids] == [
        ("file_path", "string", FILE_PATH_FIELD_ID),
        ("pos", "int64", POS_FIELD_ID),
    ]
    assert set(table.column("file_path").to_pylist()) == {df["referenced_data_file"]}
    positions = table.column("pos").to_pylist()
    assert positions == sorted(set(positions)) and len(positions) == df["record_count"]
    lower = {kv["key"]: kv["value"] for kv in df["lower_bounds"]}
    upper = {kv["key"]: kv["value"] for kv in df["upper_bounds"]}
    assert lower[FILE_PATH_FIELD_ID] == upper[FILE_PATH_FIELD_ID] == df["referenced_data_file"].encode()
    return list(positions)


def _live_delete_files(root: Path) -> set[str]:
    """The names of the current snapshot's live delete files."""
    meta = metadata_json(root)
    snap = next(s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"])
    return {
        Path(e["data_file"]["file_path"]).name
        for m in read_avro(snap["manifest-list"])[0]
        if m["content"] == 1
        for e in read_avro(m["manifest_path"])[0]
        if e["status"] != 2
    }


def _delete_positions(root: Path) -> dict[str, list[int]]:
    """The deleted positions of the current snapshot by data file, read from the delete manifests:
    v3 deletion vectors through pyiceberg's Puffin reader (each entry's blob checked against the Puffin
    footer), v2 position-delete files as Parquet."""
    meta = metadata_json(root)
    snap = next(s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"])
    manifests, _ = read_avro(snap["manifest-list"])
    out: dict[str, list[int]] = {}
    for m in manifests:
        if m["content"] != 1:
            continue
        entries, manifest_meta = read_avro(m["manifest_path"])
        assert manifest_meta["content"] == "deletes"
        for e in entries:
            if e["status"] == 2:
                continue
            df = e["data_file"]
            if meta["format-version"] == 2:
                assert df["referenced_data_file"] not in out, "two delete files for one data file"
                out[df["referenced_data_file"]] = _parquet_positions(df)
                continue
            assert df["file_format"] == "PUFFIN" and df["content"] == 1
            assert "/metadata/" in df["file_path"] and df["file_path"].endswith(".puffin")
            puffin_bytes = Path(df["file_path"].removeprefix("file://")).read_bytes()
            assert len(puffin_bytes) == df["file_size_in_bytes"]
            puffin = PuffinFile(puffin_bytes)
            blob = next(b for b in puffin.footer.blobs if b.offset == df["content_offset"])
            assert blob.length == df["content_size_in_bytes"]
            assert blob.properties["referenced-data-file"] == df["referenced_data_file"]
            assert blob.properties["cardinality"] == str(df["record_count"])
            vectors = deletion_vectors_from_puffin_file(puffin)
            (dv,) = [v for v, b in zip(vectors, puffin.footer.blobs, strict=True) if b is blob]
            assert df["referenced_data_file"] not in out, "two DVs for one data file"
            out[df["referenced_data_file"]] = dv.to_vector().to_pylist()
            assert len(out[df["referenced_data_file"]]) == df["record_count"]
    return out


def test_delta_spark_dvs_are_read_exactly(spark: SparkSession, history: History) -> None:
    path = history.path
    snapshot = read_snapshot(path, io=io_for(path))
    with_dvs = [a for a in snapshot.add_files if a.deletion_vector is not None]
    assert {a.deletion_vector.storage_type for a in with_dvs if a.deletion_vector} == {"u", "i"}
    read = read_deletion_vectors(
        path, [(a.path, a.deletion_vector) for a in with_dvs if a.deletion_vector], io=io_for(path)
    )
    assert read.problems == ()
    assert read.requests <= read.files_read  # the DVs of one file: one ranged read
    surviving: dict[str, set[int]] = {}
    for r in (
        spark.read.format("delta")
        .load(str(path))
        .select("_metadata.file_name", "_metadata.row_index")
        .collect()
    ):
        surviving.setdefault(r["file_name"], set()).add(r["row_index"])
    for a in with_dvs:
        assert a.num_records is not None
        blob = read.vectors[a.path].blob
        positions = DeletionVector._deserialize_bitmap(blob[8:-4])
        got = sorted(int(p) for p in positions[0]) if positions else []
        expected = sorted(set(range(a.num_records)) - surviving.get(a.path.rsplit("/", 1)[-1], set()))
        assert got == expected


def test_every_version_reads_the_same_in_iceberg_v3(
    spark: SparkSession, history: History, tmp_path: Path
) -> None:
    """The log is replayed commit by commit into a mirror, converting after each: at every Delta version
    pyiceberg, DuckDB and delta-spark return the same rows, and the Puffin files pass pyiceberg's reader."""
    src, mirror = history.path, tmp_path / "mirror"
    shutil.copytree(src, mirror, ignore=shutil.ignore_patterns("_delta_log"))
    (mirror / "_delta_log").mkdir()
    puffins_before: set[str] = set()
    for version in history.versions:
        shutil.copy(src / "_delta_log" / f"{version:020d}.json", mirror / "_delta_log")
        result = write_iceberg_metadata(mirror)
        assert result.format_version == 3 and result.delta_version == version
        expected = _delta_rows(spark, src, version)
        assert normalise(static_table(mirror).scan().to_arrow()) == expected, f"pyiceberg at v{version}"
        assert duckdb_rows(mirror) == expected, f"DuckDB at v{version}"
        positions = _delete_positions(mirror)
        live = {f["path"] for f in live_files_with_lineage(mirror) if f["content"] == 0}
        assert set(positions) <= live  # a removed data file took its DV with it
        snapshot = read_snapshot(mirror, io=io_for(mirror))
        assert {a.path for a in snapshot.add_files if a.deletion_vector} == {
            p.removeprefix(f"file://{mirror}/") for p in positions
        }
        summary = metadata_json(mirror)["snapshots"][-1]["summary"]
        assert summary["total-delete-files"] == str(len(positions))
        assert summary["total-position-deletes"] == str(sum(len(p) for p in positions.values()))
        puffins = {p.name for p in (mirror / "metadata").glob("*.puffin")}
        assert len(puffins - puffins_before) <= 1  # one Puffin file per converted commit, at most
        puffins_before = puffins
    assert not any(mirror.glob("metadata/*.bin"))

    # Row lineage: each surviving row's Iceberg _row_id is Delta's row id.
    positions = _delete_positions(mirror)
    id_field = static_table(mirror).schema().find_field("id").field_id
    iceberg: dict[int, int] = {}
    for f in live_files_with_lineage(mirror):
        if f["content"] != 0:
            continue  # a deletion vector
        table = pq.read_table(f["path"].removeprefix("file://"))
        by_id = {int(fl.metadata[b"PARQUET:field_id"]): fl.name for fl in table.schema if fl.metadata}
        ids = table.column(by_id[id_field]).to_pylist()
        row_ids = table.column(by_id[2147483540]).to_pylist() if 2147483540 in by_id else [None] * len(ids)
        deleted = set(positions.get(f["path"], []))
        for pos, (ident, rid) in enumerate(zip(ids, row_ids, strict=True)):
            if pos not in deleted:
                iceberg[ident] = rid if rid is not None else f["first_row_id"] + pos
    rows = spark.read.format("delta").load(str(src)).selectExpr("id", "_metadata.row_id AS rid").collect()
    assert iceberg == {r["id"]: r["rid"] for r in rows}


SYNCED_ROUNDS = [
    *ROUNDS[:3],  # DELETE, UPDATE, MERGE
    "OPTIMIZE delta.`{p}`",  # rewrites the files, their DVs purged
    "DELETE FROM delta.`{p}` WHERE id IN (5, 6, 7, 8)",  # DVs on OPTIMIZE's new files
]


@pytest.mark.parametrize("fv", [3, 2])
def test_the_sync_reads_what_delta_spark_reads_after_every_kind_of_commit(
    spark: SparkSession,
    tmp_path: Path,
    rest_catalog: RestCatalogServer,
    monkeypatch: pytest.MonkeyPatch,
    fv: int,
) -> None:
    """A v3-profile table with DVs on and the sync on, its Iceberg format chosen by the table property:
    after each guarded DELETE, UPDATE, MERGE and OPTIMIZE, pyiceberg reads exactly delta-spark's rows,
    and every DV of the log is one delete file of the format (none left once OPTIMIZE purged them).
    Iceberg Java's generic reader reads the last version through the REST catalog."""
    path = tmp_path / f"v{fv}"
    write_table(spark, path, fv)
    assert metadata_json(path)["format-version"] == fv
    written_before: set[str] = set()
    for statement in SYNCED_ROUNDS:
        spark.sql(statement.format(p=path))
        version = read_snapshot(path, io=io_for(path)).version
        synced = [s for s in guard_iceberg_syncs(spark, drain=True) if str(path) in s["table"]]
        assert [(s["version"], s.get("error")) for s in synced] == [(version, None)], statement
        meta = metadata_json(path)
        assert (meta["format-version"], meta["properties"]["icecompat.delta-version"]) == (fv, str(version))
        assert normalise(static_table(path).scan().to_arrow()) == _delta_rows(spark, path, version), statement
        positions = _delete_positions(path)
        snapshot = read_snapshot(path, io=io_for(path))
        with_dv = {a.path: a.deletion_vector.cardinality for a in snapshot.add_files if a.deletion_vector}
        assert with_dv == {p.removeprefix(f"file://{path}/"): len(v) for p, v in positions.items()}
        if statement.startswith("OPTIMIZE"):
            assert positions == {} and meta["snapshots"][-1]["summary"]["operation"] == "replace"
        else:
            assert positions, statement
        if fv == 2:  # one position-delete file per DV the commit adds, each live; none rewritten
            written = {p.name for p in (path / "metadata").glob("*.parquet")}
            log = (path / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
            added = [json.loads(line).get("add") for line in log]
            assert len(written - written_before) == sum(1 for a in added if a and a.get("deletionVector"))
            assert written - written_before <= _live_delete_files(path)
            written_before = written
    if fv == 2:
        monkeypatch.setenv("PYICEBERG_CATALOG__REST__TYPE", "rest")
        monkeypatch.setenv("PYICEBERG_CATALOG__REST__URI", rest_catalog.uri)
        ident = f"dv.v{fv}_{path.parent.name}".replace("-", "_")
        sync_catalog("rest", ident, str(latest_metadata(path)), io=io_for(str(latest_metadata(path))))
        snapshot_id, rows = iceberg_java_read(rest_catalog, ident)
        assert snapshot_id == metadata_json(path)["current-snapshot-id"]
        assert sorted(rows, key=lambda r: r["id"]) == _delta_rows(spark, path, version)


def test_check_and_emitter_name_damaged_dvs(history: History, tmp_path: Path) -> None:
    copy = tmp_path / "damaged"
    shutil.copytree(history.path, copy)
    clean = check_table(copy)
    assert clean.compliant, clean.render_text()
    with_dvs = [a for a in read_snapshot(copy, io=io_for(copy)).add_files if a.deletion_vector]
    assert clean.deletion_vectors_read == len(with_dvs) > 1

    # a flipped byte in a DV file, and a cardinality the log overstates in the inline DV's commit
    on_disk = next(a for a in with_dvs if a.deletion_vector and a.deletion_vector.storage_type == "u")
    assert on_disk.deletion_vector is not None
    dv_file = dv_location(copy, on_disk.deletion_vector)
    assert isinstance(dv_file, Path)
    content = bytearray(dv_file.read_bytes())
    content[(on_disk.deletion_vector.offset or 0) + 12] ^= 0x01
    dv_file.write_bytes(bytes(content))
    last = copy / "_delta_log" / f"{history.versions[-1]:020d}.json"
    lines = [json.loads(line) for line in last.read_text().splitlines()]
    inline_path = next(line["add"]["path"] for line in lines if "add" in line)
    for line in lines:
        if "add" in line:
            line["add"]["deletionVector"]["cardinality"] += 1
    last.write_text("".join(json.dumps(line) + "\n" for line in lines))

    report = check_table(copy)
    assert not report.compliant
    by_code = {(f.code, f.file) for f in report.findings}
    assert ("unreadable_deletion_vector", on_disk.path) in by_code
    assert ("deletion_vector_cardinality_mismatch", inline_path) in by_code
    assert report.to_json()["files"]["deletion_vectors_read"] == len(with_dvs) - 2
    assert check_table(copy, files="none").findings == ()

    with pytest.raises(CompatViolation) as err:
        write_iceberg_metadata(copy)
    assert set(err.value.rules) == {"ICEBERG-EMIT-DELETION-VECTOR-READ"}
    assert on_disk.path in str(err.value)
    assert not (copy / "metadata").exists() or not any((copy / "metadata").iterdir())
