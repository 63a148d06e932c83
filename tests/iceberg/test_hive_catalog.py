"""Iceberg tables kept current in a real Hive Metastore through pyiceberg's Hive catalog.

The metastore is Apache Hive's standalone metastore 3.1.3 (Thrift, embedded Derby), one for the run
(``hive_metastore`` fixture). The catalog ``hms`` is configured with pyiceberg's environment variables
only (``type: hive``, ``uri: thrift://...``), in this process and in the guard's rule service. One
local table with ``delta.universalFormat.enabledFormats=iceberg`` is walked through compat_write, SQL
INSERT, MERGE and DELETE and a Structured Streaming write on the shared (guarded) session: the table
property names the catalog, so compat_write syncs ``lake.orders`` in this process and the guard's rule
service syncs the SQL and streaming commits; ``icecompat iceberg --catalog hms`` keeps a second
identifier, ``lake.orders_cli``, current. After every commit pyiceberg reads exactly delta-spark's
rows of that version through the metastore, and the metastore's pointer is the emitter's own metadata
file. An ``s3a`` table (compat_write, INSERT, DELETE) is registered and kept current the same way, the
metastore's S3A connector pointed at the run's S3 server as a user's metastore is pointed at the bucket.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog import Catalog, load_catalog
from pyspark.sql import SparkSession

from icecompat_writer.cli.main import main as icecompat_main
from icecompat_writer.iceberg import PROP_DELTA_VERSION
from icecompat_writer.iceberg.catalogs import CatalogError, _swap_hive_pointer, load_catalog_for, sync_catalog
from icecompat_writer.jvm.bridge import guard_iceberg_syncs
from icecompat_writer.storage import io_for
from icecompat_writer.writing.api import compat_write
from tests.catalogservers import HiveMetastore
from tests.objectstores import S3Server

from ._support import assert_synced, catalogs_configured, guarded_walk, normalise, spark_rows

SYNC = {"delta.universalFormat.enabledFormats": "iceberg"}
IDENT = "lake.orders"
CLI_IDENT = "lake.orders_cli"


@pytest.fixture(scope="module")
def hms(
    spark: SparkSession, hive_metastore: HiveMetastore, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Catalog]:
    """pyiceberg's Hive catalog ``hms`` on the run's metastore, configured by environment variables here
    and in the guard's rule service (a wrapper of the interpreter that exports them, as a user's
    ``spark.icecompat.python`` would)."""
    base = tmp_path_factory.mktemp("hms-catalog")
    exports = {"PYICEBERG_CATALOG__HMS__TYPE": "hive", "PYICEBERG_CATALOG__HMS__URI": hive_metastore.uri}
    with catalogs_configured(spark, base, exports):
        yield load_catalog("hms", type="hive", uri=hive_metastore.uri)


def _frame(spark: SparkSession, ids: range) -> Any:
    return spark.range(ids.start, ids.stop).selectExpr("id", "cast(id % 3 as string) as part", "id * 2 as v")


def _hive_table(catalog: Catalog, identifier: str) -> Any:
    """The metastore's own record of the table (Thrift ``Table``)."""
    database, name = identifier.split(".")
    with catalog._client as client:  # type: ignore[attr-defined]
        return client.get_table(dbname=database, tbl_name=name)


def _hive_parameters(catalog: Catalog, identifier: str) -> dict[str, str]:
    return dict(_hive_table(catalog, identifier).parameters)


@pytest.mark.spark
def test_a_table_is_kept_current_in_a_hive_metastore(
    spark: SparkSession, hms: Catalog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "orders"
    t = f"delta.`{root}`"
    props = {**SYNC, "icecompat.iceberg.catalog": "hms", "icecompat.iceberg.identifier": IDENT}
    steps: list[tuple[str, Any]] = [
        ("compat_write", lambda: compat_write(_frame(spark, range(0, 6)), str(root), properties=props)),
        *guarded_walk(spark, t, str(root), tmp_path),
    ]
    pointers: list[str] = []
    for version, (what, step) in enumerate(steps):
        assert_synced(spark, step(), version, what, str(root))
        cli = ["iceberg", str(root), "--catalog", "hms", "--identifier", CLI_IDENT]
        assert icecompat_main(cli) == 0, what
        out = capsys.readouterr().out
        assert f"catalog hms: {CLI_IDENT} {'registered' if version == 0 else 'committed'}" in out, out
        expected = spark_rows(spark.read.format("delta").option("versionAsOf", version).load(str(root)))
        for ident in (IDENT, CLI_IDENT):
            table = hms.load_table(ident)
            assert table.metadata.properties[PROP_DELTA_VERSION] == str(version), (what, ident)
            # the metastore points at the emitter's own file, not a copy written by the catalog
            assert table.metadata_location.endswith(f"{root}/metadata/v{version + 1}.metadata.json")
            assert normalise(table.scan().to_arrow()) == expected, (what, ident)
        params = _hive_parameters(hms, IDENT)
        assert params["table_type"] == "ICEBERG"
        assert params.get("previous_metadata_location") == (pointers[-1] if pointers else None)
        pointers.append(params["metadata_location"])

    # an older version offered late leaves the pointer where it is
    late = sync_catalog("hms", IDENT, pointers[0], io=io_for(pointers[0]))
    assert (late.action, late.catalog_delta_version) == ("current", 4)
    assert _hive_parameters(hms, IDENT)["metadata_location"] == pointers[-1]

    # a swap from a pointer read before another sync moved the table is refused under the metastore's
    # table lock and writes nothing
    before = _hive_parameters(hms, IDENT)
    catalog = load_catalog_for("hms", io=io_for(root))
    metadata = catalog.load_table(IDENT).metadata
    assert not _swap_hive_pointer(catalog, IDENT, pointers[1], pointers[2], metadata)
    assert _hive_parameters(hms, IDENT) == before

    # another table under the same identifier is refused, naming the uuid, and the pointer stays
    other = tmp_path / "other"
    compat_write(_frame(spark, range(0, 1)), str(other), properties=SYNC)
    with pytest.raises(CatalogError, match="another table"):
        sync_catalog("hms", IDENT, str(other / "metadata" / "v1.metadata.json"), io=io_for(other))
    assert _hive_parameters(hms, IDENT)["metadata_location"] == pointers[-1]




@pytest.mark.spark
def test_an_s3_table_is_kept_current_in_a_hive_metastore(
    spark: SparkSession, hms: Catalog, s3a: S3Server, hive_metastore: HiveMetastore, tmp_path: Path
) -> None:
    """The metastore (its S3A connector pointed at the run's S3 server) registers and keeps current an
    ``s3a`` table whose metadata it finds at ``s3://`` URIs; the sync reaches the bucket with the
    session's ``fs.s3a.*`` settings only (the ``hms`` catalog has no ``s3.*`` property)."""
    bucket = s3a.new_bucket("hms")
    root = f"s3a://{bucket}/warehouse/orders"
    ident = "lake.orders_s3"
    metadata_dir = f"s3://{bucket}/warehouse/orders/metadata"  # Iceberg's scheme, not Hadoop's s3a
    props = {**SYNC, "icecompat.iceberg.catalog": "hms", "icecompat.iceberg.identifier": ident}
    walk = dict(guarded_walk(spark, f"delta.`{root}`", root, tmp_path))
    steps: list[tuple[str, Any]] = [
        ("compat_write", lambda: compat_write(_frame(spark, range(0, 6)), root, properties=props)),
        ("INSERT", walk["INSERT"]),
        ("DELETE", walk["DELETE"]),
    ]
    # what a reader outside Spark (a user's pyiceberg) configures to reach the bucket
    reader = load_catalog(
        "hms-reader",
        type="hive",
        uri=hive_metastore.uri,
        **{
            "s3.endpoint": s3a.endpoint,
            "s3.access-key-id": s3a.access_key,
            "s3.secret-access-key": s3a.secret_key,
            "s3.region": s3a.region,
        },
    )
    guard_iceberg_syncs(spark, drain=True)
    pointers: list[str] = []
    for version, (what, step) in enumerate(steps):
        assert_synced(spark, step(), version, what, root)
        table = reader.load_table(ident)
        assert table.metadata.properties[PROP_DELTA_VERSION] == str(version), what
        assert table.metadata_location == f"{metadata_dir}/v{version + 1}.metadata.json"
        expected = spark_rows(spark.read.format("delta").option("versionAsOf", version).load(root))
        assert normalise(table.scan().to_arrow()) == expected, what
        params = _hive_parameters(hms, ident)
        assert params["metadata_location"] == table.metadata_location
        assert params.get("previous_metadata_location") == (pointers[-1] if pointers else None)
        pointers.append(params["metadata_location"])
    assert [r["id"] for r in normalise(reader.load_table(ident).scan().to_arrow())] == [0, 1, 3, 4, 5, 6, 7]
    # the location the metastore resolved through its own S3A connector when the table was registered
    assert _hive_table(hms, ident).sd.location == f"s3://{bucket}/warehouse/orders"

    # the version 0 sync offered late, by its s3a URI as the guard names it, leaves the pointer alone
    late_pointer = pointers[0].replace("s3://", "s3a://")
    late = sync_catalog("hms", ident, late_pointer, io=io_for(late_pointer))
    assert (late.action, late.catalog_delta_version) == ("current", 2)
    # a swap from a pointer read before the DELETE's sync moved it is refused under the table lock
    before = _hive_parameters(hms, ident)
    # its FileIO from the session's fs.s3a.* settings
    catalog = load_catalog_for("hms", pointers[-1], io=io_for(pointers[-1]))
    metadata = catalog.load_table(ident).metadata
    assert not _swap_hive_pointer(catalog, ident, pointers[1], pointers[0], metadata)
    assert _hive_parameters(hms, ident) == before
