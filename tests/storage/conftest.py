"""Fixtures of the storage tests: the moto S3 server reached through the standard AWS variables."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from icecompat_writer import storage


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
