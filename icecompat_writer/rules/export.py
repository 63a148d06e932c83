"""The catalog as JSON data: every rule, kind and profile, for readers and tools outside Python.

Every rule with its id, profiles, clauses, scope, stages, kind, params, message and fix templates and
automatic fix; each kind's contract (scope, params, template fields); each profile's configuration;
and the rules the other layers enforce themselves. Nothing re-implements the kinds from it: the
session guard's JVM side sends table states to the Python rule service
(:mod:`icecompat_writer.jvm.service`, ``RuleService.java``), which evaluates them with
:func:`~icecompat_writer.rules.validate`, the code ``compat_write`` and the checker run.
"""

from __future__ import annotations

from icecompat_writer.rules.catalog import CATALOG, LAYER_RULES
from icecompat_writer.rules.kinds import KINDS, kind_of
from icecompat_writer.rules.profiles import DEFAULT_PROFILE, PROFILES
from icecompat_writer.schema import JsonDict

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "export_catalog"]

EXPORT_FORMAT = "icecompat-rule-catalog"
EXPORT_VERSION = 1


def export_catalog() -> JsonDict:
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
                "scope": kind_of(r).scope.value,
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
                "variants": {name: {"message": m, "fix": f} for name, (m, f) in sorted(r.variants.items())},
            }
            for r in LAYER_RULES
        ],
    }
