"""Kept importable: the log-action model lives at the bottom floor, in :mod:`icecompat_writer.model`,
so that the rules and the planner read it without loading the log reader and the storage layer."""

from icecompat_writer.model import (
    FEATURES_READER_VERSION,
    FEATURES_WRITER_VERSION,
    Metadata,
    Protocol,
    TableState,
    TableStateLike,
    schema_json,
)

__all__ = [
    "FEATURES_READER_VERSION",
    "FEATURES_WRITER_VERSION",
    "Metadata",
    "Protocol",
    "TableState",
    "TableStateLike",
    "schema_json",
]
