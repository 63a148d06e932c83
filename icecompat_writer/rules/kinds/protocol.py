"""Kinds on the protocol: the writer version, the table features a table must list (for a profile, and
for the types and column metadata its schema holds) and the ones it may list."""

from __future__ import annotations

from collections.abc import Iterator

from icecompat_writer.rules.context import EvalContext
from icecompat_writer.rules.features import READER_WRITER_FEATURES
from icecompat_writer.rules.kinds.registry import finding, kind
from icecompat_writer.rules.model import Finding, Rule, Scope
from icecompat_writer.rules.schema import (
    type_text,
)


@kind("min_writer_version", Scope.PROTOCOL, params=("version",))
def _min_writer_version(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """The protocol's minWriterVersion is at least ``version``."""
    want = int(rule.param("version"))
    if ctx.protocol.min_writer_version < want:
        yield finding(observed=ctx.protocol.min_writer_version, expected=want)


@kind("required_reader_feature", Scope.PROTOCOL, params=("feature",), fields=("feature",))
def _required_reader_feature(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """``feature`` is a supported reader feature: listed in readerFeatures at reader version 3, or
    implied by a legacy reader version (reader version 2 implies columnMapping)."""
    feature = rule.param("feature")
    if feature not in ctx.reader_features:
        p = ctx.protocol
        seen = f"minReaderVersion={p.min_reader_version}, readerFeatures={sorted(p.reader_features or ())}"
        yield finding(observed=seen, expected=f"reader version 2, or 3 listing {feature}", feature=feature)


@kind("required_writer_features", Scope.PROTOCOL, params=("features",), fields=("feature",))
def _required_writer_features(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every feature in ``features`` is a supported writer feature (listed, or implied by a legacy
    writer version)."""
    for feature in rule.param("features"):
        if feature not in ctx.writer_features:
            yield finding(
                observed=", ".join(sorted(ctx.writer_features)) or "(none)", expected=feature, feature=feature
            )


@kind("reader_features_in_writer", Scope.PROTOCOL, fields=("feature",))
def _reader_features_in_writer(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every feature listed in readerFeatures is also a writer feature."""
    for feature in sorted(ctx.protocol.reader_features or ()):
        if feature not in ctx.writer_features:
            yield finding(observed=feature, expected="listed in writerFeatures too", feature=feature)


@kind("feature_allowlist", Scope.PROTOCOL, params=("allowed", "inactive_allowed"), fields=("feature",))
def _feature_allowlist(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every supported feature (either list, including those a legacy version implies) is in
    ``allowed`` or in ``inactive_allowed`` (those must be proven inactive by other rules)."""
    ok = set(rule.param("allowed")) | set(rule.param("inactive_allowed"))
    for feature in sorted(ctx.supported_features - ok):
        yield finding(observed=feature, expected="a feature on the allow-list", feature=feature)


def _feature_group_supported(ctx: EvalContext, group: tuple[str, ...]) -> bool:
    for name in group:
        if name in ctx.writer_features and (
            name not in READER_WRITER_FEATURES or name in ctx.reader_features
        ):
            return True
    return False


@kind("type_requires_features", Scope.PROTOCOL, params=("types", "features"), fields=("feature", "type"))
def _type_requires_features(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """When the schema uses a type in ``types``, each group in ``features`` has one supported
    feature (reader+writer features in both lists); the first name of a group is the one to add."""
    hits = ctx.schema.of_categories(rule.param("types"))
    if not hits:
        return
    for group in rule.param("features"):
        if not _feature_group_supported(ctx, group):
            yield finding(
                hits[0].path,
                observed="not supported",
                expected=group[0],
                feature=group[0],
                type=type_text(hits[0].type),
            )


@kind(
    "column_metadata_requires_features",
    Scope.PROTOCOL,
    params=("keys", "features"),
    fields=("feature", "key"),
)
def _column_metadata_requires_features(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """When a column's metadata holds a key in ``keys``, each group in ``features`` has one
    supported feature."""
    keys = rule.param("keys")
    hits = ctx.schema.with_metadata_keys(keys)
    if not hits:
        return
    key = next(k for k in keys if k in hits[0].metadata)
    for group in rule.param("features"):
        if not _feature_group_supported(ctx, group):
            yield finding(
                hits[0].path, observed="not supported", expected=group[0], feature=group[0], key=key
            )
