"""The generic checks ("kinds") that rules are made of.

Each kind is one function from (context, rule) to findings, registered with the scope it needs, the
params a rule must give it, and the extra template fields its findings provide. Kinds know nothing
about any particular spec: the catalog (``catalog/``) turns them into spec rules by choosing params.
They are implemented here only: the session guard's JVM side asks the Python rule service
(:mod:`icecompat_writer.jvm.service`) instead of evaluating rules itself.

A check yields every problem it finds (never stops at the first one), in schema or file order, so
that one validation reports everything that is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from icecompat_writer.facts import ParquetField, ParquetFooter
from icecompat_writer.rules.context import CM_MODE_KEY, MAX_COLUMN_ID_KEY, EvalContext, column_mapping_mode
from icecompat_writer.rules.features import READER_WRITER_FEATURES
from icecompat_writer.rules.footer import FooterNode, walk_footer
from icecompat_writer.rules.literals import default_problem
from icecompat_writer.rules.model import Finding, Rule, Scope, template_fields
from icecompat_writer.rules.schema import (
    CM_ID,
    CM_NESTED_IDS,
    CM_PHYSICAL_NAME,
    column_id,
    contains_struct,
    decimal_params,
    field_metadata,
    id_filler,
    matched_fields,
    physical_path,
    quote_name,
    type_category,
    type_shape,
    type_text,
)
from icecompat_writer.schema import Schema
from icecompat_writer.schema.model import Field

__all__ = ["KINDS", "Kind", "check_against_kinds"]

Check = Callable[[EvalContext, Rule], Iterable[Finding]]


@dataclass(frozen=True)
class Kind:
    """A generic check: its scope, the params it reads, the template fields it fills, what it does."""

    name: str
    scope: Scope
    check: Check
    params: tuple[str, ...]
    fields: tuple[str, ...]
    doc: str
    # The findings depend on the schema and the rule's params alone (not on properties or protocol),
    # so :func:`~icecompat_writer.rules.validate` keeps them with the schema's index, whose schema
    # never changes: the plan's own validation and the writer's after it judge one index once.
    schema_only: bool = False


KINDS: dict[str, Kind] = {}


def kind_of(rule: Rule) -> Kind:
    """The check kind a catalog rule is evaluated by (ValueError for a rule another layer enforces)."""
    if rule.kind is None:
        raise ValueError(f"rule {rule.id} has no check kind: {rule.layer} enforces it")
    return KINDS[rule.kind]


def kind(
    name: str,
    scope: Scope,
    params: tuple[str, ...] = (),
    fields: tuple[str, ...] = (),
    schema_only: bool = False,
) -> Callable[[Check], Check]:
    """Register a check function as kind ``name`` (its docstring becomes the kind's description);
    ``schema_only``: it reads nothing of the context but ``ctx.schema`` (see :attr:`Kind.schema_only`)."""

    def register(fn: Check) -> Check:
        if name in KINDS:
            raise ValueError(f"kind {name} registered twice")
        if schema_only and scope is not Scope.SCHEMA:
            raise ValueError(f"kind {name}: only a schema kind can depend on the schema alone")
        doc = " ".join((fn.__doc__ or "").split())
        KINDS[name] = Kind(name, scope, fn, params, fields, doc, schema_only)
        return fn

    return register


def _f(path: str = "", observed: Any = None, expected: Any = None, **values: Any) -> Finding:
    # Always strings: Violations are sorted, and None would not compare with str.
    return Finding(
        path=path,
        observed="(absent)" if observed is None else str(observed),
        expected="(absent)" if expected is None else str(expected),
        values=MappingProxyType({k: str(v) for k, v in values.items()}),
    )


def _shown(value: str | None) -> str:
    return "(absent)" if value is None else repr(value) if value == "" else value


# --- protocol --------------------------------------------------------------------------------------


@kind("min_writer_version", Scope.PROTOCOL, params=("version",))
def _min_writer_version(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """The protocol's minWriterVersion is at least ``version``."""
    want = int(rule.param("version"))
    if ctx.protocol.min_writer_version < want:
        yield _f(observed=ctx.protocol.min_writer_version, expected=want)


@kind("required_reader_feature", Scope.PROTOCOL, params=("feature",), fields=("feature",))
def _required_reader_feature(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """``feature`` is a supported reader feature: listed in readerFeatures at reader version 3, or
    implied by a legacy reader version (reader version 2 implies columnMapping)."""
    feature = rule.param("feature")
    if feature not in ctx.reader_features:
        p = ctx.protocol
        seen = f"minReaderVersion={p.min_reader_version}, readerFeatures={sorted(p.reader_features or ())}"
        yield _f(observed=seen, expected=f"reader version 2, or 3 listing {feature}", feature=feature)


@kind("required_writer_features", Scope.PROTOCOL, params=("features",), fields=("feature",))
def _required_writer_features(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every feature in ``features`` is a supported writer feature (listed, or implied by a legacy
    writer version)."""
    for feature in rule.param("features"):
        if feature not in ctx.writer_features:
            yield _f(
                observed=", ".join(sorted(ctx.writer_features)) or "(none)", expected=feature, feature=feature
            )


@kind("reader_features_in_writer", Scope.PROTOCOL, fields=("feature",))
def _reader_features_in_writer(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every feature listed in readerFeatures is also a writer feature."""
    for feature in sorted(ctx.protocol.reader_features or ()):
        if feature not in ctx.writer_features:
            yield _f(observed=feature, expected="listed in writerFeatures too", feature=feature)


@kind("feature_allowlist", Scope.PROTOCOL, params=("allowed", "inactive_allowed"), fields=("feature",))
def _feature_allowlist(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every supported feature (either list, including those a legacy version implies) is in
    ``allowed`` or in ``inactive_allowed`` (those must be proven inactive by other rules)."""
    ok = set(rule.param("allowed")) | set(rule.param("inactive_allowed"))
    for feature in sorted(ctx.supported_features - ok):
        yield _f(observed=feature, expected="a feature on the allow-list", feature=feature)


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
            yield _f(
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
            yield _f(hits[0].path, observed="not supported", expected=group[0], feature=group[0], key=key)


# --- table properties ------------------------------------------------------------------------------


@kind("required_property", Scope.METADATA, params=("key", "value"), fields=("key",))
def _required_property(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Table property ``key`` is set to ``value`` (compared case-insensitively, as Delta parses
    booleans and modes)."""
    key, want = rule.param("key"), rule.param("value")
    got = ctx.config.get(key)
    if got is None or str(got).strip().lower() != want.lower():
        yield _f(observed=_shown(got), expected=want, key=key)


@kind("checkpoint_keeps_stats", Scope.METADATA, params=("json_key", "struct_key"), fields=("key",))
def _checkpoint_keeps_stats(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Checkpoints keep the files' statistics in some form: ``json_key`` and ``struct_key`` are not
    both false (absent, each is true: delta-spark's defaults)."""
    json_key, struct_key = rule.param("json_key"), rule.param("struct_key")
    as_json = ctx.config.get(json_key)
    as_struct = ctx.config.get(struct_key)
    if as_json is not None and str(as_json).strip().lower() == "false":
        if as_struct is not None and str(as_struct).strip().lower() == "false":
            yield _f(
                observed=f"{json_key}={as_json}, {struct_key}={_shown(as_struct)}",
                expected=f"{json_key}=true",
                key=json_key,
            )


@kind("forbidden_property_value", Scope.METADATA, params=("keys", "values"), fields=("key",))
def _forbidden_property_value(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """No table property in ``keys`` has a value in ``values`` (case-insensitive)."""
    bad = {v.lower() for v in rule.param("values")}
    for key in rule.param("keys"):
        got = ctx.config.get(key)
        if got is not None and str(got).strip().lower() in bad:
            yield _f(observed=f"{key}={got}", expected=f"{key} absent or false", key=key)


@kind("forbidden_property_prefix", Scope.METADATA, params=("prefix",), fields=("key", "prefix"))
def _forbidden_property_prefix(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """No table property key starts with ``prefix``."""
    prefix = rule.param("prefix")
    for key in sorted(k for k in ctx.config if k.startswith(prefix)):
        yield _f(
            observed=f"{key}={ctx.config[key]}",
            expected=f"no property starting with {prefix}",
            key=key,
            prefix=prefix,
        )


@kind("column_mapping_mode", Scope.METADATA, params=("allowed",), fields=("key",))
def _column_mapping_mode(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """``delta.columnMapping.mode`` is one of ``allowed``."""
    allowed = rule.param("allowed")
    mode = column_mapping_mode(ctx.config)
    if mode not in allowed:
        yield _f(observed=_shown(ctx.config.get(CM_MODE_KEY)), expected=" or ".join(allowed), key=CM_MODE_KEY)


@kind("profile_exclusive", Scope.METADATA, params=("properties",), fields=("key", "declared"))
def _profile_exclusive(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """No property that declares another profile (``properties``: property -> profile) is true
    unless the profile being checked turns it on too."""
    for key, declared in rule.param("properties").items():
        mine = str(ctx.profile_properties.get(key, "")).lower() == "true"
        if ctx.is_true(key) and not mine:
            yield _f(observed=f"{key}=true", expected=f"{key} absent or false", key=key, declared=declared)


# --- schema ----------------------------------------------------------------------------------------


@kind("column_ids_assigned", Scope.SCHEMA, schema_only=True)
def _column_ids_assigned(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every struct field, nested ones included, has an integer ``delta.columnMapping.id`` and a
    non-empty ``delta.columnMapping.physicalName``."""
    if ctx.schema.complete:  # the index saw both on every field
        return
    for f in ctx.schema.fields:
        md = f.metadata
        pn = md.get(CM_PHYSICAL_NAME)
        if f.column_id is None or not isinstance(pn, str) or not pn:
            yield _f(
                f.path,
                observed=f"id={md.get(CM_ID)!r}, physicalName={pn!r}",
                expected="an integer id and a physical name",
            )


@kind("ids_unique", Scope.SCHEMA, params=("min_id", "max_id"), fields=("id",), schema_only=True)
def _ids_unique(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Column ids and nested ids are pairwise distinct and within [``min_id``, ``max_id``]."""
    lo, hi = int(rule.param("min_id")), int(rule.param("max_id"))
    values = ctx.schema.id_values()
    if not values or (len(set(values)) == len(values) and lo <= min(values) and max(values) <= hi):
        return  # the common case, without a path per id
    first: dict[int, str] = {}
    for value, path in ctx.schema.all_ids():
        if not lo <= value <= hi:
            yield _f(path, observed=value, expected=f"{lo}..{hi}", id=value)
        other = first.setdefault(value, path)
        if other is not path:
            yield _f(path, observed=value, expected=f"an id not already used by `{other}`", id=value)


@kind("max_column_id", Scope.SCHEMA, fields=("key",))
def _max_column_id(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """``delta.columnMapping.maxColumnId`` is an integer at least as large as every column id and
    nested id in the schema."""
    top = ctx.schema.max_id()
    if top is None:
        return
    raw = ctx.config.get(MAX_COLUMN_ID_KEY)
    try:
        value = int(str(raw).strip()) if raw is not None else None
    except ValueError:
        value = None
    if value is None or value < top:
        yield _f(observed=_shown(raw), expected=f">= {top}", key=MAX_COLUMN_ID_KEY)


@kind("nested_ids_assigned", Scope.SCHEMA, fields=("key", "owner"), schema_only=True)
def _nested_ids_assigned(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every array element and map key/value has an integer id in ``delta.columnMapping.nested.ids``
    of its nearest ancestor struct field, under the key <physical name>.<element|key|value>..."""
    for s in ctx.schema.slots:
        ids = s.owner.metadata.get(CM_NESTED_IDS)
        value = ids.get(s.key) if (type(ids) is dict or isinstance(ids, Mapping)) else None
        if not isinstance(value, int) or isinstance(value, bool):
            yield _f(
                s.path,
                observed=_shown(None if value is None else str(value)),
                expected=f"an integer id under {s.key!r}",
                key=s.key,
                owner=s.owner.path,
            )


@kind("physical_names_unique", Scope.SCHEMA, fields=("other", "physical"))
def _physical_names_unique(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Under column mapping (id or name), no two fields of one struct (the top level, a nested struct,
    a struct inside an array or map) share a physical name: every physical field path is unique, so a
    data file's column belongs to exactly one field."""
    index = ctx.schema
    model = index.model
    if model is None or column_mapping_mode(ctx.config) not in ("name", "id"):
        return
    # past the mode, the schema alone decides: kept with the index like a schema-only kind's findings
    hit = index.findings.get(rule.id)
    if hit is None:
        hit = index.findings[rule.id] = tuple(_shared_physical_names(model))
    yield from hit


def _shared_physical_names(model: Schema) -> Iterator[Finding]:
    for struct in model.structs:  # the index's fields are the model's: the names were read then
        names = [f.physical_name for f in struct.fields]
        if len(set(names)) == len(names):
            continue
        first: dict[str, Field] = {}
        for f, name in zip(struct.fields, names, strict=True):
            other = first.setdefault(name, f)
            if other is not f:
                yield _f(
                    f.path,
                    observed=name,
                    expected=f"a physical name no sibling has (`{other.path}` has {name!r})",
                    other=other.path,
                    physical=name,
                )


@kind("physical_name_pattern", Scope.SCHEMA, params=("template",), schema_only=True)
def _physical_name_pattern(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every field with a column id has the physical name ``template`` filled with that id."""
    template = rule.param("template")
    fill = id_filler(template)
    index = ctx.schema
    if index.complete:  # every physical name is the field's own: compare them all at once
        nodes = index.fields
        # each field's id, in field order (complete: every field has one)
        ids = index.model.column_ids if index.model is not None else [f.column_id for f in nodes]
        head, sep, tail = template.partition("{id}")
        if sep and "{" not in head + tail and "}" not in head + tail:  # as id_filler, without a call each
            wanted = [f"{head}{cid}{tail}" for cid in ids]
        else:
            wanted = [fill(cid) for cid in ids]  # type: ignore[arg-type]
        if [f.physical_name for f in nodes] == wanted:
            return
    for f in index.fields:
        cid = f.column_id
        if cid is None:
            continue
        want = fill(cid)
        got = f.metadata.get(CM_PHYSICAL_NAME)
        if got != want:
            yield _f(f.path, observed=_shown(got), expected=want)


@kind("type_allowlist", Scope.SCHEMA, params=("allowed",), fields=("type",), schema_only=True)
def _type_allowlist(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every type in the schema (columns, nested fields, array elements, map keys and values) is in
    ``allowed`` (Delta type names; ``decimal`` stands for every precision and scale)."""
    allowed = set(rule.param("allowed"))
    bad = ctx.schema.categories - allowed
    for t in ctx.schema.of_categories(bad):
        yield _f(
            t.path,
            observed=type_text(t.type),
            expected="one of " + ", ".join(rule.param("allowed")),
            type=type_text(t.type),
        )


@kind("forbidden_partition_types", Scope.METADATA, params=("types",), fields=("type",))
def _forbidden_partition_types(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """No partition column's type is one of ``types`` (``decimal`` stands for every precision)."""
    types = set(rule.param("types"))
    for name in ctx.metadata.partition_columns:
        f = ctx.schema.top_level(name)
        if f is not None and type_category(f.type.raw) in types:
            yield _f(f.path, observed=type_text(f.type.raw), expected="not " + " or ".join(sorted(types)),
                     type=type_text(f.type.raw))  # fmt: skip


@kind("forbidden_types", Scope.SCHEMA, params=("types",), fields=("type",), schema_only=True)
def _forbidden_types(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """No type in the schema is one of ``types``."""
    for t in ctx.schema.of_categories(rule.param("types")):
        yield _f(
            t.path,
            observed=type_text(t.type),
            expected="not " + " or ".join(rule.param("types")),
            type=type_text(t.type),
        )


def _type_change_ok(frm: Any, to: Any, pairs: set[tuple[str, str]], decimal_widening: bool) -> bool:
    if frm == to:
        return True
    if not isinstance(frm, str) or not isinstance(to, str):
        return False
    a, b = decimal_params(frm), decimal_params(to)
    if a and b:
        return decimal_widening and a[1] == b[1] and b[0] > a[0]
    return (type_category(frm), type_category(to)) in pairs


def _type_changes(raw: Any) -> list[Any] | None:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    return list(raw) if isinstance(raw, list | tuple) else None


@kind(
    "type_widening_allowlist",
    Scope.SCHEMA,
    params=("when_features", "changes", "decimal_precision_increase"),
    fields=("from_type", "to_type"),
)
def _type_widening_allowlist(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """When one of ``when_features`` is supported, every type change recorded in ``delta.typeChanges``
    is in ``changes`` (or, with ``decimal_precision_increase``, a decimal precision increase at the
    same scale)."""
    if not set(rule.param("when_features")) & ctx.supported_features:
        return
    pairs = {(a, b) for a, b in rule.param("changes")}
    dec = bool(rule.param("decimal_precision_increase"))
    for f in ctx.schema.fields_with_key("delta.typeChanges"):
        changes = _type_changes(f.metadata.get("delta.typeChanges"))
        if changes is None:
            yield _f(
                f.path,
                observed="unreadable delta.typeChanges",
                expected="a JSON list of type changes",
                from_type="?",
                to_type="?",
            )
            continue
        for change in changes:
            if not isinstance(change, Mapping):
                yield _f(
                    f.path, observed=repr(change), expected="a type change object", from_type="?", to_type="?"
                )
                continue
            frm, to = change.get("fromType"), change.get("toType")
            if _type_change_ok(frm, to, pairs, dec):
                continue
            sub = change.get("fieldPath")
            path = f"{f.path}.{sub}" if isinstance(sub, str) and sub else f.path
            yield _f(
                path,
                observed=f"{type_text(frm)} -> {type_text(to)}",
                expected="an allowed widening",
                from_type=type_text(frm),
                to_type=type_text(to),
            )


@kind("literal_write_defaults", Scope.SCHEMA, params=("key",), fields=("key", "type"), schema_only=True)
def _literal_write_defaults(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every column default stored under ``key`` is a literal value of its column's type, written in a
    form delta-spark accepts (see ``literals``): an expression, ``NULL`` or a typed literal is not."""
    key = rule.param("key")
    for f in ctx.schema.fields_with_key(key):
        value = f.metadata.get(key)
        expected = default_problem(value, f.type.raw)
        if expected is not None:
            yield _f(f.path, observed=value, expected=expected, key=key, type=type_text(f.type.raw))


@kind("forbidden_column_metadata_key", Scope.SCHEMA, params=("keys",), fields=("key",), schema_only=True)
def _forbidden_column_metadata_key(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """No column (at any nesting level) has any of ``keys`` in its metadata."""
    keys = rule.param("keys")
    for f in ctx.schema.with_metadata_keys(keys):
        for key in keys:
            if key in f.metadata:
                yield _f(
                    f.path,
                    observed=f"{key}={json.dumps(f.metadata[key], ensure_ascii=False)}",
                    expected=f"no {key}",
                    key=key,
                )


# --- replace: the new state against the previous one -----------------------------------------------


@kind("partition_spec_unchanged", Scope.REPLACE)
def _partition_spec_unchanged(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """A table that was partitioned keeps exactly the same partition column names, in the same order
    (their types may change)."""
    if ctx.previous is None:
        return
    before = list(ctx.previous.metadata.partition_columns)
    after = list(ctx.metadata.partition_columns)
    if before and before != after:
        yield _f(observed=", ".join(after) or "(unpartitioned)", expected=", ".join(before))


@kind("map_key_struct_immutable", Scope.REPLACE)
def _map_key_struct_immutable(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """A map key that holds a struct keeps exactly the same shape (field names, types, nullability)
    as in the previous schema; maps are matched by their physical path."""
    prev = ctx.previous_schema
    if prev is None:
        return
    before: dict[tuple[tuple[str, ...], str], Any] = {}
    for s in prev.slots:
        if s.key.endswith(".key") and contains_struct(s.type):
            before[(physical_path(s.owner), s.key)] = s.type
    if not before:
        return
    for s in ctx.schema.slots:
        old = before.get((physical_path(s.owner), s.key)) if s.key.endswith(".key") else None
        if old is not None and type_shape(old) != type_shape(s.type):
            yield _f(s.path, observed=type_text(s.type), expected=f"unchanged {type_text(old)}")


@kind("cdf_column_mapping_change", Scope.REPLACE, params=("key",), fields=("key",))
def _cdf_column_mapping_change(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """With the boolean property ``key`` (change data feed) true, the new state does not move column
    mapping from none to a mode, and keeps every physical column of a mapped previous state under its
    logical name (delta-spark treats a missing physical name as a drop, a new logical name as a
    rename)."""
    key = rule.param("key")
    if ctx.previous is None or not ctx.is_true(key):
        return
    before = column_mapping_mode(ctx.previous.metadata.configuration)
    after = column_mapping_mode(ctx.config)
    if after == "none":
        return
    if before == "none":
        if ctx.previous_schema is not None and ctx.previous_schema.fields:
            yield _f(
                observed=f"column mapping {before} -> {after}", expected="column mapping unchanged", key=key
            )
        return
    prev = ctx.previous_schema
    if prev is None:
        return
    # every logical name a physical column has now (a list: siblings sharing a physical name must not
    # make one of them look renamed)
    now: dict[tuple[str, ...], list[str]] = {}
    for f in ctx.schema.fields:
        now.setdefault(physical_path(f), []).append(f.name)
    for f in prev.fields:
        names = now.get(physical_path(f))
        if not names:
            want = f"physical column {f.physical_name}"
            yield _f(f.path, observed="physical column dropped", expected=want, key=key)
        elif f.name not in names:
            yield _f(f.path, observed=f"renamed to {names[0]}", expected=f"name {f.name}", key=key)


@kind("column_mapping_mode_transition", Scope.REPLACE, params=("from_none",))
def _column_mapping_mode_transition(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """An existing table keeps its column mapping mode; a table without column mapping may only move
    to a mode in ``from_none`` (any mode when it has no columns yet)."""
    if ctx.previous is None:
        return
    before = column_mapping_mode(ctx.previous.metadata.configuration)
    after = column_mapping_mode(ctx.config)
    if before == after:
        return
    prev_schema = ctx.previous_schema
    empty = prev_schema is not None and not prev_schema.fields
    if before == "none" and (after in rule.param("from_none") or empty):
        return
    yield _f(observed=f"{before} -> {after}", expected=f"{before} (unchanged)")


@kind("physical_names_stable", Scope.REPLACE)
def _physical_names_stable(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every column that existed before (matched by name, exactly then case-insensitively) keeps its
    physical name and column id; without column mapping before, its physical name was its name."""
    if ctx.previous is None:
        return
    prev_mapped = column_mapping_mode(ctx.previous.metadata.configuration) in ("name", "id")
    for new, old, path in matched_fields(_parsed_schema(ctx), _parsed_previous_schema(ctx)):
        md, old_md = field_metadata(new), field_metadata(old)
        want_pn = old_md.get(CM_PHYSICAL_NAME) if prev_mapped else old.get("name")
        want_id = column_id(old) if prev_mapped else None
        got_pn, got_id = md.get(CM_PHYSICAL_NAME), column_id(new)
        if (want_pn is not None and got_pn != want_pn) or (want_id is not None and got_id != want_id):
            yield _f(
                path,
                observed=f"physicalName={got_pn}, id={got_id}",
                expected=f"physicalName={want_pn}" + (f", id={want_id}" if want_id is not None else ""),
            )


def _parsed_schema(ctx: EvalContext) -> Schema | Mapping[str, Any]:
    """The new schema as its index parsed it (its top-level fields' JSON for an index built otherwise)."""
    model = ctx.schema.model
    return model if model is not None else {"fields": [f.raw for f in ctx.schema.top]}


def _parsed_previous_schema(ctx: EvalContext) -> Schema | Mapping[str, Any]:
    prev = ctx.previous_schema
    if prev is None:
        return {"fields": []}
    return prev.model if prev.model is not None else {"fields": [f.raw for f in prev.top]}


# --- data files ------------------------------------------------------------------------------------


@kind("num_records_present", Scope.FILE, fields=("file",))
def _num_records_present(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every AddFile carries the ``numRecords`` statistic."""
    for f in ctx.files:
        if f.num_records is None:
            yield _f(
                observed="no stats" if not f.has_stats else "stats without numRecords",
                expected="numRecords",
                file=f.path,
            )


@kind("row_ids_assigned", Scope.FILE, params=("key",), fields=("file",))
def _row_ids_assigned(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """With row tracking enabled, every AddFile carries ``baseRowId`` and ``defaultRowCommitVersion``."""
    if str(ctx.metadata.configuration.get(rule.params["key"], "")).strip().lower() != "true":
        return
    for f in ctx.files:
        missing = [
            name
            for name, value in (
                ("baseRowId", f.base_row_id),
                ("defaultRowCommitVersion", f.default_row_commit_version),
            )
            if value is None
        ]
        if missing:
            yield _f(
                observed="no " + " and no ".join(missing),
                expected="baseRowId and defaultRowCommitVersion",
                file=f.path,
            )


@kind("no_deletion_vector_files", Scope.FILE, fields=("file",))
def _no_deletion_vector_files(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """No AddFile carries a deletion vector."""
    for f in ctx.files:
        if f.has_deletion_vector:
            yield _f(observed="deletion vector", expected="none", file=f.path)


@kind("partition_columns_materialized", Scope.FILE, fields=("file",))
def _partition_columns_materialized(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every partition column is present (under its physical name) in each data file whose footer
    was read."""
    parts = ctx.metadata.partition_columns
    if not parts:
        return
    names = []
    for p in parts:
        node = ctx.schema.top_level(p)
        names.append((quote_name(p), node.physical_name if node is not None else p))
    for f in ctx.files:
        if f.footer is None:
            continue
        for path, physical in names:
            if f.footer.field(physical) is None:
                yield _f(
                    path, observed="absent from the file", expected=f"a column named {physical}", file=f.path
                )


class _FooterNodes:
    """The table schema paired with each data file's footer schema, computed once per distinct footer
    schema tree: the files of a table are usually written with one schema, and pairing is the costly
    part of the file rules on a large table (the nodes depend only on the schema and the tree)."""

    def __init__(self, ctx: EvalContext) -> None:
        self.model = ctx.schema.model if ctx.schema.model is not None else [f.raw for f in ctx.schema.top]
        self.seen: dict[tuple[ParquetField, ...], list[FooterNode]] = {}

    def of(self, footer: ParquetFooter) -> list[FooterNode]:
        nodes = self.seen.get(footer.fields)
        if nodes is None:
            nodes = self.seen[footer.fields] = list(walk_footer(self.model, footer))
        return nodes


@kind("timestamps_int64", Scope.FILE, fields=("file",))
def _timestamps_int64(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every ``timestamp``/``timestamp_ntz`` value present in a data file is stored as INT64 (not
    INT96)."""
    nodes = _FooterNodes(ctx)
    for f in ctx.files:
        if f.footer is None:
            continue
        for node in nodes.of(f.footer):
            if (
                type_category(node.type) in ("timestamp", "timestamp_ntz")
                and node.node.physical_type != "INT64"
            ):
                yield _f(
                    node.path, observed=node.node.physical_type or "a group", expected="INT64", file=f.path
                )


@kind("parquet_field_ids", Scope.FILE, fields=("file",))
def _parquet_field_ids(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every schema node present in a data file (columns, nested fields, array elements, map keys and
    values) carries the Parquet field id the column mapping metadata assigns it."""
    nodes = _FooterNodes(ctx)
    for f in ctx.files:
        if f.footer is None:
            continue
        for node in nodes.of(f.footer):
            if node.expected_id is not None and node.node.field_id != node.expected_id:
                yield _f(
                    node.path,
                    observed=_shown(None if node.node.field_id is None else str(node.node.field_id)),
                    expected=node.expected_id,
                    file=f.path,
                )


@kind("row_tracking_field_id", Scope.FILE, params=("property", "field_id"), fields=("file", "key"))
def _row_tracking_field_id(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """The materialized row-tracking column named by table property ``property`` carries Parquet
    field id ``field_id`` in every data file that contains it."""
    key = rule.param("property")
    name = ctx.config.get(key)
    if not name:
        return
    want = int(rule.param("field_id"))
    for f in ctx.files:
        node = f.footer.field(name) if f.footer is not None else None
        if node is not None and node.field_id != want:
            yield _f(
                quote_name(name),
                observed=_shown(None if node.field_id is None else str(node.field_id)),
                expected=want,
                file=f.path,
                key=key,
            )


_COMMON_FIELDS = frozenset({"path", "observed", "expected"})


def check_against_kinds(rules: Iterable[Rule]) -> None:
    """Refuse a catalog whose rules name an unknown kind, give it the wrong params, or use template
    fields its findings never provide (a typo there would only surface as a KeyError mid-validation)."""
    for r in rules:
        k = KINDS.get(r.kind) if r.kind is not None else None
        if k is None:
            raise ValueError(f"rule {r.id}: unknown kind {r.kind!r}")
        if set(r.params) != set(k.params):
            raise ValueError(
                f"rule {r.id}: kind {k.name} takes params {sorted(k.params)}, got {sorted(r.params)}"
            )
        allowed = _COMMON_FIELDS | set(k.fields)
        for text in (r.message, r.fix):
            unknown = template_fields(text) - allowed
            if unknown:
                raise ValueError(
                    f"rule {r.id}: template uses {sorted(unknown)}; kind {k.name} provides {sorted(allowed)}"
                )
