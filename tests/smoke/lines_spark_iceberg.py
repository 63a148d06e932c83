"""Spark with Apache Iceberg's own runtime reads synced tables through the REST and the Hive catalogs.

Run by bin/lines, as ``test_spark_iceberg.py`` next to the smoke set, on a Spark line for which Apache
Iceberg publishes a Spark runtime that bin/setup fetched (``iceberg-spark-runtime-4.1_2.13`` into
.cache/engine-jars; none is published for Spark 4.2, the development line): the line's one session
carries the runtime next to delta (``lines_conftest.py``), and its catalogs ``rest`` and ``hms``
(``org.apache.iceberg.spark.SparkCatalog``, ``type=rest`` / ``type=hive``, caching off so that every
read loads the catalog's current pointer) point at Apache Iceberg's REST catalog server and Hive's
standalone metastore, started here (tests/catalogservers.py, reached through bin/lines' copy of it).

A v3-profile table with deletion vectors and the sync on, one per Iceberg format (the
``icecompat.iceberg.format-version`` property: 3 with Puffin deletion vectors, 2 with position delete
files), is walked through compat_write, INSERT, DELETE, UPDATE, MERGE and OPTIMIZE on the guarded
session. After every commit ``sync_catalog`` moves both catalogs to the emitter's metadata and Spark's
Iceberg reader reads exactly delta-spark's rows of that version through each. Then: time travel to the
first snapshot (``VERSION AS OF``), an incremental append scan of the INSERT (``start-snapshot-id`` /
``end-snapshot-id``), and, in format 3, the row lineage columns ``_row_id`` against Delta's row ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.iceberg.catalogs import sync_catalog
from icecompat_writer.jvm.bridge import guard_iceberg_syncs
from icecompat_writer.storage import io_for
from tests.catalogservers import start_hive_metastore, start_rest_catalog
from tests.readerwalk import CATALOGS, COMMITS, write_table

pytestmark = [pytest.mark.smoke, pytest.mark.spark]


@pytest.fixture(scope="module")
def catalogs(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The REST catalog server and the Hive Metastore for this module, as Spark catalogs and as the
    pyiceberg catalogs ``sync_catalog`` moves."""
    rest = start_rest_catalog(tmp_path_factory.mktemp("rest-catalog"), {})
    hms = start_hive_metastore(tmp_path_factory.mktemp("hive-metastore"))
    settings = {
        "spark.sql.catalog.rest": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.rest.type": "rest",
        "spark.sql.catalog.rest.uri": rest.uri,
        "spark.sql.catalog.rest.cache-enabled": "false",
        "spark.sql.catalog.hms": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.hms.type": "hive",
        "spark.sql.catalog.hms.uri": hms.uri,
        "spark.sql.catalog.hms.cache-enabled": "false",
    }
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYICEBERG_CATALOG__REST__TYPE", "rest")
        mp.setenv("PYICEBERG_CATALOG__REST__URI", rest.uri)
        mp.setenv("PYICEBERG_CATALOG__HMS__TYPE", "hive")
        mp.setenv("PYICEBERG_CATALOG__HMS__URI", hms.uri)
        for key, value in settings.items():
            spark.conf.set(key, value)
        try:
            yield
        finally:
            for key in settings:
                spark.conf.unset(key)
            rest.stop()
            hms.stop()


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def _latest_metadata(root: Path) -> Path:
    hint = (root / "metadata" / "version-hint.text").read_text().strip()
    return root / "metadata" / f"v{hint}.metadata.json"


@pytest.mark.usefixtures("catalogs")
@pytest.mark.parametrize("fv", [3, 2])
def test_spark_iceberg_reads_every_commit_through_rest_and_hive(spark: Any, tmp_path: Path, fv: int) -> None:
    path = tmp_path / "t"
    write_table(spark, path, fv)
    table = f"lake.v{fv}"
    snapshots: list[int] = []
    delta: dict[int, list[tuple[Any, ...]]] = {}
    for statement in [None, *COMMITS]:
        if statement is not None:
            spark.sql(statement.format(p=path))
            synced = guard_iceberg_syncs(spark, drain=True)
            assert [s.get("error") for s in synced if str(path) in s["table"]] == [None], statement
        version = read_snapshot(path, io=io_for(path)).version
        delta[version] = _rows(
            spark.read.format("delta")
            .option("versionAsOf", version)
            .load(str(path))
            .select("id", "v", "part")
        )
        for catalog in CATALOGS:
            sync_catalog(catalog, table, str(_latest_metadata(path)), io=io_for(path))
            read = _rows(spark.table(f"{catalog}.{table}").select("id", "v", "part"))
            assert read == delta[version], (catalog, statement)
        snapshots.append(json.loads(_latest_metadata(path).read_text())["current-snapshot-id"])
    listed = spark.sql(f"SELECT snapshot_id FROM rest.{table}.snapshots").collect()
    assert sorted(r[0] for r in listed) == sorted(snapshots)
    assert any(p.suffix == (".puffin" if fv == 3 else ".parquet") for p in (path / "metadata").iterdir())
    past = spark.sql(f"SELECT id, v, part FROM hms.{table} VERSION AS OF {snapshots[0]}")
    assert _rows(past) == delta[0]
    appended = (
        spark.read.format("iceberg")
        .option("start-snapshot-id", str(snapshots[0]))
        .option("end-snapshot-id", str(snapshots[1]))
        .load(f"rest.{table}")
        .select("id", "v", "part")
    )
    assert _rows(appended) == [(100, "i", 0), (101, "i", 1)]
    if fv == 3:  # row lineage: Iceberg's _row_id is Delta's row id, row by row, after every kind of commit
        ours = _rows(spark.sql(f"SELECT id, _row_id FROM rest.{table}"))
        theirs = _rows(spark.read.format("delta").load(str(path)).select("id", "_metadata.row_id"))
        assert ours == theirs
