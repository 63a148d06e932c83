"""The Spark-free reader against tables written, checkpointed and read by real delta-spark.

Every table is small (a few rows, a few files) and built once per module; each test compares what
read_snapshot reconstructs with what delta-spark itself reports for the same table: its snapshot's
protocol, metadata, live AddFiles, transactions and domains (through the JVM), ``inputFiles()`` and
``DESCRIBE DETAIL``.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from icecompat_writer.deltalog import FindingCode, Metadata, Protocol, Snapshot, read_commit, read_snapshot
from icecompat_writer.deltalog.files import dv_unique_id
from icecompat_writer.deltalog.paths import LogFileKind, list_log_files
from icecompat_writer.storage import io_for
from tests.support import session_conf

pytestmark = pytest.mark.spark

PARTITION_VALUES = ["a b", "naïve ü", "x%y"]


def sql(spark: Any, text: str) -> None:
    spark.sql(text).collect()


@dataclass
class Tables:
    classic: Path
    multipart: Path
    v2_json: Path
    v2_parquet: Path
    dv_rowtracking_cm: Path
    txn: Path
    clustered_ict: Path


@pytest.fixture(scope="module")
def tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Tables:
    """All tables of the module, each with as few commits as its case needs (Spark time is the cost)."""
    base = tmp_path_factory.mktemp("spark_tables")
    t = Tables(*(base / name for name in Tables.__dataclass_fields__))
    values = ", ".join(f"({i}, '{p}')" for i, p in enumerate(PARTITION_VALUES))

    # classic checkpoint at 2, partition values needing URI encoding, removes from a DELETE after it
    sql(
        spark,
        f"CREATE TABLE delta.`{t.classic}` USING delta PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.checkpointInterval'='2') "
        f"AS SELECT * FROM VALUES {values} AS v(id, p)",
    )
    sql(spark, f"INSERT INTO delta.`{t.classic}` VALUES {values}")
    sql(spark, f"INSERT INTO delta.`{t.classic}` VALUES (7, 'a b')")
    sql(spark, f"DELETE FROM delta.`{t.classic}` WHERE p = 'x%y'")

    # multi-part checkpoint at 1: at most 2 actions per part
    with session_conf(spark, {"spark.databricks.delta.checkpoint.partSize": "2"}):
        sql(
            spark,
            f"CREATE TABLE delta.`{t.multipart}` USING delta "
            "TBLPROPERTIES ('delta.checkpointInterval'='1') AS SELECT id FROM range(0, 6, 1, 3)",
        )
        spark.range(0, 6, 1, 3).write.format("delta").mode("append").save(str(t.multipart))

    # V2 checkpoints at 1: JSON top-level file (delta-spark's default) and Parquet top-level file
    for path, fmt in ((t.v2_json, "json"), (t.v2_parquet, "parquet")):
        with session_conf(spark, {"spark.databricks.delta.checkpointV2.topLevelFileFormat": fmt}):
            sql(
                spark,
                f"CREATE TABLE delta.`{path}` USING delta TBLPROPERTIES ("
                "'delta.checkpointInterval'='1', 'delta.checkpointPolicy'='v2') "
                "AS SELECT id FROM range(0, 4, 1, 2)",
            )
            spark.range(0, 4, 1, 2).write.format("delta").mode("append").save(str(path))

    # deletion vectors + row tracking + column mapping (name) + nested types; the checkpoint at 2
    # holds a DV that replaced the DV of version 1
    sql(
        spark,
        f"CREATE TABLE delta.`{t.dv_rowtracking_cm}` USING delta TBLPROPERTIES ("
        "'delta.enableDeletionVectors'='true', 'delta.enableRowTracking'='true', "
        "'delta.columnMapping.mode'='name', 'delta.checkpointInterval'='2') AS SELECT id, "
        "named_struct('a', cast(id AS INT), 'b', array('x')) AS st, "
        "map('k', named_struct('x', 1)) AS m FROM range(0, 20, 1, 2)",
    )
    sql(spark, f"DELETE FROM delta.`{t.dv_rowtracking_cm}` WHERE id = 3")
    sql(spark, f"DELETE FROM delta.`{t.dv_rowtracking_cm}` WHERE id = 4")

    # application transaction ids (the first write creates the table)
    for app, version in (("app-a", 1), ("app-b", 5), ("app-a", 2)):
        (
            spark.range(1)
            .write.format("delta")
            .mode("append")
            .option("txnAppId", app)
            .option("txnVersion", version)
            .save(str(t.txn))
        )

    # liquid clustering (domain delta.clustering, clusteringProvider after OPTIMIZE), in-commit
    # timestamps, a DV on the optimized file, a checkpoint at 2
    sql(
        spark,
        f"CREATE TABLE delta.`{t.clustered_ict}` USING delta CLUSTER BY (id) TBLPROPERTIES ("
        "'delta.enableDeletionVectors'='true', 'delta.enableInCommitTimestamps'='true', "
        "'delta.checkpointInterval'='2') AS SELECT id, cast(id AS STRING) AS v FROM range(0, 10, 1, 2)",
    )
    sql(spark, f"OPTIMIZE delta.`{t.clustered_ict}`")
    sql(spark, f"DELETE FROM delta.`{t.clustered_ict}` WHERE id = 3")
    return t


# --- what delta-spark reports --------------------------------------------------------------------


@dataclass
class SparkView:
    version: int
    protocol: Protocol
    metadata: Metadata
    files: dict[tuple[str, str | None], dict[str, Any]]
    input_files: set[Path]
    txns: dict[str, int]
    domains: dict[str, str]
    timestamp: int
    detail: dict[str, Any]


def spark_view(spark: Any, path: Path, *, fresh: bool = False) -> SparkView:
    from delta.tables import DeltaTable
    from pyspark.sql import DataFrame

    jvm = spark._jvm
    delta_log_cls = jvm.org.apache.spark.sql.delta.DeltaLog
    if fresh:
        delta_log_cls.clearCache()
    input_files = {_uri_to_path(u) for u in spark.read.format("delta").load(str(path)).inputFiles()}
    snap = delta_log_cls.forTable(spark._jsparkSession, str(path)).unsafeVolatileSnapshot()
    conv = jvm.scala.jdk.javaapi.CollectionConverters
    files = {}
    for row in DataFrame(snap.allFiles().toDF(), spark).collect():
        d = row.asDict(recursive=True)
        files[(d["path"], dv_unique_id(d["deletionVector"]))] = d
    txns = {str(k): int(v) for k, v in dict(conv.asJava(snap.transactions())).items()}
    domains = {d.domain(): d.configuration() for d in conv.asJava(snap.domainMetadata()) if not d.removed()}
    detail = DeltaTable.forPath(spark, str(path)).detail().collect()[0].asDict()
    return SparkView(
        version=int(snap.version()),
        protocol=Protocol.from_json(json.loads(snap.protocol().json())["protocol"]),
        metadata=Metadata.from_json(json.loads(snap.metadata().json())["metaData"]),
        files=files,
        input_files=input_files,
        txns=txns,
        domains=domains,
        timestamp=int(snap.timestamp()),
        detail=detail,
    )


def _uri_to_path(uri: str) -> Path:
    """inputFiles() gives Hadoop ``Path`` strings: ``file:`` + the plain path, not percent-encoded."""
    assert uri.startswith("file:"), uri
    return Path(uri[len("file:") :])


def assert_same(ours: Snapshot, theirs: SparkView) -> None:
    assert ours.version == theirs.version
    assert ours.protocol == theirs.protocol
    assert ours.metadata == theirs.metadata
    assert json.loads(ours.metadata.schema_string) == json.loads(theirs.metadata.schema_string)
    assert dict(ours.txns) == theirs.txns
    assert dict(ours.domain_metadata) == theirs.domains
    assert {ours.data_path(a) for a in ours.add_files} == theirs.input_files
    assert {a.key for a in ours.add_files} == set(theirs.files)
    for add in ours.add_files:
        spark_add = theirs.files[add.key]
        assert dict(add.partition_values) == spark_add["partitionValues"]
        assert add.size == spark_add["size"]
        assert add.modification_time == spark_add["modificationTime"]
        assert add.base_row_id == spark_add["baseRowId"]
        assert add.default_row_commit_version == spark_add["defaultRowCommitVersion"]
        assert add.clustering_provider == spark_add["clusteringProvider"]
        assert (dict(add.tags) if add.tags is not None else None) == spark_add["tags"]
        assert json.loads(add.stats or "null") == json.loads(spark_add["stats"] or "null")
        if add.deletion_vector is not None:
            dv = spark_add["deletionVector"]
            assert (add.deletion_vector.cardinality, add.deletion_vector.size_in_bytes) == (
                dv["cardinality"],
                dv["sizeInBytes"],
            )
    detail = theirs.detail
    assert detail["numFiles"] == len(ours.add_files)
    assert detail["sizeInBytes"] == sum(a.size for a in ours.add_files)
    assert detail["properties"] == dict(ours.metadata.configuration)
    assert detail["partitionColumns"] == list(ours.metadata.partition_columns)
    assert (detail["minReaderVersion"], detail["minWriterVersion"]) == (
        ours.protocol.min_reader_version,
        ours.protocol.min_writer_version,
    )
    if ours.protocol.writer_features is not None:
        features = set(ours.protocol.writer_features) | set(ours.protocol.reader_features or ())
        assert set(detail["tableFeatures"]) == features
    assert detail["id"] == ours.metadata.id


def log_names(path: Path) -> list[str]:
    listed = list_log_files(path / "_delta_log", io=io_for(path))
    return sorted(f.name for f in listed if f.kind is not LogFileKind.CHECKSUM)


# --- tests ---------------------------------------------------------------------------------------


def test_classic_checkpoints(spark: Any, tables: Tables) -> None:
    assert "00000000000000000002.checkpoint.parquet" in log_names(tables.classic)
    ours = read_snapshot(tables.classic, io=io_for(tables.classic))
    assert ours.findings == ()
    assert (ours.version, ours.checkpoint_version) == (3, 2)
    assert_same(ours, spark_view(spark, tables.classic))
    # partition directories with a space, unicode and a (Hive-escaped) percent sign resolve to real files
    assert {ours.data_path(a).parent.name for a in ours.add_files} == {"p=a b", "p=naïve ü"}  # type: ignore[union-attr]
    assert all(ours.data_path(a).is_file() for a in ours.add_files)  # type: ignore[union-attr]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_classic_time_travel(spark: Any, tables: Tables, version: int) -> None:
    ours = read_snapshot(tables.classic, version=version, io=io_for(tables.classic))
    df = spark.read.format("delta").option("versionAsOf", version).load(str(tables.classic))
    assert {ours.data_path(a) for a in ours.add_files} == {_uri_to_path(u) for u in df.inputFiles()}
    assert ours.checkpoint_version == (None if version < 2 else 2)
    assert len(ours.add_files) == [3, 6, 7][version]


def test_multipart_checkpoints(spark: Any, tables: Tables) -> None:
    names = log_names(tables.multipart)
    parts = [n for n in names if n.startswith("00000000000000000001.checkpoint.")]
    assert len(parts) > 1 and all(".checkpoint.00000000" in n for n in parts), names
    ours = read_snapshot(tables.multipart, io=io_for(tables.multipart))
    assert ours.findings == ()
    assert ours.checkpoint_version == 1
    assert_same(ours, spark_view(spark, tables.multipart))


def test_multipart_checkpoint_with_a_missing_part(spark: Any, tables: Tables, tmp_path: Path) -> None:
    copy = tmp_path / "multipart_copy"
    shutil.copytree(tables.multipart, copy)
    part = sorted((copy / "_delta_log").glob("00000000000000000001.checkpoint.*.parquet"))[0]
    part.unlink()
    ours = read_snapshot(copy, io=io_for(copy))
    # _last_checkpoint names the now incomplete checkpoint: both are reported
    assert sorted(f.code for f in ours.findings) == [
        FindingCode.INCOMPLETE_CHECKPOINT,
        FindingCode.STALE_LAST_CHECKPOINT,
    ]
    assert ours.checkpoint_version != 1
    assert_same(ours, spark_view(spark, copy, fresh=True))


@pytest.mark.parametrize("which", ["v2_json", "v2_parquet"])
def test_v2_checkpoints_with_sidecars(spark: Any, tables: Tables, which: str) -> None:
    path: Path = getattr(tables, which)
    fmt = which.split("_")[1]
    names = log_names(path)
    v2 = [n for n in names if n.startswith("00000000000000000001.checkpoint.") and n.endswith(f".{fmt}")]
    assert len(v2) == 1, names
    assert list((path / "_delta_log" / "_sidecars").glob("*.parquet"))
    last = json.loads((path / "_delta_log" / "_last_checkpoint").read_text())
    assert last["v2Checkpoint"]["path"] == v2[0]
    ours = read_snapshot(path, io=io_for(path))
    assert ours.findings == ()
    assert ours.checkpoint_version == 1
    assert ours.protocol.supports_reader_feature("v2Checkpoint")
    assert_same(ours, spark_view(spark, path))


def test_v2_checkpoint_with_a_missing_sidecar_falls_back_to_commits(
    spark: Any, tables: Tables, tmp_path: Path
) -> None:
    copy = tmp_path / "v2_copy"
    shutil.copytree(tables.v2_json, copy)
    for sidecar in (copy / "_delta_log" / "_sidecars").glob("*.parquet"):
        sidecar.unlink()
    ours = read_snapshot(copy, io=io_for(copy))
    assert FindingCode.UNREADABLE_SIDECAR in [f.code for f in ours.findings]
    assert ours.checkpoint_version != 1
    theirs = spark_view(spark, tables.v2_json)  # the intact original
    assert (ours.version, ours.protocol, ours.metadata) == (theirs.version, theirs.protocol, theirs.metadata)
    assert {a.key for a in ours.add_files} == set(theirs.files)


def test_deletion_vectors_row_tracking_column_mapping(spark: Any, tables: Tables) -> None:
    ours = read_snapshot(tables.dv_rowtracking_cm, io=io_for(tables.dv_rowtracking_cm))
    assert ours.findings == ()
    assert ours.checkpoint_version == 2
    assert any(a.deletion_vector is not None for a in ours.add_files)
    assert all(a.base_row_id is not None and a.default_row_commit_version is not None for a in ours.add_files)
    assert "delta.rowTracking" in ours.domain_metadata
    assert ours.metadata.configuration["delta.columnMapping.mode"] == "name"
    assert_same(ours, spark_view(spark, tables.dv_rowtracking_cm))


def test_deletion_vector_versions_match_spark(spark: Any, tables: Tables) -> None:
    for version in (0, 1, 2):
        ours = read_snapshot(tables.dv_rowtracking_cm, version=version, io=io_for(tables.dv_rowtracking_cm))
        df = spark.read.format("delta").option("versionAsOf", version).load(str(tables.dv_rowtracking_cm))
        assert {ours.data_path(a) for a in ours.add_files} == {_uri_to_path(u) for u in df.inputFiles()}
        dvs = [a.deletion_vector for a in ours.add_files if a.deletion_vector is not None]
        # both DELETEs hit the same file: the second one replaces its DV (cardinality 2)
        assert (len(dvs), sum(d.cardinality for d in dvs)) == {0: (0, 0), 1: (1, 1), 2: (1, 2)}[version]
        rows = sum(
            (a.num_records or 0) - (a.deletion_vector.cardinality if a.deletion_vector else 0)
            for a in ours.add_files
        )
        assert rows == df.count()


def test_transaction_ids(spark: Any, tables: Tables) -> None:
    ours = read_snapshot(tables.txn, io=io_for(tables.txn))
    assert dict(ours.txns) == {"app-a": 2, "app-b": 5}
    assert_same(ours, spark_view(spark, tables.txn))


def test_clustering_and_in_commit_timestamps(spark: Any, tables: Tables) -> None:
    ours = read_snapshot(tables.clustered_ict, io=io_for(tables.clustered_ict))
    assert ours.findings == ()
    assert "delta.clustering" in ours.domain_metadata
    assert {a.clustering_provider for a in ours.add_files} == {"liquid"}
    theirs = spark_view(spark, tables.clustered_ict)
    assert_same(ours, theirs)
    assert ours.in_commit_timestamp == theirs.timestamp
    assert (
        ours.in_commit_timestamp
        == read_commit(tables.clustered_ict, ours.version, io=io_for(tables.clustered_ict))[0]["commitInfo"][
            "inCommitTimestamp"
        ]
    )


def test_compaction_file_stands_in_for_a_deleted_commit(spark: Any, tables: Tables, tmp_path: Path) -> None:
    """delta-spark 4.4 itself refuses such a log (versions not contiguous), so the expected state is
    what it reports for the intact table."""
    theirs = spark_view(spark, tables.txn)
    copy = tmp_path / "txn_copy"
    shutil.copytree(tables.txn, copy)
    net: dict[Any, dict[str, Any]] = {}
    for version in (1, 2):
        for action in read_commit(copy, version, io=io_for(copy)):
            ((name, value),) = action.items()
            if name == "add":
                net[("file", value["path"])] = action
            elif name == "txn":
                net[("txn", value["appId"])] = action
    log = copy / "_delta_log"
    (log / "00000000000000000001.00000000000000000002.compacted.json").write_text(
        "".join(json.dumps(a) + "\n" for a in net.values())
    )
    (log / "00000000000000000001.json").unlink()
    (log / "00000000000000000001.crc").unlink(missing_ok=True)
    ours = read_snapshot(copy, io=io_for(copy))
    assert ours.findings == ()
    assert {a.path for a in ours.add_files} == {
        a.path for a in read_snapshot(tables.txn, io=io_for(tables.txn)).add_files
    }
    assert dict(ours.txns) == theirs.txns
    assert {Path(str(ours.data_path(a)).replace(str(copy), str(tables.txn))) for a in ours.add_files} == (
        theirs.input_files
    )
