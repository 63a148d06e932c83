"""What the storage layer caches is keyed by the settings themselves, never by a session's identity.

A driver may hold one session after another (or several at once): each must reach its stores with its
own credentials, even when a new session's Python object gets the ``id`` of a collected one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from icecompat_writer import driver_settings
from icecompat_writer.storage import (
    ObjectPath,
    ObjectStoreFileIO,
    filesystem,
    filesystem_kwargs,
    io_for,
    options_for,
    parse_location,
)
from icecompat_writer.storage.filesystems import clear_cache


class _Session:
    """A driver session as the storage layer sees it: the values its Hadoop configuration holds."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def hadoop_values(self, keys: Sequence[str]) -> dict[str, str] | None:
        return {k: self.values[k] for k in keys if k in self.values}


@pytest.fixture
def running() -> Iterator[list[_Session]]:
    """The driver's running session: the last one appended (none while the list is empty)."""
    sessions: list[_Session] = []

    class Driver:
        def session_key(self) -> int:
            return 1  # every session alike by identity, as a new one that reuses a dead one's id

        def hadoop_values(self, keys: Sequence[str]) -> dict[str, str] | None:
            return sessions[-1].hadoop_values(keys) if sessions else None

    before = driver_settings.install(Driver())
    clear_cache()
    try:
        yield sessions
    finally:
        driver_settings.install(before)
        clear_cache()


def s3_keys(access: str, secret: str) -> dict[str, str]:
    return {"fs.s3a.access.key": access, "fs.s3a.secret.key": secret, "fs.s3a.endpoint.region": "eu-west-1"}


def test_a_later_session_never_reads_the_settings_of_an_earlier_one(
    running: list[_Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    loc = parse_location("s3a://bucket/t/_delta_log/00000000000000000000.json")
    assert isinstance(loc, ObjectPath)
    running.append(_Session(s3_keys("FIRST", "first-secret")))
    first = options_for(loc)
    assert first.get("access_key") == "FIRST"
    first_fs = filesystem(loc)

    running.pop()  # the first session is gone; the next one may well get its Python id
    running.append(_Session(s3_keys("SECOND", "second-secret")))
    second = options_for(loc)
    assert (second.get("access_key"), second.get("secret_key")) == ("SECOND", "second-secret")
    assert filesystem_kwargs(loc, second)[1]["access_key"] == "SECOND"
    assert filesystem(loc) is not first_fs  # a filesystem is shared only by equal settings

    running[-1].values["fs.s3a.access.key"] = "ROTATED"  # a session's settings changed while it runs
    assert options_for(loc).get("access_key") == "ROTATED"

    running.pop()
    assert options_for(loc).get("access_key") is None  # no session: nothing remembered from the last
    running.append(_Session(s3_keys("FIRST", "first-secret")))
    assert filesystem(loc) is first_fs  # the same settings again: the same filesystem


def test_a_later_sessions_fileio_never_reaches_the_store_with_an_earlier_ones_credentials(
    running: list[_Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a write or an upgrade builds at its start (:func:`io_for` the table's root, with the
    running session's settings) and what the rule service builds per request (the settings a driver
    sent): each reaches the bucket with its own session's credentials, whatever ran before it in the
    process."""
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    loc = parse_location("s3a://bucket/t/_delta_log/00000000000000000000.json")
    assert isinstance(loc, ObjectPath)
    running.append(_Session(s3_keys("FIRST", "first-secret")))
    first = io_for("s3a://bucket/t")
    assert isinstance(first, ObjectStoreFileIO)
    assert first.options(loc).get("access_key") == "FIRST"
    first_fs = first.filesystem(loc)

    running.pop()
    running.append(_Session(s3_keys("SECOND", "second-secret")))
    second = io_for("s3a://bucket/t")
    assert isinstance(second, ObjectStoreFileIO)
    assert (second.options(loc).get("access_key"), second.options(loc).get("secret_key")) == (
        "SECOND",
        "second-secret",
    )
    assert second.filesystem(loc) is not first_fs
    assert first.options(loc).get("access_key") == "SECOND"  # the running session's, never a remembered one

    # settings handed over with a request: used by that request's FileIO only, never by another's
    handed = ObjectStoreFileIO(s3_keys("HANDED", "handed-secret"))
    other = ObjectStoreFileIO(s3_keys("OTHER", "other-secret"))
    assert handed.options(loc).get("access_key") == "HANDED"
    assert other.options(loc).get("access_key") == "OTHER"
    assert handed.filesystem(loc) is not other.filesystem(loc)
    assert handed.filesystem(loc) is ObjectStoreFileIO(s3_keys("HANDED", "handed-secret")).filesystem(loc)
    assert second.options(loc).get("access_key") == "SECOND"
