"""Kinds on a replace: the new state judged against the previous one."""

from __future__ import annotations

from collections.abc import Iterator

from icecompat_writer.rules.context import EvalContext, column_mapping_mode
from icecompat_writer.rules.kinds.registry import finding, kind
from icecompat_writer.rules.model import Finding, Rule, Scope
from icecompat_writer.rules.schema import (
    CM_PHYSICAL_NAME,
    SchemaIndex,
    column_id,
    contains_struct,
    field_metadata,
    matched_fields,
    physical_path,
    type_shape,
    type_text,
)
from icecompat_writer.schema import Schema, parse_schema


@kind("partition_spec_unchanged", Scope.REPLACE)
def _partition_spec_unchanged(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """A table that was partitioned keeps exactly the same partition column names, in the same order
    (their types may change)."""
    if ctx.previous is None:
        return
    before = list(ctx.previous.metadata.partition_columns)
    after = list(ctx.metadata.partition_columns)
    if before and before != after:
        yield finding(observed=", ".join(after) or "(unpartitioned)", expected=", ".join(before))


@kind("map_key_struct_immutable", Scope.REPLACE)
def _map_key_struct_immutable(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """A map key that holds a struct keeps exactly the same shape (field names, types, nullability)
    as in the previous schema; maps are matched by their physical path."""
    prev = ctx.previous_schema
    if prev is None:
        return
    before: dict[tuple[tuple[str, ...], str], object] = {}
    for s in prev.slots:
        if s.key.endswith(".key") and contains_struct(s.type):
            before[(physical_path(s.owner), s.key)] = s.type
    if not before:
        return
    for s in ctx.schema.slots:
        old = before.get((physical_path(s.owner), s.key)) if s.key.endswith(".key") else None
        if old is not None and type_shape(old) != type_shape(s.type):
            yield finding(s.path, observed=type_text(s.type), expected=f"unchanged {type_text(old)}")


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
            yield finding(
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
            yield finding(f.path, observed="physical column dropped", expected=want, key=key)
        elif f.name not in names:
            yield finding(f.path, observed=f"renamed to {names[0]}", expected=f"name {f.name}", key=key)


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
    yield finding(observed=f"{before} -> {after}", expected=f"{before} (unchanged)")


@kind("physical_names_stable", Scope.REPLACE)
def _physical_names_stable(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every column that existed before (matched by name, exactly then case-insensitively) keeps its
    physical name and column id; without column mapping before, its physical name was its name."""
    if ctx.previous is None:
        return
    prev_mapped = column_mapping_mode(ctx.previous.metadata.configuration) in ("name", "id")
    for new, old, path in matched_fields(_model(ctx.schema), _model(ctx.previous_schema)):
        md, old_md = field_metadata(new), field_metadata(old)
        want_pn = old_md.get(CM_PHYSICAL_NAME) if prev_mapped else old.get("name")
        want_id = column_id(old) if prev_mapped else None
        got_pn, got_id = md.get(CM_PHYSICAL_NAME), column_id(new)
        if (want_pn is not None and got_pn != want_pn) or (want_id is not None and got_id != want_id):
            yield finding(
                path,
                observed=f"physicalName={got_pn}, id={got_id}",
                expected=f"physicalName={want_pn}" + (f", id={want_id}" if want_id is not None else ""),
            )


def _model(index: SchemaIndex | None) -> Schema:
    """The schema as its index parsed it (its top-level fields for an index built otherwise)."""
    if index is None:
        return parse_schema({"fields": []})
    if index.model is not None:
        return index.model
    return parse_schema({"fields": [f.raw for f in index.top]})
