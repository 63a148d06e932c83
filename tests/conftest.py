"""Shared fixtures: exactly one real SparkSession (Delta + shim) for the whole test run."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.objectstores import S3Server, StoreRoot


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--soak", action="store_true", default=False, help="also run the long soak variants")


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects on the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that uses the shared session (directly or through a fixture) is marked ``spark``;
    soak variants are skipped unless ``--soak`` is given."""
    soak = config.getoption("--soak")
    skip = pytest.mark.skip(reason="soak variant: run with --soak")
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) and "spark" not in item.keywords:
            item.add_marker(pytest.mark.spark)
        if not soak and "soak" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """The one SparkSession of the run: local[2], UI off, Delta and the shim jars loaded.

    It also carries Spark's ``s3a`` and ``abfs`` connectors (the test jars bin/setup fetches); the
    ``s3a`` and ``abfs`` fixtures point them at the run's servers, which start only for the tests that
    use them.
    """
    import icecompat_writer
    from tests.objectstores import s3a_test_jars

    base = tmp_path_factory.mktemp("spark")
    session = icecompat_writer.session(
        "icecompat-tests",
        **{
            "spark.sql.warehouse.dir": str(base / "warehouse"),
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={base / 'derby'}",
            "spark.sql.shuffle.partitions": "2",
            # Delta rebuilds a snapshot's state (log replay) in 50 tasks unless told otherwise: on
            # tables of a few files that is 50 near-empty tasks after every commit and every read.
            # It changes how the replay is split, never its result, nor any checkpoint (whose part
            # count comes from checkpoint.partSize).
            "spark.databricks.delta.snapshotPartitions": "2",
            "spark.jars": ",".join(str(p) for p in s3a_test_jars()),
        },
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """The run's S3-compatible server (moto) on 127.0.0.1; see tests/objectstores.py."""
    from tests.objectstores import start_s3_server

    server = start_s3_server(tmp_path_factory.mktemp("moto"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def s3a(spark: Any, s3_server: S3Server) -> Iterator[S3Server]:
    """The run's S3 server, reached by the shared session's ``s3a`` connector: its settings are put in
    the session's Hadoop configuration on first use, as ``spark.hadoop.*`` settings at start-up put them
    (they touch only ``s3a`` URIs)."""
    from icecompat_writer import storage

    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in s3_server.spark_conf().items():
        hadoop.set(key.removeprefix("spark.hadoop."), value)
    storage.clear_cache()
    yield s3_server
    storage.clear_cache()


@pytest.fixture
def s3_env(s3_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The process environment a user of the moto server would have: AWS_* variables only."""
    for key in ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    for key, value in s3_server.environ().items():
        monkeypatch.setenv(key, value)
    from icecompat_writer import storage

    storage.clear_cache()
    yield s3_server
    storage.clear_cache()


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Azurite's Blob service on 127.0.0.1 for the run (npm-installed on first use)."""
    from tests.objectstores import start_azurite

    server = start_azurite(tmp_path_factory.mktemp("azurite"))
    yield server
    server.stop()


@pytest.fixture
def azure_env(azurite: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The environment a user of the emulator would have: its connection string only."""
    for key in ("AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET"):
        monkeypatch.delenv(key, raising=False)
    for key, value in azurite.environ().items():
        monkeypatch.setenv(key, value)
    from icecompat_writer import storage

    storage.clear_cache()
    yield azurite
    storage.clear_cache()


@pytest.fixture(scope="session")
def abfs(spark: Any, azurite: Any) -> Iterator[Any]:
    """The run's Azurite, reached by the shared session's ``abfs`` connector (its settings are set on
    the session once, on first use; they touch only ``abfs`` URIs)."""
    from icecompat_writer import storage

    for key, value in azurite.abfs_conf().items():
        spark.conf.set(key, value)
    storage.clear_cache()
    yield azurite
    storage.clear_cache()


@pytest.fixture(params=["s3a", "abfs"])
def store(request: pytest.FixtureRequest) -> Callable[[str], StoreRoot]:
    """A new empty bucket (container) on each object store the shared session reaches, as a function
    of a table name: the table's URI and a digest of every object below the bucket. One test written
    against it runs once per store (``s3a`` on moto, ``abfs`` on Azurite)."""
    from icecompat_writer import storage

    storage.clear_cache()
    if request.param == "s3a":
        s3: S3Server = request.getfixturevalue("s3a")

        def on_s3(name: str) -> StoreRoot:
            bucket = s3.new_bucket()
            return StoreRoot(f"s3a://{bucket}/warehouse/{name}", lambda: s3.bucket_digest(bucket))

        return on_s3
    azure = request.getfixturevalue("abfs")

    def on_azure(name: str) -> StoreRoot:
        container = azure.new_container()
        uri = f"abfs://{container}@{azure.abfs_host}/warehouse/{name}"
        return StoreRoot(uri, lambda: azure.container_digest(container))

    return on_azure


@pytest.fixture
def table_path(tmp_path: Path) -> Path:
    """A fresh, not yet existing table location."""
    return tmp_path / "table"


@pytest.fixture(scope="session")
def hive_metastore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Apache Hive's standalone metastore (Thrift, embedded Derby) on 127.0.0.1 for the run, started by
    the first test that uses it; see tests/catalogservers.py."""
    from tests.catalogservers import start_hive_metastore

    server = start_hive_metastore(tmp_path_factory.mktemp("hive-metastore"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def rest_catalog(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Apache Iceberg's REST catalog test server on 127.0.0.1 for the run, its FileIO reaching local
    files and the run's S3 server; started by the first test that uses it. See tests/catalogservers.py."""
    from tests.catalogservers import start_rest_catalog

    s3 = {
        "s3.endpoint": s3_server.endpoint,
        "s3.access-key-id": s3_server.access_key,
        "s3.secret-access-key": s3_server.secret_key,
        "s3.path-style-access": "true",
        "client.region": s3_server.region,
    }
    server = start_rest_catalog(tmp_path_factory.mktemp("rest-catalog"), s3)
    yield server
    server.stop()
