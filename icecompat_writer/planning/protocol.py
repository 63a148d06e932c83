"""Building the compliant protocol from the current one plus the features the rules require.

Features are only ever added (PROTOCOL.md "Supported Features": clients must not remove a feature).
Moving a legacy protocol to writer version 7 lists every feature the old version implied, because an
upgrade must assume each of them was used ("Table Features for New and Existing Tables"). Reader
version 3 is chosen whenever a reader feature must be listed; a table already on reader version 2
whose only reader feature is column mapping keeps version 2, so a compliant table is left as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from icecompat_writer.model import FEATURES_READER_VERSION, FEATURES_WRITER_VERSION, Protocol
from icecompat_writer.rules.features import (
    READER_WRITER_FEATURES,
    implicit_reader_features,
    implicit_writer_features,
)

__all__ = ["ProtocolChange", "build_protocol"]


@dataclass(frozen=True)
class ProtocolChange:
    rule: str
    what: str


def build_protocol(
    base: Protocol,
    add: Mapping[str, str],
    min_writer: Mapping[int, str],
    version_rule: str,
) -> tuple[Protocol, list[ProtocolChange]]:
    """``base`` plus the features in ``add`` (feature -> rule that requires it).

    ``min_writer`` maps a required minimum writer version to the rule requiring it; ``version_rule``
    is the rule credited for listing features a legacy version implied. Reader+writer features go in
    both lists. Returns ``base`` itself when nothing needs to change.
    """
    changes: list[ProtocolChange] = []
    writer_explicit = set(base.writer_features or ())
    reader_explicit = set(base.reader_features or ())
    new_writer = set(writer_explicit)
    new_reader = set(reader_explicit)

    writer_version = base.min_writer_version
    wanted_writer = max(min_writer, default=writer_version)
    needs_listing = bool(set(add) - implicit_writer_features(writer_version) - writer_explicit)
    if writer_version < FEATURES_WRITER_VERSION and (
        wanted_writer >= FEATURES_WRITER_VERSION or needs_listing
    ):
        rule = min_writer.get(wanted_writer, version_rule)
        changes.append(
            ProtocolChange(rule, f"minWriterVersion {writer_version} -> {FEATURES_WRITER_VERSION}")
        )
        for f in sorted(implicit_writer_features(writer_version) - new_writer):
            new_writer.add(f)
            changes.append(
                ProtocolChange(
                    version_rule, f"listed writer feature {f} (implied by writer version {writer_version})"
                )
            )
        writer_version = FEATURES_WRITER_VERSION

    reader_version = base.min_reader_version
    reader_adds = {f for f in add if f in READER_WRITER_FEATURES}
    implied_reader = implicit_reader_features(reader_version)
    if reader_version < FEATURES_READER_VERSION and reader_adds - implied_reader:
        changes.append(
            ProtocolChange(
                _rule_for(add, reader_adds - implied_reader),
                f"minReaderVersion {reader_version} -> {FEATURES_READER_VERSION}",
            )
        )
        for f in sorted(implied_reader - new_reader):
            new_reader.add(f)
            changes.append(
                ProtocolChange(
                    version_rule, f"listed reader feature {f} (implied by reader version {reader_version})"
                )
            )
        reader_version = FEATURES_READER_VERSION

    for f in sorted(add):
        if f not in new_writer and f not in implicit_writer_features(writer_version):
            new_writer.add(f)
            changes.append(ProtocolChange(add[f], f"added writer feature {f}"))
        if f in READER_WRITER_FEATURES and reader_version >= FEATURES_READER_VERSION and f not in new_reader:
            new_reader.add(f)
            changes.append(ProtocolChange(add[f], f"added reader feature {f}"))

    if not changes:
        return base, []
    proto = Protocol(
        min_reader_version=reader_version,
        min_writer_version=writer_version,
        reader_features=frozenset(new_reader) if reader_version >= FEATURES_READER_VERSION else None,
        writer_features=frozenset(new_writer) if writer_version >= FEATURES_WRITER_VERSION else None,
    )
    return proto, changes


def _rule_for(add: Mapping[str, str], features: set[str]) -> str:
    return add[min(features)]
