"""Fixtures of the storage tests: the moto S3 server reached through the standard AWS variables."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from icecompat_writer import storage


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
    storage.clear_cache()
    yield azurite
    storage.clear_cache()


@pytest.fixture(scope="session")
def serial_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A moto server that handles one request at a time, as S3 decides conditional creates one by one
    (moto's threaded server checks ``If-None-Match`` and stores without a lock)."""
    from tests.objectstores import start_s3_server

    server = start_s3_server(tmp_path_factory.mktemp("moto-serial"), serial=True)
    yield server
    server.stop()


@pytest.fixture
def serial_env(serial_s3: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key, value in serial_s3.environ().items():
        monkeypatch.setenv(key, value)
    storage.clear_cache()
    yield serial_s3
    storage.clear_cache()
