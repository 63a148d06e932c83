"""Shared fixtures: exactly one real SparkSession (Delta + shim) for the whole test run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.objectstores import S3Server


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--soak", action="store_true", default=False, help="also run the long soak variants")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--soak"):
        return
    skip = pytest.mark.skip(reason="soak variant: run with --soak")
    for item in items:
        if "soak" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory, s3_server: S3Server) -> Iterator:
    """The one SparkSession of the run: local[2], UI off, Delta and the shim jars loaded.

    It also carries Spark's ``s3a`` connector (the test jars bin/setup fetches) pointed at the run's S3
    server, so a test reaches ``s3a://<bucket>/...`` through the same session as local tables.
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
            "spark.jars": ",".join(str(p) for p in s3a_test_jars()),
            **s3_server.spark_conf(),
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


@pytest.fixture
def table_path(tmp_path: Path) -> Path:
    """A fresh, not yet existing table location."""
    return tmp_path / "table"
