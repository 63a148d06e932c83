"""The rule catalog: what an Iceberg-safe Delta table must satisfy, per profile, as data.

Layout: ``model`` (what a rule is), ``kinds`` (the generic checks rules are made of), ``catalog`` (the
rules themselves), ``profiles`` (v3, writer-v1, writer-v3), ``evaluate`` (``validate``), ``export``
(the catalog as JSON data) and ``docs`` (docs/rules.md, generated). ``schema``, ``footer``,
``features`` and ``literals`` are the facts the checks are evaluated on. No Spark anywhere.
"""

from __future__ import annotations

from icecompat_writer.rules.catalog import CATALOG, RULES_BY_ID
from icecompat_writer.rules.evaluate import rule_scope, validate
from icecompat_writer.rules.export import export_catalog
from icecompat_writer.rules.kinds import KINDS, Kind
from icecompat_writer.rules.model import Finding, Rule, Scope
from icecompat_writer.rules.profiles import (
    DEFAULT_PROFILE,
    PROFILES,
    Profile,
    UnknownProfileError,
    get_profile,
)

__all__ = [
    "CATALOG",
    "DEFAULT_PROFILE",
    "KINDS",
    "PROFILES",
    "RULES_BY_ID",
    "Finding",
    "Kind",
    "Profile",
    "Rule",
    "Scope",
    "UnknownProfileError",
    "export_catalog",
    "get_profile",
    "rule_scope",
    "validate",
]
