"""Shared fixtures: exactly one real SparkSession (Delta + shim) for the whole test run."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.objectstores import S3Server, Store


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--soak", action="store_true", default=False, help="also run the long soak variants")


# Fixtures that start a server (or reach one): a test using any of them is an integration test.
SERVER_FIXTURES = frozenset(
    {"s3_server", "s3a", "s3_env", "serial_s3", "serial_env", "azurite", "abfs", "azure_env"}
    | {"rest_catalog", "hive_metastore", "trino"}
)


def _integration(item: pytest.Item) -> bool:
    """Spark, or a server: anything else is a unit test (pure Python, local files, seconds). A test
    that starts Spark or a server in a child process says so itself (``@pytest.mark.integration``)."""
    if "integration" in item.keywords:
        return True
    names = set(getattr(item, "fixturenames", ()))
    callspec = getattr(item, "callspec", None)
    if "store" in names and callspec is not None and callspec.params.get("store") != "local":
        return True
    return "spark" in item.keywords or bool(names & SERVER_FIXTURES)


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects on the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that uses the shared session (directly or through a fixture) is marked ``spark``;
    every test that uses Spark or a server is marked ``integration``, every other ``unit``; soak
    variants are skipped unless ``--soak`` is given."""
    soak = config.getoption("--soak")
    skip = pytest.mark.skip(reason="soak variant: run with --soak")
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) and "spark" not in item.keywords:
            item.add_marker(pytest.mark.spark)
        item.add_marker(pytest.mark.integration if _integration(item) else pytest.mark.unit)
        if not soak and "soak" in item.keywords:
            item.add_marker(skip)


class _UnitFirst:
    @pytest.hookimpl(trylast=True)  # after ``-m`` and after pytest's grouping by fixture parameters
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        _unit_first(items)


@pytest.hookimpl(tryfirst=True)  # the seed is set before hypothesis's plugin reads its option
def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_UnitFirst(), "icecompat-unit-first")
    seed = os.environ.get("ICECOMPAT_HYPOTHESIS_SEED", "0")  # fixed unless asked: a run replays
    if config.getoption("hypothesis_seed", None) is None:
        # every hypothesis test draws from this seed; kept a string: the plugin skips a falsy 0
        config.option.hypothesis_seed = str(int(seed))


def pytest_report_header(config: pytest.Config) -> str:
    seed = config.getoption("hypothesis_seed", None)
    return f"hypothesis seed: {seed if seed is not None else 'random'} (ICECOMPAT_HYPOTHESIS_SEED)"


def _unit_first(items: list[pytest.Item]) -> None:
    """Unit tests run before integration tests (a broken unit fails in the first minute), in their
    collection order. A unit test that shares a module-scoped fixture with an integration test of
    its module stays with its module, so that no module fixture is built twice."""
    shared: dict[Any, set[str]] = {}
    for item in items:
        if "integration" in item.keywords:
            shared.setdefault(item.module, set()).update(_wide_fixtures(item))

    def early(item: pytest.Item) -> bool:
        return "unit" in item.keywords and not (_wide_fixtures(item) & shared.get(item.module, set()))

    items[:] = [i for i in items if early(i)] + [i for i in items if not early(i)]


def _wide_fixtures(item: pytest.Item) -> set[str]:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return set()
    return {
        name
        for name, defs in info.name2fixturedefs.items()
        if defs and defs[-1].scope in ("module", "class", "package")
    }


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
    # Python tasks (footers read on the executors) run this interpreter, which has the package's
    # dependencies, not whatever ``python3`` is first on PATH; read when the SparkContext starts.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
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
            # Spark's 1 GB default heap filled to about 90% by the end of the run: Delta keeps a
            # snapshot cache entry per table read (hundreds of tables), so the last modules ran with
            # the collector working on an almost full heap.
            "spark.driver.memory": "2g",
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


@pytest.fixture(scope="session")
def serial_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A moto server that handles one request at a time, as S3 decides conditional creates one by one
    (moto's threaded server checks ``If-None-Match`` and stores without a lock); for create races."""
    from tests.objectstores import start_s3_server

    server = start_s3_server(tmp_path_factory.mktemp("moto-serial"), serial=True)
    yield server
    server.stop()


@pytest.fixture
def serial_env(serial_s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    """The AWS variables pointing at the one-request-at-a-time server."""
    from icecompat_writer import storage

    for key, value in serial_s3.environ().items():
        monkeypatch.setenv(key, value)
    storage.clear_cache()
    yield serial_s3
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


@pytest.fixture(params=["local", "s3a", "abfs"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """The store a test runs on, once per store: a local directory, ``s3a`` on moto, ``abfs`` on
    Azurite (``store("t")``: a new empty bucket and the table's location in it; see Store). Reached as
    the test's own code reaches it: through the shared session's connectors when the test uses
    ``spark``, through the standard environment variables otherwise (no Spark started). A test that
    needs fewer stores narrows it: ``@pytest.mark.parametrize("store", [...], indirect=True)``."""
    from icecompat_writer import storage

    storage.clear_cache()
    uses_spark = "spark" in request.fixturenames
    server = {
        "local": lambda: None,
        "s3a": lambda: request.getfixturevalue("s3a" if uses_spark else "s3_env"),
        "abfs": lambda: request.getfixturevalue("abfs" if uses_spark else "azure_env"),
    }[request.param]()
    return Store(request.param, server, tmp_path / "store", spark=uses_spark)


@pytest.fixture
def table_path(tmp_path: Path) -> Path:
    """A fresh, not yet existing table location."""
    return tmp_path / "table"


@pytest.fixture(scope="session")
def hive_metastore(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Apache Hive's standalone metastore (Thrift, embedded Derby) on 127.0.0.1 for the run, started by
    the first test that uses it, its S3A connector pointed at the run's S3 server (it checks a new
    table's location itself); see tests/catalogservers.py."""
    from tests.catalogservers import start_hive_metastore

    hadoop = {k.removeprefix("spark.hadoop."): v for k, v in s3_server.spark_conf().items()}
    server = start_hive_metastore(tmp_path_factory.mktemp("hive-metastore"), hadoop=hadoop)
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


@pytest.fixture(scope="session")
def trino(rest_catalog: Any, hive_metastore: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A single Trino 470 node on 127.0.0.1 for the run (Iceberg connector only, 1 GB heap) with two
    catalogs on the run's catalog servers: ``rest`` and ``hms``. Tables on local disk are read through
    Trino's Hadoop file system (``fs.hadoop.enabled``). Started by the first test that uses it; see
    tests/trinoserver.py."""
    from tests.trinoserver import start_trino

    files = {"connector.name": "iceberg", "fs.hadoop.enabled": "true"}
    catalogs = {
        "rest": {**files, "iceberg.catalog.type": "rest", "iceberg.rest-catalog.uri": rest_catalog.uri},
        "hms": {**files, "iceberg.catalog.type": "hive_metastore", "hive.metastore.uri": hive_metastore.uri},
    }
    server = start_trino(tmp_path_factory.mktemp("trino"), catalogs)
    yield server
    server.stop()
