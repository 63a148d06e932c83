"""Delta's own VACUUM after the Iceberg sync expired what it may delete: every retained snapshot reads.

A UniForm table with a deleted-file retention of 3 seconds: two overwrites (each removes the files before it),
a pause longer than the retention, an append, the sync after each commit, then delta-spark's VACUUM
with the table's retention. VACUUM deletes the files of the first two versions; the sync had already
expired the snapshots that named them, and pyiceberg reads every snapshot still in the metadata.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icecompat_writer.iceberg import write_iceberg_metadata
from icecompat_writer.iceberg.expire import PROP_VACUUM_MARGIN_MS
from icecompat_writer.writing.api import compat_write

from ._support import metadata_json, static_table

pytestmark = pytest.mark.spark


def test_vacuum_deletes_nothing_a_retained_snapshot_names(spark: SparkSession, tmp_path: Path) -> None:
    root = str(tmp_path / "aging")

    props = {
        # UniForm on: Delta's VACUUM then leaves metadata/ alone (without it, VACUUM deletes every
        # file under metadata/ older than the retention, as files the Delta log does not know)
        "delta.universalFormat.enabledFormats": "iceberg",
        "delta.deletedFileRetentionDuration": "interval 3 seconds",
        PROP_VACUUM_MARGIN_MS: "0",
    }

    def write(ids: range, mode: str, properties: dict[str, str] | None = None) -> None:
        compat_write(spark.range(ids.start, ids.stop), root, mode=mode, profile="v3", properties=properties)
        write_iceberg_metadata(root)  # the sync after the commit has run already: nothing to do

    write(range(0, 5), "overwrite", props)  # v0
    write(range(10, 15), "overwrite")  # v1: removes the files of v0
    write(range(20, 25), "overwrite")  # v2: removes the files of v1
    time.sleep(4)  # both removals are now older than the retention
    write(range(30, 33), "append")  # v3: removes nothing

    def data_files() -> set[Path]:
        return {p for p in Path(root).rglob("*.parquet") if "_delta_log" not in p.parts}

    before = data_files()
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        spark.sql(f"VACUUM delta.`{root}`")
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    vacuumed = before - data_files()
    assert len(vacuumed) >= 2  # the files of v0 and v1 are gone

    doc = metadata_json(Path(root))
    versions = [int(s["sequence-number"]) for s in doc["snapshots"]]
    # v2's files stay live after v3, which removes nothing; VACUUM's own commits (where Delta logs
    # them) come after, synced by the guarded session and changing no data
    assert versions[:2] == [2, 3]
    table = static_table(Path(root))
    expected = {2: list(range(20, 25)), 3: [*range(20, 25), *range(30, 33)]}
    for s in doc["snapshots"]:
        scan = table.scan(snapshot_id=s["snapshot-id"])
        for task in scan.plan_files():
            assert Path(task.file.file_path.removeprefix("file://")).exists()
        ids = sorted(scan.to_arrow().column("id").to_pylist())
        assert ids == expected[min(3, int(s["sequence-number"]))]
