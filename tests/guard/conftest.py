"""Fixtures of the session-guard tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

_KEYS = ("spark.icecompat.guard.enabled", "spark.icecompat.profile")


@pytest.fixture
def guarded(spark: Any) -> Iterator[Any]:
    """The shared session with the guard explicitly on for one test; the session's own settings
    (the guard on by default, no session profile) are put back afterwards, whatever the test set."""
    before = {key: spark.conf.get(key, None) for key in _KEYS}
    spark.conf.set("spark.icecompat.guard.enabled", "true")
    try:
        yield spark
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
