"""Which log store each scheme's commits go through: the guard's, wrapping the scheme's own store."""

from __future__ import annotations

import pytest

from icecompat_writer.errors import SessionConfigError
from icecompat_writer.sessions import (
    GUARD_LOG_STORE,
    GUARD_SCHEMES,
    delegate_key,
    guard_log_store_settings,
    log_store_key,
)


def test_every_scheme_gets_the_guards_log_store_and_delegates_stay_delta_defaults() -> None:
    settings, notes = guard_log_store_settings({})
    assert settings == {log_store_key(s): GUARD_LOG_STORE for s in GUARD_SCHEMES}
    assert {"file", "s3a", "s3", "abfss", "wasbs", "gs", "hdfs"} <= set(GUARD_SCHEMES)
    assert notes == []


@pytest.mark.parametrize("key", ["spark.delta.logStore.s3a.impl", "delta.logStore.s3a.impl"])
def test_a_users_own_store_is_kept_as_the_delegate_and_said_so(key: str) -> None:
    settings, notes = guard_log_store_settings({key: "com.example.DynamoLogStore"})
    assert settings[log_store_key("s3a")] == GUARD_LOG_STORE
    assert settings[delegate_key("s3a")] == "com.example.DynamoLogStore"
    assert len(notes) == 1 and "s3a://" in notes[0] and "com.example.DynamoLogStore" in notes[0]
    if key.startswith("delta."):  # Delta refuses its two spellings of one key with different values
        assert settings[key] == GUARD_LOG_STORE


def test_a_scheme_outside_the_default_list_is_wired_when_the_user_names_a_store_for_it() -> None:
    settings, _ = guard_log_store_settings({"spark.delta.logStore.oss.impl": "com.example.OssLogStore"})
    assert settings[log_store_key("oss")] == GUARD_LOG_STORE
    assert settings[delegate_key("oss")] == "com.example.OssLogStore"
    settings, _ = guard_log_store_settings({delegate_key("cosn"): "com.example.CosLogStore"})
    assert settings[log_store_key("cosn")] == GUARD_LOG_STORE


def test_the_guards_own_settings_are_left_as_they_are() -> None:
    options = {log_store_key(s): GUARD_LOG_STORE for s in GUARD_SCHEMES}
    assert guard_log_store_settings(options) == ({}, [])


@pytest.mark.parametrize("key", ["spark.delta.logStore.class", "delta.logStore.class"])
def test_one_store_for_every_scheme_is_refused_naming_the_key(key: str) -> None:
    with pytest.raises(SessionConfigError, match=key.replace(".", r"\.")) as info:
        guard_log_store_settings({key: "com.example.AnyLogStore"})
    assert "spark.delta.logStore.<scheme>.impl" in str(info.value)


def test_two_different_stores_for_one_scheme_are_refused() -> None:
    options = {log_store_key("s3a"): "com.example.A", delegate_key("s3a"): "com.example.B"}
    with pytest.raises(SessionConfigError, match="two different log stores for s3a://"):
        guard_log_store_settings(options)
