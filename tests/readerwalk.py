"""The table and the commits every reader engine is walked through (Trino in tests/iceberg/test_trino.py,
Spark with Iceberg's runtime in tests/smoke/lines_spark_iceberg.py, pyiceberg in
tests/iceberg/test_deletion_vectors.py): one kind of each commit, so every engine meets the same
deletion vectors, rewrites and compaction.

Kept free of the test suite's other helpers: ``bin/lines`` copies it beside the smoke set of another
Spark line, which runs outside this source tree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from icecompat_writer import compat_write
from icecompat_writer.jvm.bridge import guard_iceberg_syncs

COMMITS = [
    "INSERT INTO delta.`{p}` VALUES (100, 'i', 0), (101, 'i', 1)",
    "DELETE FROM delta.`{p}` WHERE id IN (1, 2, 15)",
    "UPDATE delta.`{p}` SET v = 'u' WHERE id IN (3, 25, 100)",
    "MERGE INTO delta.`{p}` t USING (SELECT * FROM VALUES (4, 'm'), (16, 'm'), (200, 'n') AS s(id, v)) s "
    "ON t.id = s.id WHEN MATCHED AND s.id = 4 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v "
    "WHEN NOT MATCHED THEN INSERT (id, v, part) VALUES (s.id, s.v, 0)",
    "OPTIMIZE delta.`{p}`",
]
"""One of each kind of commit, formatted with the table's path as ``p``."""

CATALOGS = ("rest", "hms")
"""The pyiceberg catalogs the walks register their tables in: Iceberg's REST server, Hive's metastore."""


def write_table(spark: Any, path: Path, fv: int, *, dvs: bool = True, rows: int = 40, files: int = 4) -> None:
    """A ``v3``-profile table of ``rows`` rows in ``files`` files (columns ``id``, ``v``, partition
    ``part``) with deletion vectors on or off, synced as Iceberg format ``fv``; returns once every
    sync of the session is done."""
    df = spark.range(0, rows, 1, files).selectExpr(
        "id", "CAST(id % 3 AS STRING) AS v", "CAST(id % 2 AS INT) AS part"
    )
    properties = {
        "delta.enableDeletionVectors": str(dvs).lower(),
        "delta.universalFormat.enabledFormats": "iceberg",
        "icecompat.iceberg.format-version": str(fv),
    }
    first = compat_write(df, str(path), profile="v3", partition_by="part", properties=properties)
    assert first.iceberg is not None and first.iceberg.error is None, first.iceberg
    guard_iceberg_syncs(spark, drain=True)
