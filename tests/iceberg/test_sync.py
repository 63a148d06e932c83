"""Iceberg kept current: sync after every compat_write commit, registration in real Iceberg catalogs.

Catalogs are real: pyiceberg's SQL catalog on a sqlite file, and Apache Iceberg's own REST catalog
test server (``RESTCatalogServer``, JDBC backend), the run's one, on 127.0.0.1 (``rest_catalog``).
Every Delta version is read back through both catalogs and DuckDB and compared with delta-spark's rows
of that version; Iceberg Java reads the last one through the REST catalog.
"""

from __future__ import annotations

import json
import os
import signal
import textwrap
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.table import StaticTable
from pyspark.sql import DataFrame, SparkSession

from icecompat_writer.cli.main import main as icecompat_main
from icecompat_writer.iceberg import PROP_DELTA_VERSION
from icecompat_writer.iceberg.catalogs import CatalogError, sync_catalog
from icecompat_writer.iceberg.sync import IcebergSyncWarning, converted_version, sync_after_commit
from icecompat_writer.storage import io_for
from icecompat_writer.writing.api import WriteResult, compat_write
from tests.catalogservers import RestCatalogServer, iceberg_java_read
from tests.support import start_child_driver

from ._support import duckdb_connect, normalise, spark_rows

SYNC = {"delta.universalFormat.enabledFormats": "iceberg"}


@dataclass
class Catalogs:
    sql_db: Path
    rest_uri: str

    def sql(self) -> Catalog:
        return load_catalog("local", type="sql", uri=f"sqlite:///{self.sql_db}")

    def rest(self) -> Catalog:
        return load_catalog("rest", type="rest", uri=self.rest_uri)


@pytest.fixture(scope="module")
def catalogs(rest_catalog: RestCatalogServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalogs]:
    """The sqlite SQL catalog ``local`` and the run's REST catalog ``rest``, configured through
    pyiceberg's own environment variables, as a user would."""
    base = tmp_path_factory.mktemp("catalogs")
    found = Catalogs(base / "catalog.db", rest_catalog.uri)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYICEBERG_CATALOG__LOCAL__TYPE", "sql")
        mp.setenv("PYICEBERG_CATALOG__LOCAL__URI", f"sqlite:///{found.sql_db}")
        mp.setenv("PYICEBERG_CATALOG__LOCAL__WAREHOUSE", f"file://{base / 'sql-warehouse'}")
        mp.setenv("PYICEBERG_CATALOG__REST__TYPE", "rest")
        mp.setenv("PYICEBERG_CATALOG__REST__URI", rest_catalog.uri)
        yield found


def _frame(spark: SparkSession, ids: range) -> DataFrame:
    return spark.range(ids.start, ids.stop).selectExpr("id", "cast(id % 3 as string) as part", "id * 2 as v")


def _delta_rows(spark: SparkSession, root: Path, version: int) -> list[dict[str, Any]]:
    return spark_rows(spark.read.format("delta").option("versionAsOf", version).load(str(root)))


def _catalog_version(catalog: Catalog, identifier: str) -> int:
    return int(catalog.load_table(identifier).metadata.properties[PROP_DELTA_VERSION])


def _assert_readers_agree(
    spark: SparkSession, root: Path, result: WriteResult, catalogs: Catalogs, identifier: str
) -> None:
    """After a commit: the sync is current, and both catalogs and DuckDB read delta-spark's rows."""
    assert result.version is not None and result.iceberg is not None
    synced = result.iceberg
    assert synced.error is None, synced.error
    assert (synced.delta_version, synced.converted_version, synced.lag) == (result.version, result.version, 0)
    expected = _delta_rows(spark, root, result.version)
    for catalog in (catalogs.rest(), catalogs.sql()):
        table = catalog.load_table(identifier)
        assert table.metadata.properties[PROP_DELTA_VERSION] == str(result.version)
        assert table.metadata.current_snapshot_id == synced.snapshot_id
        assert normalise(table.scan().to_arrow()) == expected
        # the metadata file the catalog points at is a complete table for DuckDB too
        con = duckdb_connect()
        try:
            got = con.execute(f"SELECT * FROM iceberg_scan('{table.metadata_location}')").fetch_arrow_table()
        finally:
            con.close()
        assert normalise(got) == expected


@pytest.mark.spark
def test_every_commit_is_synced_and_current_in_both_catalogs(
    spark: SparkSession,
    tmp_path: Path,
    catalogs: Catalogs,
    rest_catalog: RestCatalogServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The REST catalog is kept current by compat_write itself (session conf names it, the table property
    the identifier); the sqlite catalog by ``icecompat iceberg --catalog local --identifier``. Iceberg
    Java's generic reader reads the last version through the REST catalog too."""
    root = tmp_path / "events"
    ident = "db.events"
    props = {**SYNC, "icecompat.iceberg.identifier": ident}
    spark.conf.set("spark.icecompat.iceberg.catalog", "rest")
    try:
        writes = [
            lambda: compat_write(
                _frame(spark, range(0, 6)), str(root), partition_by="part", properties=props
            ),
            lambda: compat_write(_frame(spark, range(6, 9)), str(root), mode="append"),
            lambda: compat_write(_frame(spark, range(20, 24)), str(root), mode="overwrite"),
        ]
        for expected_version, write in enumerate(writes):
            result = write()
            assert result.version == expected_version
            assert result.iceberg is not None and result.iceberg.catalog is not None
            assert result.iceberg.catalog.catalog == "rest"
            assert result.iceberg.catalog.action == ("registered" if expected_version == 0 else "committed")
            assert icecompat_main(["iceberg", str(root), "--catalog", "local", "--identifier", ident]) == 0
            out = capsys.readouterr().out
            assert "already at Delta version" in out  # compat_write converted it already
            assert f"catalog local: {ident} {'registered' if expected_version == 0 else 'committed'}" in out
            _assert_readers_agree(spark, root, result, catalogs, ident)
        # one Iceberg snapshot per Delta version, in order, in the catalog's table too
        snaps = catalogs.rest().load_table(ident).metadata.snapshots
        assert [s.sequence_number for s in snaps] == [0, 1, 2]
        snapshot, rows = iceberg_java_read(rest_catalog, ident)
        assert snapshot == result.iceberg.snapshot_id
        assert sorted(rows, key=lambda r: r["id"]) == _delta_rows(spark, root, 2)
    finally:
        spark.conf.unset("spark.icecompat.iceberg.catalog")


def _race(name: str, catalog: Catalog, files: dict[int, Path]) -> None:
    """Many syncs of versions 0..2 at once on a fresh identifier while a reader watches the pointer."""
    seen: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            try:
                seen.append(_catalog_version(catalog, "race.u"))
            except Exception:  # not registered yet
                pass

    watcher = threading.Thread(target=watch)
    watcher.start()
    errors: list[BaseException] = []

    def run(v: int) -> None:
        try:
            sync_catalog(name, "race.u", str(files[v]), io=io_for(str(files[v])))
        except BaseException as err:  # collected and asserted below
            errors.append(err)

    threads = [threading.Thread(target=run, args=(v,)) for v in (1, 0, 2, 0, 1, 2, 1, 0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    watcher.join()
    assert errors == []
    assert _catalog_version(catalog, "race.u") == 2
    assert seen == sorted(seen), f"{name}: the pointer moved back: {seen}"
    assert [s.sequence_number for s in catalog.load_table("race.u").metadata.snapshots] == [0, 1, 2]


@pytest.mark.spark
def test_the_catalog_pointer_never_moves_back(
    spark: SparkSession, tmp_path: Path, catalogs: Catalogs
) -> None:
    """Syncs of older metadata, alone or racing newer ones, leave each catalog at the newest version."""
    root = tmp_path / "race"
    compat_write(_frame(spark, range(0, 3)), str(root), properties=SYNC)
    compat_write(_frame(spark, range(3, 6)), str(root), mode="append")
    compat_write(_frame(spark, range(6, 9)), str(root), mode="overwrite")
    meta = root / "metadata"
    files = {
        int(json.loads(p.read_text())["properties"][PROP_DELTA_VERSION]): p
        for p in meta.glob("v*.metadata.json")
    }
    assert sorted(files) == [0, 1, 2]
    for name, catalog in (("local", catalogs.sql()), ("rest", catalogs.rest())):
        assert sync_catalog(name, "race.t", str(files[2]), io=io_for(str(files[2]))).action == "registered"
        late = sync_catalog(
            name, "race.t", str(files[0]), io=io_for(str(files[0]))
        )  # a slower sync of an older version
        assert (late.action, late.catalog_delta_version) == ("current", 2)
        assert _catalog_version(catalog, "race.t") == 2

        _race(name, catalog, files)

    with pytest.raises(CatalogError, match="another table"):
        other = tmp_path / "other"
        compat_write(_frame(spark, range(0, 1)), str(other), properties=SYNC)
        sync_catalog(
            "local",
            "race.t",
            str(next((other / "metadata").glob("v*.metadata.json"))),
            io=io_for(str(next((other / "metadata").glob("v*.metadata.json")))),
        )
    with pytest.raises(CatalogError, match="no Iceberg catalog named 'nowhere'"):
        sync_catalog("nowhere", "race.t", str(files[2]), io=io_for(str(files[2])))


CHILD = textwrap.dedent(
    """
    import json, sys, time
    import icecompat_writer
    import icecompat_writer.iceberg.sync as sync
    from icecompat_writer.writing.api import compat_write

    def held(*args, **kwargs):
        print("DELTA COMMITTED", flush=True)  # the Delta commit is done; the Iceberg commit is next
        time.sleep(600)

    sync.write_iceberg_metadata = held
    spark = icecompat_writer.session("sync-crash-child", **json.loads(sys.argv[2]))
    df = spark.range(100, 104).selectExpr("id", "cast(id % 3 as string) as part", "id * 2 as v")
    print("READY", flush=True)
    sys.stdin.readline()  # told to write: the table has its version 0
    compat_write(df, sys.argv[1], mode="append")
    print("RETURNED", flush=True)
    """
)


@pytest.mark.spark
def test_a_kill_between_the_delta_and_iceberg_commits_is_caught_up(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGKILL after Delta commits version 1 and before its Iceberg commit; the next write's sync converts
    versions 1 and 2: no snapshot lost or doubled, each reads what delta-spark reads."""
    root = tmp_path / "crash"
    # The child's driver starts while this process makes version 0; it writes once told to.
    proc = start_child_driver(CHILD, str(root))
    try:
        first = compat_write(_frame(spark, range(0, 4)), str(root), properties=SYNC)
        assert first.iceberg is not None and first.iceberg.converted_version == 0
        assert proc.stdin is not None and proc.stdout is not None
        assert proc.stdout.readline().strip() == "READY"
        proc.stdin.write("write\n")
        proc.stdin.flush()
        line = proc.stdout.readline().strip()
        assert line == "DELTA COMMITTED", line
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    assert (root / "_delta_log" / f"{1:020d}.json").exists()
    assert converted_version(root, io=io_for(root)) == 0  # Iceberg is one version behind
    assert icecompat_main(["check", str(root), "--json"]) == 0
    lag = json.loads(capsys.readouterr().out)["iceberg"]
    assert lag == {"delta_version": 1, "converted_version": 0, "lag": 1}

    result = compat_write(_frame(spark, range(10, 12)), str(root), mode="append")
    assert result.version == 2 and result.iceberg is not None
    assert (result.iceberg.converted_version, result.iceberg.lag) == (2, 0)
    assert icecompat_main(["check", str(root)]) == 0
    assert "Iceberg: converted up to Delta version 2 of 2 (lag 0)" in capsys.readouterr().out
    meta = json.loads(Path(str(result.iceberg.metadata_location)).read_text())
    snaps = sorted(meta["snapshots"], key=lambda s: s["sequence-number"])
    assert [s["sequence-number"] for s in snaps] == [0, 1, 2]
    table = StaticTable.from_metadata(str(result.iceberg.metadata_location))
    for snap in snaps:
        got = normalise(table.scan(snapshot_id=snap["snapshot-id"]).to_arrow())
        assert got == _delta_rows(spark, root, snap["sequence-number"])


@pytest.mark.spark
def test_a_failed_sync_warns_keeps_the_commit_and_the_next_sync_catches_up(
    spark: SparkSession, tmp_path: Path, catalogs: Catalogs
) -> None:
    """A catalog that cannot be loaded: the write returns its Delta version with a warning and the error;
    once the catalog is configured, the next write brings it to the latest version."""
    root = tmp_path / "warn"
    props = {**SYNC, "icecompat.iceberg.catalog": "later", "icecompat.iceberg.identifier": "w.t"}
    with pytest.warns(IcebergSyncWarning, match="no Iceberg catalog named 'later'"):
        result = compat_write(_frame(spark, range(0, 3)), str(root), properties=props)
    assert result.version == 0 and result.iceberg is not None
    assert result.iceberg.error is not None and result.iceberg.catalog is None
    assert spark.read.format("delta").load(str(root)).count() == 3  # the Delta commit stands
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYICEBERG_CATALOG__LATER__TYPE", "sql")
        mp.setenv("PYICEBERG_CATALOG__LATER__URI", f"sqlite:///{catalogs.sql_db}")
        result = compat_write(_frame(spark, range(3, 5)), str(root), mode="append")
        assert result.iceberg is not None and result.iceberg.error is None
        assert result.iceberg.catalog is not None and result.iceberg.catalog.action == "registered"
        table = load_catalog("later", type="sql", uri=f"sqlite:///{catalogs.sql_db}").load_table("w.t")
        assert table.metadata.properties[PROP_DELTA_VERSION] == "1"
        assert normalise(table.scan().to_arrow()) == _delta_rows(spark, root, 1)


@pytest.mark.spark
def test_a_table_without_the_property_is_not_synced(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "plain"
    result = compat_write(_frame(spark, range(0, 2)), str(root))
    assert result.iceberg is None and not (root / "metadata").exists()


@pytest.mark.spark
def test_racing_syncs_convert_every_version_once(spark: SparkSession, tmp_path: Path) -> None:
    """Four syncs at once on a table with three unconverted versions: each returns current, and the
    Iceberg history holds every Delta version once, in order."""
    root = tmp_path / "racing"
    compat_write(_frame(spark, range(0, 2)), str(root))
    compat_write(_frame(spark, range(2, 4)), str(root), mode="append")
    compat_write(_frame(spark, range(4, 6)), str(root), mode="overwrite")
    assert converted_version(root, io=io_for(root)) is None
    results: list[Any] = []

    def run() -> None:
        results.append(sync_after_commit(str(root), 2, SYNC, io=io_for(str(root))))

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [(r.error, r.converted_version, r.lag) for r in results] == [(None, 2, 0)] * 4
    assert sorted(p.name for p in (root / "metadata").glob("v*.metadata.json")) == ["v1.metadata.json"]
    meta = json.loads((root / "metadata" / "v1.metadata.json").read_text())
    assert sorted(s["sequence-number"] for s in meta["snapshots"]) == [0, 1, 2]


@pytest.mark.spark
@pytest.mark.parametrize("profile", ["writer-v1", "writer-v3"])
def test_every_profile_accepts_the_property_and_syncs(
    spark: SparkSession, tmp_path: Path, profile: str
) -> None:
    """The UniForm property is neither refused by compat_write's planner nor by delta-spark, in the
    writer profiles too (``v3`` is covered above), and the first commit is synced."""
    root = tmp_path / profile
    with warnings.catch_warnings():
        warnings.simplefilter("error", IcebergSyncWarning)
        result = compat_write(_frame(spark, range(0, 3)), str(root), profile=profile, properties=SYNC)
    assert result.iceberg is not None and result.iceberg.error is None
    assert (result.iceberg.converted_version, result.iceberg.lag) == (0, 0)
    table = StaticTable.from_metadata(str(result.iceberg.metadata_location))
    assert normalise(table.scan().to_arrow()) == _delta_rows(spark, root, 0)
    conf = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES delta.`{root}`").collect()}
    assert conf["delta.universalFormat.enabledFormats"] == "iceberg"
