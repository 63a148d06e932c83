"""Tables written by an older Delta writer: pyspark 3.5 with delta-spark 3.3 (Scala 2.12).

Run with the interpreter of the environment ``env.sh`` builds (never with the project's): ``python
write_tables.py OUT_DIR JARS_DIR``. Writes one table per entry of ``TABLES`` under OUT_DIR and
``OUT_DIR/written.json``: per table, the row count and id sum delta-spark 3.3 reads back, so that the
tests can tell that the newer reader sees what the older writer wrote.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession

# A partitioned table: string partition values with the characters Delta escapes in paths, unicode
# and null; several commits and a classic checkpoint written by delta-spark 3.3.
PLAIN = [
    "CREATE TABLE delta.`{root}` (id BIGINT, s STRING, p STRING) USING delta PARTITIONED BY (p) "
    "TBLPROPERTIES ('delta.checkpointInterval'='2')",
    "INSERT INTO delta.`{root}` VALUES (0, 'a', 'a/b'), (1, 'b', 'x=y'), (2, 'c', '50%'), "
    "(3, 'd', 'sp ace'), (4, 'e', 'ünï'), (5, 'f', NULL)",
    "INSERT INTO delta.`{root}` VALUES (6, 'g', 'a/b'), (7, 'h', NULL)",
    "INSERT INTO delta.`{root}` VALUES (8, 'i', '')",
]
# Partition columns of the other types, with nulls.
TYPED = [
    "CREATE TABLE delta.`{root}` (id BIGINT, d DATE, i INT, b BOOLEAN) USING delta PARTITIONED BY (d, i, b)",
    "INSERT INTO delta.`{root}` VALUES (0, DATE'2024-02-29', -7, true), (1, NULL, NULL, NULL), "
    "(2, DATE'1970-01-01', 2147483647, false)",
]
# Name-mode column mapping, a renamed column, deletion vectors from a DELETE.
MAPPED_DV = [
    "CREATE TABLE delta.`{root}` (id BIGINT, v STRING) USING delta TBLPROPERTIES "
    "('delta.columnMapping.mode'='name', 'delta.enableDeletionVectors'='true')",
    "INSERT INTO delta.`{root}` SELECT id, cast(id AS STRING) FROM range(0, 20, 1, 1)",
    "ALTER TABLE delta.`{root}` RENAME COLUMN v TO renamed",
    "DELETE FROM delta.`{root}` WHERE id % 3 = 0",
]
# IcebergCompatV2 as delta-spark 3.3 enables it.
COMPAT_V2 = [
    "CREATE TABLE delta.`{root}` (id BIGINT, s STRING) USING delta TBLPROPERTIES "
    "('delta.columnMapping.mode'='name', 'delta.enableIcebergCompatV2'='true')",
    "INSERT INTO delta.`{root}` SELECT id, cast(id AS STRING) FROM range(0, 5, 1, 1)",
]
TABLES = {
    "older_plain": PLAIN,
    "older_typed_partitions": TYPED,
    "older_mapped_dv": MAPPED_DV,
    "older_compat_v2": COMPAT_V2,
}


def main(out: Path, jars: Path) -> None:
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("older-delta-writer")
        .config("spark.jars", ",".join(str(j) for j in sorted(jars.glob("*.jar"))))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.shuffle.partitions", "1")
        # the log's state is reconstructed with 50 partitions by default: minutes for a few tiny tables
        .config("spark.databricks.delta.snapshotPartitions", "1")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "512m")
        .getOrCreate()
    )
    written = {}
    try:
        for name, statements in TABLES.items():
            root = out / name
            for statement in statements:
                spark.sql(statement.format(root=root)).collect()
            row = spark.sql(f"SELECT count(*) AS n, sum(id) AS s FROM delta.`{root}`").collect()[0]
            written[name] = {"rows": int(row["n"]), "id_sum": int(row["s"])}
        written["_versions"] = {"spark": spark.version}
    finally:
        spark.stop()
    (out / "written.json").write_text(json.dumps(written, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
