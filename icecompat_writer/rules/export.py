"""The catalog as JSON, for consumers that must not re-implement the rules by hand (the JVM extension).

The export is the single source the Java side reads: every rule with its id, profiles, clauses, scope,
kind, params, message and fix templates and automatic fix, plus each kind's contract (scope, params,
template fields) and each profile's configuration. Kinds are what the JVM side implements; rules are
what it loads.
"""

from __future__ import annotations

from typing import Any

from icecompat_writer.rules.catalog import CATALOG, LAYER_RULES
from icecompat_writer.rules.kinds import KINDS
from icecompat_writer.rules.profiles import DEFAULT_PROFILE, PROFILES

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "export_catalog"]

EXPORT_FORMAT = "icecompat-rule-catalog"
EXPORT_VERSION = 1


def export_catalog() -> dict[str, Any]:
    """The whole catalog as plain JSON data (dicts, lists, strings, numbers, booleans, None)."""
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "template_syntax": "str.format: {name} placeholders; path, observed and expected always exist",
        "default_profile": DEFAULT_PROFILE,
        "profiles": {
            p.name: {
                "title": p.title,
                "properties": dict(p.properties),
                "features": list(p.features),
                "default_column_mapping_mode": p.default_column_mapping_mode,
                "rules": list(p.rule_ids),
            }
            for p in PROFILES.values()
        },
        "kinds": {
            k.name: {
                "scope": k.scope.value,
                "params": list(k.params),
                "fields": ["path", "observed", "expected", *k.fields],
                "description": k.doc,
            }
            for k in KINDS.values()
        },
        "rules": [
            {
                "id": r.id,
                "profiles": list(r.profiles),
                "clause": r.clause,
                "also": list(r.also),
                "reference": r.reference or None,
                "scope": KINDS[r.kind].scope.value,
                "kind": r.kind,
                "params": r.params_json(),
                "checks": r.checks,
                "message": r.message,
                "fix": r.fix,
                "autofix": r.autofix,
                "stages": [s.value for s in r.stages],
            }
            for r in CATALOG
        ],
        # Rules the write path, the Iceberg emitter and the upgrade enforce themselves (no kind).
        "layer_rules": [
            {
                "id": r.id,
                "profiles": list(r.profiles),
                "clause": r.clause,
                "also": list(r.also),
                "layer": r.layer,
                "stages": [s.value for s in r.stages],
                "params": r.params_json(),
                "checks": r.checks,
                "message": r.message,
                "fix": r.fix,
            }
            for r in LAYER_RULES
        ],
    }
