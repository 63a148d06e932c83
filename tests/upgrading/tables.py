"""Tables written by plain delta-spark SQL (no compat feature), as an upgrade finds them in the wild.

Each builder makes one table at the given path with the shared session and puts every session
setting it touches back. Spark writes INT96 timestamps unless told otherwise, so every builder says
which timestamp type it wants.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tests.support import session_conf

TS = "timestamp'2024-01-01 12:34:56.123456'"
INT96 = {"spark.sql.parquet.outputTimestampType": "INT96"}
MICROS = {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}
NO_STATS = {**MICROS, "spark.databricks.delta.stats.collect": "false"}


def sql(spark: Any, text: str, confs: dict[str, str] | None = None) -> None:
    with session_conf(spark, confs or MICROS):
        spark.sql(text).collect()


def int96(spark: Any, root: Path) -> None:
    """No column mapping, INT96 timestamps (top level, in a struct, in an array), a map; two files."""
    sql(
        spark,
        f"CREATE TABLE delta.`{root}` USING delta AS SELECT id, {TS} + make_interval(0, 0, 0, 0, 0, 0, id) "
        f"AS ts, named_struct('t', {TS}, 'n', cast(id AS INT)) AS s, array({TS}) AS a, "
        "map('k', id) AS m FROM range(0, 6, 1, 2)",
        INT96,
    )


def id_mode(spark: Any, root: Path) -> None:
    """Column mapping ``id`` mode with delta-spark's ``col-<uuid>`` names, nested types without nested
    ids; two files."""
    sql(
        spark,
        f"CREATE TABLE delta.`{root}` USING delta TBLPROPERTIES ('delta.columnMapping.mode'='id') AS "
        "SELECT id, cast(id AS STRING) AS `name with space`, named_struct('x', cast(id AS INT)) AS st, "
        "array(id, id + 1) AS a, map('k', array(id)) AS m FROM range(0, 6, 1, 2)",
    )


def name_partitioned(spark: Any, root: Path) -> None:
    """Column mapping ``name`` mode, partitioned, partition values not written into the files."""
    sql(
        spark,
        f"CREATE TABLE delta.`{root}` USING delta PARTITIONED BY (p) TBLPROPERTIES "
        "('delta.columnMapping.mode'='name', 'delta.writePartitionColumnsToParquet'='false') AS "
        "SELECT id, cast(id % 2 AS STRING) AS p, array(id) AS a FROM range(0, 6, 1, 1)",
    )


def partial(spark: Any, root: Path) -> None:
    """``id`` mode, flat columns, one file per commit: INT96 timestamps (version 0), compliant
    (version 1), no statistics (version 2), compliant (version 3)."""
    sql(
        spark,
        f"CREATE TABLE delta.`{root}` USING delta TBLPROPERTIES ('delta.columnMapping.mode'='id') AS "
        f"SELECT id, {TS} AS ts FROM range(0, 3, 1, 1)",
        INT96,
    )
    sql(spark, f"INSERT INTO delta.`{root}` SELECT id, {TS} FROM range(10, 13, 1, 1)")
    sql(spark, f"INSERT INTO delta.`{root}` SELECT id, {TS} FROM range(20, 23, 1, 1)", NO_STATS)
    sql(spark, f"INSERT INTO delta.`{root}` SELECT id, {TS} FROM range(30, 33, 1, 1)")


def deletion_vectors(spark: Any, root: Path) -> None:
    """``id`` mode with deletion vectors: INT96 timestamps in two files, a third of the rows deleted
    (each file gets a deletion vector)."""
    sql(
        spark,
        f"CREATE TABLE delta.`{root}` USING delta TBLPROPERTIES ('delta.columnMapping.mode'='id', "
        f"'delta.enableDeletionVectors'='true') AS SELECT id, {TS} AS ts FROM range(0, 12, 1, 2)",
        INT96,
    )
    sql(spark, f"DELETE FROM delta.`{root}` WHERE id % 3 = 0")


def widened(spark: Any, root: Path) -> None:
    """``id`` mode, an integer column widened to double (a change Iceberg cannot apply)."""
    sql(
        spark,
        f"CREATE TABLE delta.`{root}` (id INT, x INT) USING delta TBLPROPERTIES "
        "('delta.columnMapping.mode'='id', 'delta.enableTypeWidening'='true')",
    )
    sql(spark, f"INSERT INTO delta.`{root}` VALUES (1, 1), (2, 2)")
    sql(spark, f"ALTER TABLE delta.`{root}` CHANGE COLUMN x TYPE DOUBLE")
    sql(spark, f"INSERT INTO delta.`{root}` VALUES (3, 3.5)")


def row_tracking(spark: Any, root: Path) -> None:
    """``id`` mode with row tracking enabled: INT96 timestamps in two files, then an UPDATE that moves
    a row (keeping its row id) into a file of its own."""
    sql(
        spark,
        f"CREATE TABLE delta.`{root}` USING delta TBLPROPERTIES ('delta.columnMapping.mode'='id', "
        f"'delta.enableRowTracking'='true') AS SELECT id, {TS} AS ts FROM range(0, 6, 1, 2)",
        INT96,
    )
    sql(spark, f"UPDATE delta.`{root}` SET id = id + 100 WHERE id = 1")


BUILDERS = {
    "int96": int96,
    "id_mode": id_mode,
    "name_partitioned": name_partitioned,
    "partial": partial,
    "deletion_vectors": deletion_vectors,
    "widened": widened,
    "row_tracking": row_tracking,
}


class Tables:
    """Builds each table once per test module and hands out private copies to change."""

    def __init__(self, spark: Any, base: Path) -> None:
        self.spark = spark
        self.base = base
        self.built: dict[str, Path] = {}

    def original(self, name: str) -> Path:
        if name not in self.built:
            root = self.base / "originals" / name
            BUILDERS[name](self.spark, root)
            self.built[name] = root
        return self.built[name]

    def copy(self, name: str, dest: Path) -> Path:
        """A copy of the table (a Delta table is relocatable: its log holds relative paths)."""
        shutil.copytree(self.original(name), dest)
        return dest
