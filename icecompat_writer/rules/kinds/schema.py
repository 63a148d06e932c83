"""Kinds on the schema: column ids and physical names, the types a profile allows (partition columns
included) and the type changes it can follow, default values and column metadata."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

from icecompat_writer.rules.context import MAX_COLUMN_ID_KEY, EvalContext, column_mapping_mode
from icecompat_writer.rules.kinds.registry import finding, kind, shown
from icecompat_writer.rules.literals import default_problem
from icecompat_writer.rules.model import Finding, Rule, Scope
from icecompat_writer.rules.schema import (
    CM_ID,
    CM_NESTED_IDS,
    CM_PHYSICAL_NAME,
    decimal_params,
    id_filler,
    type_category,
    type_text,
)
from icecompat_writer.schema import Schema
from icecompat_writer.schema.model import Field


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
            yield finding(
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
            yield finding(path, observed=value, expected=f"{lo}..{hi}", id=value)
        other = first.setdefault(value, path)
        if other is not path:
            yield finding(path, observed=value, expected=f"an id not already used by `{other}`", id=value)


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
        yield finding(observed=shown(raw), expected=f">= {top}", key=MAX_COLUMN_ID_KEY)


@kind("nested_ids_assigned", Scope.SCHEMA, fields=("key", "owner"), schema_only=True)
def _nested_ids_assigned(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every array element and map key/value has an integer id in ``delta.columnMapping.nested.ids``
    of its nearest ancestor struct field, under the key <physical name>.<element|key|value>..."""
    for s in ctx.schema.slots:
        ids = s.owner.metadata.get(CM_NESTED_IDS)
        value = ids.get(s.key) if (type(ids) is dict or isinstance(ids, Mapping)) else None
        if not isinstance(value, int) or isinstance(value, bool):
            yield finding(
                s.path,
                observed=shown(None if value is None else str(value)),
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
                yield finding(
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
            yield finding(f.path, observed=shown(got), expected=want)


@kind("type_allowlist", Scope.SCHEMA, params=("allowed",), fields=("type",), schema_only=True)
def _type_allowlist(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every type in the schema (columns, nested fields, array elements, map keys and values) is in
    ``allowed`` (Delta type names; ``decimal`` stands for every precision and scale)."""
    allowed = set(rule.param("allowed"))
    bad = ctx.schema.categories - allowed
    for t in ctx.schema.of_categories(bad):
        yield finding(
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
            yield finding(
                f.path,
                observed=type_text(f.type.raw),
                expected="not " + " or ".join(sorted(types)),
                type=type_text(f.type.raw),
            )


@kind("forbidden_types", Scope.SCHEMA, params=("types",), fields=("type",), schema_only=True)
def _forbidden_types(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """No type in the schema is one of ``types``."""
    for t in ctx.schema.of_categories(rule.param("types")):
        yield finding(
            t.path,
            observed=type_text(t.type),
            expected="not " + " or ".join(rule.param("types")),
            type=type_text(t.type),
        )


def _type_change_ok(frm: object, to: object, pairs: set[tuple[str, str]], decimal_widening: bool) -> bool:
    if frm == to:
        return True
    if not isinstance(frm, str) or not isinstance(to, str):
        return False
    a, b = decimal_params(frm), decimal_params(to)
    if a and b:
        return decimal_widening and a[1] == b[1] and b[0] > a[0]
    return (type_category(frm), type_category(to)) in pairs


def _type_changes(raw: object) -> list[object] | None:
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
            yield finding(
                f.path,
                observed="unreadable delta.typeChanges",
                expected="a JSON list of type changes",
                from_type="?",
                to_type="?",
            )
            continue
        for change in changes:
            if not isinstance(change, Mapping):
                yield finding(
                    f.path, observed=repr(change), expected="a type change object", from_type="?", to_type="?"
                )
                continue
            frm, to = change.get("fromType"), change.get("toType")
            if _type_change_ok(frm, to, pairs, dec):
                continue
            sub = change.get("fieldPath")
            path = f"{f.path}.{sub}" if isinstance(sub, str) and sub else f.path
            yield finding(
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
            yield finding(f.path, observed=value, expected=expected, key=key, type=type_text(f.type.raw))


@kind("forbidden_column_metadata_key", Scope.SCHEMA, params=("keys",), fields=("key",), schema_only=True)
def _forbidden_column_metadata_key(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """No column (at any nesting level) has any of ``keys`` in its metadata."""
    keys = rule.param("keys")
    for f in ctx.schema.with_metadata_keys(keys):
        for key in keys:
            if key in f.metadata:
                yield finding(
                    f.path,
                    observed=f"{key}={json.dumps(f.metadata[key], ensure_ascii=False)}",
                    expected=f"no {key}",
                    key=key,
                )
