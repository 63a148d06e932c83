"""Kinds on the table properties: values a property must have or may not have, checkpoints that
keep statistics, the column mapping mode, one profile per table."""

from __future__ import annotations

from collections.abc import Iterator

from icecompat_writer.rules.context import CM_MODE_KEY, EvalContext, column_mapping_mode
from icecompat_writer.rules.kinds.registry import finding, kind, shown
from icecompat_writer.rules.model import Finding, Rule, Scope


@kind("required_property", Scope.METADATA, params=("key", "value"), fields=("key",))
def _required_property(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Table property ``key`` is set to ``value`` (compared case-insensitively, as Delta parses
    booleans and modes)."""
    key, want = rule.param("key"), rule.param("value")
    got = ctx.config.get(key)
    if got is None or str(got).strip().lower() != want.lower():
        yield finding(observed=shown(got), expected=want, key=key)


@kind("checkpoint_keeps_stats", Scope.METADATA, params=("json_key", "struct_key"), fields=("key",))
def _checkpoint_keeps_stats(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Checkpoints keep the files' statistics in some form: ``json_key`` and ``struct_key`` are not
    both false (absent, each is true: delta-spark's defaults)."""
    json_key, struct_key = rule.param("json_key"), rule.param("struct_key")
    as_json = ctx.config.get(json_key)
    as_struct = ctx.config.get(struct_key)
    if as_json is not None and str(as_json).strip().lower() == "false":
        if as_struct is not None and str(as_struct).strip().lower() == "false":
            yield finding(
                observed=f"{json_key}={as_json}, {struct_key}={shown(as_struct)}",
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
            yield finding(observed=f"{key}={got}", expected=f"{key} absent or false", key=key)


@kind("forbidden_property_prefix", Scope.METADATA, params=("prefix",), fields=("key", "prefix"))
def _forbidden_property_prefix(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """No table property key starts with ``prefix``."""
    prefix = rule.param("prefix")
    for key in sorted(k for k in ctx.config if k.startswith(prefix)):
        yield finding(
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
        yield finding(
            observed=shown(ctx.config.get(CM_MODE_KEY)), expected=" or ".join(allowed), key=CM_MODE_KEY
        )


@kind("profile_exclusive", Scope.METADATA, params=("properties",), fields=("key", "declared"))
def _profile_exclusive(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """No property that declares another profile (``properties``: property -> profile) is true
    unless the profile being checked turns it on too."""
    for key, declared in rule.param("properties").items():
        mine = str(ctx.profile_properties.get(key, "")).lower() == "true"
        if ctx.is_true(key) and not mine:
            yield finding(
                observed=f"{key}=true", expected=f"{key} absent or false", key=key, declared=declared
            )
