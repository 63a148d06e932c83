"""Facts about Delta table features that both the checks and the planner need.

Two things are easy to get wrong and are therefore kept in one place. First, a protocol below reader
version 3 / writer version 7 supports features *implicitly* (PROTOCOL.md "Writer Version
Requirements" / "Reader Version Requirements"): a writer-version-2 table supports ``appendOnly`` and
``invariants`` without listing them, and an upgrade to version 7 must carry them over ("Table Features
for New and Existing Tables"). Second, some features are reader+writer features and belong in both
lists, others in ``writerFeatures`` only (PROTOCOL.md appendix "Valid Feature Names in Table Features",
plus the reader-writer features defined elsewhere in PROTOCOL.md and in Delta Kernel).
"""

from __future__ import annotations

from icecompat_writer.model import FEATURES_READER_VERSION, FEATURES_WRITER_VERSION, Protocol

__all__ = [
    "READER_WRITER_FEATURES",
    "implicit_reader_features",
    "implicit_writer_features",
    "reader_features",
    "supported_features",
    "writer_features",
]

# Features that are both reader and writer features (listed in readerFeatures and writerFeatures).
READER_WRITER_FEATURES: frozenset[str] = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "typeWidening",
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
        "variantShredding",
        "variantShredding-preview",
        "catalogManaged",
        "geospatial",
    }
)

# Writer features a legacy writer version supports without listing them (each row adds to the last).
_LEGACY_WRITER: tuple[tuple[int, tuple[str, ...]], ...] = (
    (2, ("appendOnly", "invariants")),
    (3, ("checkConstraints",)),
    (4, ("changeDataFeed", "generatedColumns")),
    (5, ("columnMapping",)),
    (6, ("identityColumns",)),
)
_LEGACY_READER: tuple[tuple[int, tuple[str, ...]], ...] = ((2, ("columnMapping",)),)


def implicit_writer_features(version: int) -> frozenset[str]:
    """Writer features supported by a writer version below 7 without being listed."""
    if version >= FEATURES_WRITER_VERSION:
        return frozenset()
    return frozenset(f for v, names in _LEGACY_WRITER if version >= v for f in names)


def implicit_reader_features(version: int) -> frozenset[str]:
    """Reader features supported by a reader version below 3 without being listed."""
    if version >= FEATURES_READER_VERSION:
        return frozenset()
    return frozenset(f for v, names in _LEGACY_READER if version >= v for f in names)


def writer_features(protocol: Protocol) -> frozenset[str]:
    """Every writer feature the protocol supports, listed or implied by a legacy version."""
    return (protocol.writer_features or frozenset()) | implicit_writer_features(protocol.min_writer_version)


def reader_features(protocol: Protocol) -> frozenset[str]:
    """Every reader feature the protocol supports, listed or implied by a legacy version."""
    return (protocol.reader_features or frozenset()) | implicit_reader_features(protocol.min_reader_version)


def supported_features(protocol: Protocol) -> frozenset[str]:
    """All features the protocol supports in either list (what feature allow-lists are checked on)."""
    return writer_features(protocol) | reader_features(protocol)
