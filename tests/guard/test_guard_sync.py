"""Iceberg sync after guarded commits: SQL, DataFrame writers, MERGE/UPDATE/DELETE, OPTIMIZE, streaming.

The guard's log store asks the rule service to sync once Delta's commit file exists, when the table's
``delta.universalFormat.enabledFormats`` lists ``iceberg``. The rule service is its own process with
its own environment, so the catalogs are configured for it the way a user would: the Python executable
the guard starts (``spark.icecompat.python``) is a script that sets pyiceberg's
``PYICEBERG_CATALOG__*`` variables and runs the project's interpreter. After every commit pyiceberg
(through the catalog) and DuckDB read delta-spark's rows of that version. One table takes the whole
sequence of statements, so the module stays cheap.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from pyiceberg.catalog import Catalog
from pyspark.sql import SparkSession

from icecompat_writer.errors import SetupError
from icecompat_writer.iceberg import PROP_DELTA_VERSION
from icecompat_writer.iceberg.sync import IcebergSyncWarning
from icecompat_writer.jvm.bridge import call, guard_iceberg_syncs, guarded_syncs
from tests.iceberg._support import duckdb_connect, normalise, spark_rows, stream_once
from tests.iceberg.test_sync import Catalogs, catalogs  # noqa: F401  (the REST catalog server fixture)

pytestmark = pytest.mark.spark

SYNC = "'delta.universalFormat.enabledFormats' = 'iceberg'"
_PYTHON = "spark.icecompat.python"


@pytest.fixture(scope="module")
def service_catalogs(
    spark: SparkSession,
    catalogs: Catalogs,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Catalogs]:
    """The guard's rule service started with pyiceberg catalogs ``local`` (sqlite) and ``rest``."""
    base = tmp_path_factory.mktemp("service")
    script = base / "python-with-catalogs"
    exports = {
        "PYICEBERG_CATALOG__LOCAL__TYPE": "sql",
        "PYICEBERG_CATALOG__LOCAL__URI": f"sqlite:///{catalogs.sql_db}",
        "PYICEBERG_CATALOG__REST__TYPE": "rest",
        "PYICEBERG_CATALOG__REST__URI": catalogs.rest_uri,
    }
    lines = ["#!/bin/sh", *(f"export {k}='{v}'" for k, v in exports.items()), f'exec {sys.executable} "$@"']
    script.write_text("\n".join(lines) + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    before = spark.conf.get(_PYTHON, None)
    spark.conf.set(_PYTHON, str(script))  # a different executable: the guard starts a new service
    guard_iceberg_syncs(spark, drain=True)
    try:
        yield catalogs
    finally:
        if before is None:
            spark.conf.unset(_PYTHON)
        else:
            spark.conf.set(_PYTHON, before)


def _delta_version(spark: SparkSession, root: Path) -> int:
    """The table's latest version, from its log (a commit file exists once the commit is final)."""
    return max(int(p.name[:20]) for p in (root / "_delta_log").glob("*.json"))


def _synced(spark: SparkSession, root: Path) -> list[dict[str, Any]]:
    return [s for s in guard_iceberg_syncs(spark, drain=True) if s["table"].endswith(str(root))]


def _assert_current(
    spark: SparkSession, root: Path, catalog: Catalog, ident: str, version: int, chispa: bool = False
) -> None:
    """Delta is at ``version``; the catalog's Iceberg table is too, and pyiceberg and DuckDB read exactly
    delta-spark's rows of that version (with ``chispa``, also compared as Spark frames: names and types)."""
    assert _delta_version(spark, root) == version
    delta = spark.read.format("delta").option("versionAsOf", version).load(str(root))
    expected = spark_rows(delta)
    table = catalog.load_table(ident)
    assert table.metadata.properties[PROP_DELTA_VERSION] == str(version)
    got = table.scan().to_arrow()
    assert normalise(got) == expected
    if chispa:
        assert_df_equality(spark.createDataFrame(got), delta, ignore_row_order=True, ignore_nullable=True)
    con = duckdb_connect()
    try:
        scanned = con.execute(f"SELECT * FROM iceberg_scan('{table.metadata_location}')").fetch_arrow_table()
    finally:
        con.close()
    assert normalise(scanned) == expected


def _delta_adds(root: Path, version: int) -> set[str]:
    lines = (root / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    return {str(root / json.loads(line)["add"]["path"]) for line in lines if '"add"' in line}


def _assert_snapshot_log(
    spark: SparkSession, root: Path, catalog: Catalog, ident: str, rows_of: tuple[int, ...] = ()
) -> None:
    """One Iceberg snapshot per Delta version, in order, each adding exactly the data files its Delta
    commit added; the snapshots of ``rows_of`` also read delta-spark's rows of that version."""
    table = catalog.load_table(ident)
    snaps = table.metadata.snapshots
    assert [s.sequence_number for s in snaps] == list(range(_delta_version(spark, root) + 1))
    before: set[str] = set()
    for snap in snaps:
        files = {
            t.file.file_path.removeprefix("file:").removeprefix("//")
            for t in table.scan(snapshot_id=snap.snapshot_id).plan_files()
        }
        assert files - before == _delta_adds(root, snap.sequence_number), snap.sequence_number
        before = files
        if snap.sequence_number in rows_of:
            got = normalise(table.scan(snapshot_id=snap.snapshot_id).to_arrow())
            delta = spark.read.format("delta").option("versionAsOf", snap.sequence_number).load(str(root))
            assert got == spark_rows(delta), snap.sequence_number


def test_every_guarded_write_is_synced_before_it_returns(
    guarded: SparkSession, tmp_path: Path, service_catalogs: Catalogs
) -> None:
    spark = guarded
    root = tmp_path / "events"
    t = f"delta.`{root}`"
    ident = "guard.events"
    catalog = service_catalogs.sql()
    steps: list[tuple[str, Any]] = [
        (
            "CTAS",
            lambda: spark.sql(
                f"CREATE TABLE {t} USING delta PARTITIONED BY (part) TBLPROPERTIES "
                f"('delta.enableIcebergCompatV3' = 'true', {SYNC}, 'icecompat.iceberg.catalog' = 'local', "
                f"'icecompat.iceberg.identifier' = '{ident}') "
                "AS SELECT id, CAST(id % 3 AS STRING) AS part, id * 2 AS v FROM range(0, 6)"
            ),
        ),
        ("INSERT", lambda: spark.sql(f"INSERT INTO {t} VALUES (6, '0', 12), (7, '1', 14)")),
        (
            "INSERT OVERWRITE",
            lambda: spark.sql(
                f"INSERT OVERWRITE {t} SELECT id, CAST(id % 3 AS STRING), id * 2 FROM range(0, 10)"
            ),
        ),
        (
            "MERGE",
            lambda: spark.sql(
                f"MERGE INTO {t} AS d USING (SELECT id, CAST(id % 3 AS STRING) AS part, id * 5 AS v "
                "FROM range(8, 13)) AS s ON d.id = s.id "
                "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
            ),
        ),
        ("UPDATE", lambda: spark.sql(f"UPDATE {t} SET v = -v WHERE id < 3")),
        ("DELETE", lambda: spark.sql(f"DELETE FROM {t} WHERE id = 4")),
        (
            "DataFrameWriter V1",
            lambda: (
                spark.range(20, 23)
                .selectExpr("id", "CAST(id % 3 AS STRING) AS part", "id * 2 AS v")
                .write.format("delta")
                .mode("append")
                .save(str(root))
            ),
        ),
        (
            "DataFrameWriter V2",
            lambda: (
                spark.range(30, 32)
                .selectExpr("id", "CAST(id % 3 AS STRING) AS part", "id * 2 AS v")
                .writeTo(t)
                .append()
            ),
        ),
        ("OPTIMIZE", lambda: spark.sql(f"OPTIMIZE {t}")),
    ]
    for version, (what, step) in enumerate(steps):
        step()
        outcome = _synced(spark, root)
        assert [(s["version"], s.get("error")) for s in outcome] == [(version, None)], what
        _assert_current(spark, root, catalog, ident, version)

    # a streaming query, availableNow over two files at one file per trigger: two micro-batches
    flat = tmp_path / "incoming"
    flat.mkdir()
    for n, ids in enumerate((range(40, 43), range(43, 45))):
        rows = [{"id": i, "part": str(i % 3), "v": i * 2} for i in ids]
        (flat / f"{n}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    stream = (
        spark.readStream.schema("id BIGINT, part STRING, v BIGINT")
        .option("maxFilesPerTrigger", 1)
        .json(str(flat))
        .writeStream.format("delta")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start(str(root))
    )
    stream.awaitTermination(300)
    first = len(steps)
    assert [(s["version"], s.get("error")) for s in _synced(spark, root)] == [
        (first, None),
        (first + 1, None),
    ]
    _assert_current(spark, root, catalog, ident, first + 1)

    # a sync that cannot write its metadata file: the commit stands, the failure is recorded (and
    # logged), and the next guarded commit converts both versions
    metadata = root / "metadata"
    taken = max(int(p.name[1:].split(".")[0]) for p in metadata.glob("v*.metadata.json")) + 1
    blocker = metadata / f"v{taken}.metadata.json"
    blocker.mkdir()
    try:
        spark.sql(f"INSERT INTO {t} VALUES (50, '2', 100)")
        with pytest.warns(
            IcebergSyncWarning, match=f"Delta version {first + 2} of .*{root.name}.* committed"
        ):
            failed = [s for s in guarded_syncs(spark) if s["table"].endswith(str(root))]
        assert [s["version"] for s in failed] == [
            first + 2
        ] and "committed; its Iceberg sync failed" in failed[0]["error"]
        assert _delta_version(spark, root) == first + 2
        assert spark.read.format("delta").load(str(root)).where("id = 50").count() == 1
        assert catalog.load_table(ident).metadata.properties[PROP_DELTA_VERSION] == str(first + 1)
    finally:
        blocker.rmdir()
    spark.sql(f"INSERT INTO {t} VALUES (51, '0', 102)")
    assert [(s["version"], s.get("error")) for s in _synced(spark, root)] == [(first + 3, None)]
    _assert_current(spark, root, catalog, ident, first + 3, chispa=True)
    _assert_snapshot_log(spark, root, catalog, ident, rows_of=(first + 2,))


def test_two_guarded_writers_sync_every_version_once_in_order(
    guarded: SparkSession, tmp_path: Path, service_catalogs: Catalogs
) -> None:
    """Two threads of the session append at once; the REST catalog holds every version once, in order."""
    spark = guarded
    root = tmp_path / "shared"
    t = f"delta.`{root}`"
    ident = "guard.shared"
    spark.conf.set("spark.icecompat.iceberg.catalog", "rest")
    try:
        spark.sql(
            f"CREATE TABLE {t} (id BIGINT, w STRING) USING delta TBLPROPERTIES "
            f"('delta.enableIcebergCompatV3' = 'true', {SYNC}, 'icecompat.iceberg.identifier' = '{ident}')"
        )
        errors: list[BaseException] = []

        def writer(name: str, ids: range) -> None:
            try:
                for i in ids:
                    spark.sql(f"INSERT INTO {t} VALUES ({i}, '{name}')")
            except BaseException as e:  # reported by the main thread
                errors.append(e)

        threads = [
            threading.Thread(target=writer, args=("a", range(0, 2))),
            threading.Thread(target=writer, args=("b", range(10, 12))),
        ]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors, errors
        outcome = _synced(spark, root)
        assert sorted(s["version"] for s in outcome) == list(range(5))
        assert all("error" not in s for s in outcome)
        rest = service_catalogs.rest()
        _assert_current(spark, root, rest, ident, 4)
        _assert_snapshot_log(spark, root, rest, ident)
    finally:
        spark.conf.unset("spark.icecompat.iceberg.catalog")


def test_only_tables_asking_for_iceberg_are_synced_and_compat_write_once(
    guarded: SparkSession, tmp_path: Path, service_catalogs: Catalogs
) -> None:
    """A table without the property: no sync, no metadata/. A compat_write commit to a synced table:
    compat_write syncs it, the guard does not sync it again (its commit is trusted)."""
    from icecompat_writer import compat_write

    spark = guarded
    plain = tmp_path / "plain"
    spark.sql(
        f"CREATE TABLE delta.`{plain}` USING delta TBLPROPERTIES ('delta.enableIcebergCompatV3' = 'true') "
        "AS SELECT id FROM range(3)"
    )
    spark.sql(f"INSERT INTO delta.`{plain}` VALUES (3)")
    assert _synced(spark, plain) == [] and not (plain / "metadata").exists()

    synced = tmp_path / "synced"
    result = compat_write(
        spark.range(3).selectExpr("id", "id * 2 AS v"),
        str(synced),
        profile="v3",
        properties={"delta.universalFormat.enabledFormats": "iceberg"},
    )
    assert result.iceberg is not None and result.iceberg.error is None and result.iceberg.lag == 0
    assert _synced(spark, synced) == []  # the guard left it to compat_write
    hint = json.loads((synced / "metadata").joinpath("version-hint.text").read_text() or "0")
    assert hint == 1 and sorted(os.listdir(synced / "metadata")).count("v1.metadata.json") == 1


def test_a_catalog_table_asking_for_iceberg_is_written_and_registered_under_its_name(
    guarded: SparkSession, tmp_path: Path, service_catalogs: Catalogs
) -> None:
    """A table of the Spark session catalog (``uniform_db.events``, managed) with
    ``delta.universalFormat.enabledFormats=iceberg`` and the v3 profile's property: delta-spark alone
    fails every commit of it (its pre-commit Iceberg conversion needs the absent delta-iceberg
    module); under the guard CREATE, INSERT, MERGE, DELETE and a stream into the table all commit,
    and each is synced and registered as ``uniform_db.events`` (the namespace created) without the
    table naming an identifier. After each commit pyiceberg reads exactly delta-spark's rows."""
    spark = guarded
    name = "uniform_db.events"
    catalog = service_catalogs.sql()
    assert "uniform_db" not in {ns[0] for ns in catalog.list_namespaces()}
    spark.conf.set("spark.icecompat.iceberg.catalog", "local")
    spark.sql("CREATE DATABASE IF NOT EXISTS uniform_db")
    try:
        merge = (
            f"MERGE INTO {name} AS d USING (SELECT id, CAST(id % 3 AS STRING) AS part, id * 5 AS v "
            "FROM range(1, 5)) AS s ON d.id = s.id "
            "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
        )
        steps: list[tuple[str, Any]] = [
            (
                "CREATE",
                lambda: spark.sql(
                    f"CREATE TABLE {name} (id BIGINT, part STRING, v BIGINT) USING delta "
                    f"TBLPROPERTIES ('delta.enableIcebergCompatV3' = 'true', {SYNC})"
                ),
            ),
            ("INSERT", lambda: spark.sql(f"INSERT INTO {name} VALUES (0, '0', 0), (1, '1', 2), (2, '2', 4)")),
            ("MERGE", lambda: spark.sql(merge)),
            ("DELETE", lambda: spark.sql(f"DELETE FROM {name} WHERE id = 2")),
            ("stream", lambda: stream_once(spark, name, tmp_path, range(7, 9), table=True)),
        ]
        root = None
        for version, (what, step) in enumerate(steps):
            step()
            if root is None:
                root = Path(spark.sql(f"DESCRIBE DETAIL {name}").first()["location"].removeprefix("file:"))
            outcome = _synced(spark, root)
            assert [(s["version"], s.get("identifier"), s.get("error")) for s in outcome] == [
                (version, name, None)
            ], what
            _assert_current(spark, root, catalog, name, version)
        assert root is not None
        assert spark.table(name).count() == 6
        _assert_snapshot_log(spark, root, catalog, name, rows_of=(1,))

        # the control: a session that switched the guard off keeps delta-spark's own pre-commit step,
        # which cannot commit to the table without the delta-iceberg module (DELTA_MISSING_ICEBERG_CLASS,
        # caused by the ClassNotFoundException the package reports as a SetupError)
        spark.conf.set("spark.icecompat.guard.enabled", "false")
        with pytest.raises(SetupError, match=r"icebergShaded\.IcebergConverter"):
            call(lambda: spark.sql(f"INSERT INTO {name} VALUES (9, '0', 9)"))
        assert _delta_version(spark, root) == len(steps) - 1
    finally:
        spark.conf.unset("spark.icecompat.iceberg.catalog")
        spark.sql("DROP DATABASE IF EXISTS uniform_db CASCADE")
