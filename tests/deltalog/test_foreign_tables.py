"""Tables other writers made, with their own settings: read, checked, upgraded and read as Iceberg.

delta-spark 4.4 tables whose checkpoints keep statistics only as structs (``writeStatsAsJson=false``)
or not at all (both ``writeStatsAs*`` false), in every checkpoint shape it writes (classic, multi-part,
V2 with sidecars and a JSON or Parquet top-level file), with in-commit timestamps and a log
compaction file built by hand (delta-spark 4.4 writes none); and delta-rs tables with its own log and
checkpoint writer. For each: what the reader counts equals what delta-spark reports, the checker
never calls a file stats-less, and upgrade -> check -> Iceberg metadata -> pyiceberg gives the rows
delta-spark reads. Every table runs under every profile (``v3``, ``writer-v1``, ``writer-v3``), one
test per pair: a copy is upgraded, checked compliant and read back by delta-spark, pyiceberg, DuckDB and
the REST catalog, or the dry run and the upgrade both refuse with the pair's rule ids and the table
stays byte-identical. Every table is built once for the module.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icecompat_writer.checking.check import check_table
from icecompat_writer.deltalog import FindingCode, read_snapshot
from icecompat_writer.storage import io_for
from tests import support
from tests.deltalog.foreign import WRITER_PROFILES, delta_rows, pairs, upgrade_end_to_end
from tests.iceberg.test_sync import catalogs  # noqa: F401  (the REST catalog server fixture)
from tests.support import session_conf

pytestmark = pytest.mark.spark

SELECT = (
    "SELECT id, cast(id AS STRING) AS s, "
    "timestamp'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) AS ts, "
    "cast(id AS DECIMAL(10,2)) AS dec, IF(id % 2 = 0, 'a', 'b') AS p FROM range({start}, {end}, 1, 2)"
)
NO_JSON = "'delta.checkpoint.writeStatsAsJson'='false'"
NO_STATS = f"{NO_JSON}, 'delta.checkpoint.writeStatsAsStruct'='false'"

# name -> (table properties, partitioned, Spark settings while writing, what the checkpoint keeps)
SPARK_TABLES: dict[str, tuple[str, bool, dict[str, str], str]] = {
    "struct_stats": (NO_JSON, True, {}, "struct"),
    "no_stats": (NO_STATS, False, {}, "none"),
    "multipart": (NO_JSON, False, {"spark.databricks.delta.checkpoint.partSize": "2"}, "struct"),
    "v2_parquet": (
        f"{NO_JSON}, 'delta.checkpointPolicy'='v2'",
        True,
        {"spark.databricks.delta.checkpointV2.topLevelFileFormat": "parquet"},
        "struct",
    ),
    "v2_json_no_stats": (
        f"{NO_STATS}, 'delta.checkpointPolicy'='v2'",
        False,
        {"spark.databricks.delta.checkpointV2.topLevelFileFormat": "json"},
        "none",
    ),
    "ict_compacted": (f"{NO_JSON}, 'delta.enableInCommitTimestamps'='true'", True, {}, "struct"),
}
RS_TABLES = ("rs_plain", "rs_partitioned")

# Tables made by SQL with the settings users give them: the statements run in order, ``{t}`` naming the
# table. Rows always have a distinct ``id`` (the readers' rows are compared sorted by it).
CREATE = "CREATE TABLE {t} "
SQL_TABLES: dict[str, tuple[str, ...]] = {
    "identity": (
        CREATE + "(id BIGINT GENERATED ALWAYS AS IDENTITY, v STRING) USING delta",
        "INSERT INTO {t} (v) VALUES ('a'), ('b'), ('c')",
    ),
    "generated": (
        CREATE + "(id BIGINT, g BIGINT GENERATED ALWAYS AS (id * 2)) USING delta",
        "INSERT INTO {t} (id) VALUES (1), (2), (3)",
    ),
    "check_constraint": (
        CREATE + "(id BIGINT, v STRING) USING delta",
        "ALTER TABLE {t} ADD CONSTRAINT id_positive CHECK (id >= 0)",
        "INSERT INTO {t} VALUES (1, 'a'), (2, 'b')",
    ),
    "liquid_clustering": (
        CREATE + "(id BIGINT, v STRING) USING delta CLUSTER BY (v)",
        "INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'a')",
    ),
    "widened_numbers": (
        CREATE + "(id BIGINT, i INT, f FLOAT) USING delta TBLPROPERTIES ('delta.enableTypeWidening'='true')",
        "INSERT INTO {t} VALUES (1, 1, 1.5)",
        "ALTER TABLE {t} CHANGE COLUMN i TYPE BIGINT",
        "ALTER TABLE {t} CHANGE COLUMN f TYPE DOUBLE",
        "INSERT INTO {t} VALUES (2, 9223372036854775807, 2.25)",
    ),
    "widened_date": (
        CREATE + "(id BIGINT, d DATE) USING delta TBLPROPERTIES ('delta.enableTypeWidening'='true', "
        "'delta.feature.timestampNtz'='supported')",
        "INSERT INTO {t} VALUES (1, DATE'2024-02-29')",
        "ALTER TABLE {t} CHANGE COLUMN d TYPE TIMESTAMP_NTZ",
        "INSERT INTO {t} VALUES (2, TIMESTAMP_NTZ'2024-03-01 12:34:56')",
    ),
    "name_mapping_renamed": (
        CREATE + "(id BIGINT, a STRING, b STRING, n STRUCT<x: INT, y: INT>) USING delta "
        "TBLPROPERTIES ('delta.columnMapping.mode'='name')",
        "INSERT INTO {t} VALUES (1, 'a', 'b', named_struct('x', 1, 'y', 2))",
        "ALTER TABLE {t} RENAME COLUMN a TO `a renamed`",
        "ALTER TABLE {t} RENAME COLUMN n.x TO `x.y`",
        "ALTER TABLE {t} DROP COLUMN b",
        "INSERT INTO {t} VALUES (2, 'c', named_struct('x.y', 3, 'y', 4))",
    ),
    # delta-spark refuses ALTER TABLE SET TBLPROPERTIES enabling IcebergCompatV3 on such a table
    # (CheckNoRowTrackingBeforeUpgradeV3); the upgrade commits as REORG ... UPGRADE UNIFORM instead
    "row_tracking": (
        CREATE + "(id BIGINT, v STRING) USING delta TBLPROPERTIES ('delta.enableRowTracking'='true')",
        "INSERT INTO {t} VALUES (1, 'a'), (2, 'b')",
        "INSERT INTO {t} VALUES (3, 'c')",
    ),
    "deletion_vectors": (
        CREATE + "(id BIGINT, v STRING) USING delta TBLPROPERTIES ('delta.enableDeletionVectors'='true')",
        "INSERT INTO {t} SELECT id, cast(id AS STRING) FROM range(0, 10, 1, 1)",
        "DELETE FROM {t} WHERE id % 3 = 0",
    ),
    "string_partitions": (
        CREATE + "(id BIGINT, p STRING) USING delta PARTITIONED BY (p)",
        "INSERT INTO {t} VALUES (0, 'a/b'), (1, 'x=y'), (2, '50%'), (3, 'sp ace'), (4, 'ünï €'), "
        "(5, NULL), (6, ''), (7, '#?&:')",
    ),
    "typed_partitions": (
        CREATE + "(id BIGINT, d DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ, b BOOLEAN, i INT, l BIGINT, "
        "bin BINARY) USING delta PARTITIONED BY (d, ts, ntz, b, i, l, bin)",
        "INSERT INTO {t} VALUES (0, DATE'2024-02-29', TIMESTAMP'2024-01-01 00:00:00.123456', "
        "TIMESTAMP_NTZ'2024-01-01 10:00:00', true, -7, 9223372036854775807, unhex('C3A9E282AC')), "
        "(1, NULL, NULL, NULL, NULL, NULL, NULL, NULL), "
        "(2, DATE'1970-01-01', TIMESTAMP'1969-12-31 23:59:59', TIMESTAMP_NTZ'1900-01-01 00:00:00', "
        "false, 2147483647, -1, unhex('C3BF'))",
    ),
    "small_int_partitions": (
        CREATE + "(id BIGINT, by TINYINT, sh SMALLINT) USING delta PARTITIONED BY (by, sh)",
        "INSERT INTO {t} VALUES (0, -128, 32767), (1, NULL, NULL), (2, 5, -5)",
    ),
}


def sql(spark: Any, text: str) -> None:
    spark.sql(text).collect()


def build_spark_table(spark: Any, root: Path, name: str) -> None:
    props, partitioned, conf, _ = SPARK_TABLES[name]
    compacted = name == "ict_compacted"
    interval = 2 if compacted else 1  # the compaction must cover commits after the checkpoint
    with session_conf(spark, conf):
        sql(
            spark,
            f"CREATE TABLE delta.`{root}` USING delta {'PARTITIONED BY (p) ' if partitioned else ''}"
            f"TBLPROPERTIES ('delta.checkpointInterval'='{interval}', {props}) "
            f"AS {SELECT.format(start=0, end=6)}",
        )
        sql(spark, f"INSERT INTO delta.`{root}` {SELECT.format(start=6, end=9)}")
        if compacted:
            for start in (9, 11, 13):  # versions 2 (checkpointed), 3 and 4
                sql(spark, f"INSERT INTO delta.`{root}` {SELECT.format(start=start, end=start + 2)}")
    if compacted:
        compact(root, 3, 4)


def compact(root: Path, first: int, last: int) -> None:
    """A log compaction file for commits ``first..last`` (PROTOCOL.md "Log Compaction Files"): their
    reconciled actions, commitInfo dropped; the commits stay, so delta-spark reads the same table."""
    net: dict[Any, dict[str, Any]] = {}
    for actions in support.commits(root)[first : last + 1]:
        for action in actions:
            ((kind, value),) = action.items()
            if kind in ("add", "remove"):
                net[("file", value["path"])] = action
            elif kind in ("protocol", "metaData"):
                net[(kind,)] = action
            elif kind == "domainMetadata":
                net[("domain", value["domain"])] = action
    name = f"{first:020d}.{last:020d}.compacted.json"
    (root / "_delta_log" / name).write_text("".join(json.dumps(a) + "\n" for a in net.values()))


def build_rs_table(root: Path, name: str) -> None:
    from deltalake import DeltaTable, write_deltalake

    def rows(start: int, end: int) -> pa.Table:
        ids = list(range(start, end))
        return pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "s": pa.array([str(i) for i in ids]),
                "ts": pa.array(
                    [1_704_067_200_000_000 + i * 1_000_000 for i in ids], pa.timestamp("us", "UTC")
                ),
                "p": pa.array(["a" if i % 2 == 0 else "b" for i in ids]),
            }
        )

    partition_by = ["p"] if name == "rs_partitioned" else None
    write_deltalake(str(root), rows(0, 6), partition_by=partition_by)
    write_deltalake(str(root), rows(6, 9), partition_by=partition_by, mode="append")
    DeltaTable(str(root)).create_checkpoint()
    write_deltalake(str(root), rows(9, 11), partition_by=partition_by, mode="append")


class Tables:
    """The module's tables, each built the first time a test asks for it and then shared: a run of a
    few tests builds only theirs."""

    def __init__(self, spark: Any, base: Path) -> None:
        self.spark = spark
        self.base = base
        self.built: dict[str, Path] = {}
        self.read: dict[str, list[dict[str, Any]]] = {}

    def __getitem__(self, name: str) -> Path:
        if name not in self.built:
            root = self.base / name
            if name in SPARK_TABLES:
                build_spark_table(self.spark, root, name)
            elif name in RS_TABLES:
                build_rs_table(root, name)
            else:
                for statement in SQL_TABLES[name]:
                    sql(self.spark, statement.format(t=f"delta.`{root}`"))
            self.built[name] = root
        return self.built[name]

    def rows(self, name: str) -> list[dict[str, Any]]:
        """What delta-spark reads from the table, read once."""
        if name not in self.read:
            self.read[name] = delta_rows(self.spark, self[name])
        return self.read[name]


@pytest.fixture(scope="module")
def tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Tables:
    return Tables(spark, tmp_path_factory.mktemp("foreign"))


def delta_spark_counts(spark: Any, root: Path) -> tuple[int, int]:
    """(files, rows) as delta-spark reports them: DESCRIBE DETAIL and a count."""
    from delta.tables import DeltaTable

    detail = DeltaTable.forPath(spark, str(root)).detail().collect()[0]
    return int(detail["numFiles"]), spark.read.format("delta").load(str(root)).count()


def commit_stats(root: Path) -> dict[str, dict[str, Any]]:
    """Each live file's stats exactly as the commit that added it wrote them."""
    return {a["path"]: json.loads(a["stats"]) for a in support.live_adds(root) if a.get("stats")}


@pytest.mark.parametrize("name", [*SPARK_TABLES, *RS_TABLES])
def test_reader_and_checker_count_what_delta_spark_counts(spark: Any, tables: Tables, name: str) -> None:
    root = tables[name]
    snap = read_snapshot(root, io=io_for(root))
    keeps = SPARK_TABLES[name][3] if name in SPARK_TABLES else "json"
    assert snap.checkpoint_version is not None
    assert snap.stats_lost == frozenset()
    assert all(a.num_records is not None for a in snap.add_files)
    # every file's stats read back as its commit wrote them: from the struct, the JSON or the commit
    written = commit_stats(root)
    for add in snap.add_files:
        assert json.loads(add.stats or "null") == written[add.path], add.path
    codes = [f.code for f in snap.findings]
    assert codes == ([FindingCode.STATS_FROM_COMMITS] if keeps == "none" else [])
    files, rows = delta_spark_counts(spark, root)
    assert len(snap.add_files) == files
    assert sum(a.num_records or 0 for a in snap.add_files) == rows
    report = check_table(root)
    rules = {v.rule for v in report.violations}
    assert not {r for r in rules if r.endswith("-NUM-RECORDS")}, report.render_text()
    assert ("DELTA-CHECKPOINT-STATS" in rules) == (keeps == "none")
    assert report.files_total == files and not report.errors


# (table, profile) -> the rules its upgrade is refused with; every other pair upgrades and converts.
# Under `v3` every table converts. The writer profiles refuse what IcebergWriterCompatV1 disallows and
# Delta cannot drop in a commit (identity, generated and CHECK columns, byte/short), writer-v1 also row
# tracking and deletion vectors; every other table converts under them as a new table state.
REFUSED: dict[tuple[str, str], frozenset[str]] = {
    **{
        (name, profile): frozenset({rule})
        for name, rule in (
            ("identity", "IWC1-NO-IDENTITY-COLUMNS"),
            ("generated", "IWC1-NO-GENERATED-COLUMNS"),
            ("check_constraint", "IWC1-NO-CHECK-CONSTRAINTS"),
            ("small_int_partitions", "IWC1-NO-BYTE-SHORT"),
        )
        for profile in WRITER_PROFILES
    },
    ("row_tracking", "writer-v1"): frozenset({"IWC1-NO-ROW-TRACKING"}),
    ("deletion_vectors", "writer-v1"): frozenset({"ICV2-NO-DELETION-VECTORS", "IWC1-FEATURE-ALLOWLIST"}),
}
ALL_TABLES = (*SPARK_TABLES, *RS_TABLES, *SQL_TABLES)


@pytest.mark.parametrize(("name", "profile"), pairs(ALL_TABLES))
def test_upgrade_end_to_end_or_refuse(
    spark: Any,
    tables: Tables,
    name: str,
    profile: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    refused = REFUSED.get((name, profile))
    source, expected = tables[name], tables.rows(name)

    def rest() -> Any:  # the REST catalog server starts only when a pair is read through it
        return request.getfixturevalue("catalogs").rest()

    upgrade_end_to_end(spark, source, tmp_path / name, profile, refused, expected, rest)
    if SPARK_TABLES.get(name, ("", False, {}, ""))[3] == "none" and refused is None:
        config = support.latest(tmp_path / name, "metaData")["configuration"]
        assert config["delta.checkpoint.writeStatsAsJson"] == "true"
