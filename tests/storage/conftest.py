"""Fixtures of the storage tests: the moto S3 server reached through the standard AWS variables."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from icecompat_writer import storage


@pytest.fixture
def s3_env(s3_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The process environment a user of the moto server would have: AWS_* variables only."""
    for key in ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    for key, value in s3_server.environ().items():
        monkeypatch.setenv(key, value)
    storage.clear_cache()
    yield s3_server
    storage.clear_cache()
