"""Iceberg syncs run beside the commit checks: a slow sync holds no other table's write.

The guard's commit checks go to one rule service process and its syncs to processes of their own
(``spark.icecompat.iceberg.syncProcesses``), one table always to the same one, so a sync of a large
table never delays another table's guarded commit. With ``spark.icecompat.iceberg.sync=async`` a write
returns before its sync runs; ``pending_syncs`` shows what is queued and ``await_syncs`` waits for it.

The slow sync is a real one: the first Iceberg conversion of a 20,000-file table (a synthetic
compliant v3 log with a real Parquet file behind every AddFile), which reads every footer.
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from bench.bench_checker import build
from icecompat_writer.iceberg import PROP_DELTA_VERSION
from icecompat_writer.iceberg.sync import IcebergSyncWarning
from icecompat_writer.jvm.bridge import await_syncs, guard_iceberg_syncs, pending_syncs

pytestmark = pytest.mark.spark

LARGE = 20_000
SYNC = "'delta.universalFormat.enabledFormats' = 'iceberg'"


def _metadata_version(root: Path) -> int | None:
    """The Delta version the table's newest Iceberg metadata file records, or None without one."""
    files = sorted((root / "metadata").glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))
    if not files:
        return None
    return int(json.loads(files[-1].read_text())["properties"][PROP_DELTA_VERSION])


def _latest(root: Path) -> int:
    return max(int(p.name[:20]) for p in (root / "_delta_log").glob("*.json"))


def _queued(spark: Any, root: Path) -> list[int]:
    return [
        v for p in pending_syncs(spark) if p["table"].rstrip("/").endswith(str(root)) for v in p["versions"]
    ]


def test_a_slow_sync_holds_no_other_tables_commit_and_async_syncs_are_awaited(
    guarded: Any, tmp_path: Path
) -> None:
    spark = guarded
    large = tmp_path / "large"
    build(large, LARGE, with_data=True)
    small = tmp_path / "small"
    spark.sql(
        f"CREATE TABLE delta.`{small}` (id BIGINT) USING delta "
        "TBLPROPERTIES ('delta.enableIcebergCompatV3' = 'true')"
    )
    guard_iceberg_syncs(spark, drain=True)
    spark.conf.set("spark.icecompat.iceberg.sync", "async")
    try:
        # the commit asking for Iceberg returns at once; its sync (the first conversion) is queued
        spark.sql(f"ALTER TABLE delta.`{large}` SET TBLPROPERTIES ({SYNC})")
        asked = _latest(large)
        assert _queued(spark, large) == [asked]
        assert _metadata_version(large) is None
        # another table's guarded commit is checked and lands while that sync still runs
        started = time.monotonic()
        spark.sql(f"INSERT INTO delta.`{small}` VALUES (1), (2)")
        small_write = time.monotonic() - started
        assert _queued(spark, large) == [asked], f"the small write took {small_write:.1f} s"
        assert spark.read.format("delta").load(str(small)).count() == 2
        # waiting brings the large table current
        done = await_syncs(spark, str(large), timeout=600)
        mine = [s for s in done if s["table"].rstrip("/").endswith(str(large))]
        assert [(s["version"], s["converted_version"], s["mode"]) for s in mine] == [(asked, asked, "async")]
        assert all("error" not in s for s in mine)
        assert _queued(spark, large) == [] and _metadata_version(large) == asked

        # a bad setting: the sync runs before the write returns, and the user is told
        spark.conf.set("spark.icecompat.iceberg.sync", "later")
        spark.sql(f"ALTER TABLE delta.`{large}` SET TBLPROPERTIES ('note' = 'x')")
        assert _metadata_version(large) == _latest(large)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outcome = await_syncs(spark, str(large), timeout=60)
        assert [s["mode"] for s in outcome if s["table"].rstrip("/").endswith(str(large))] == ["commit"]
        said = [str(w.message) for w in caught if w.category is IcebergSyncWarning]
        assert any("spark.icecompat.iceberg.sync is 'later'" in m and "'async'" in m for m in said), said
    finally:
        spark.conf.unset("spark.icecompat.iceberg.sync")
