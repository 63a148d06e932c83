"""THE rule catalog: every requirement icecompat enforces, as data.

Each entry names a generic check kind (``kinds.py``) and its params, the profiles it belongs to, the
spec clause it implements and what the planner does about it. Rule ids are stable and prefixed by
where the requirement comes from:

- ``ICV3-``: IcebergCompatV3 (delta-rfc-iceberg-compat-v3.md), profiles ``v3`` and ``writer-v3``;
- ``ICV2-``: IcebergCompatV2 (delta-PROTOCOL.md), profile ``writer-v1``;
- ``IWC1-``: IcebergWriterCompatV1 (delta-rfc-iceberg-writer-compat-v1.md), ``writer-v1`` and, where
  Delta Kernel's IcebergWriterCompatV3 applies the same check, ``writer-v3``;
- ``IWC3-``: IcebergWriterCompatV3 as Delta Kernel implements it (no protocol text exists);
- ``PROTO-``, ``CM-``, ``DELTA-``: Delta protocol requirements every profile relies on (table features,
  column mapping, features that schema contents require);
- ``PROFILE-``: icecompat's own rule that one table is written under one profile;
- ``DELTA-WRITE-``, ``ICEBERG-EMIT-``, ``UPGRADE-``: the rules the write path, the Iceberg emitter and
  the upgrade enforce themselves (``LAYER_RULES``: no check kind; ``layer`` names the module).

Every rule says where it is enforced (``stages``: plan, commit, file, Iceberg emission, upgrade).

A rule that is not implemented is absent: nothing here is a placeholder.

The entries live one module per rule family (:mod:`.support`, :mod:`.column_mapping`,
:mod:`.row_tracking`, :mod:`.data_types`, :mod:`.writer_compat`, :mod:`.delta_spark`,
:mod:`.replacement`, :mod:`.files`), the rules of the other layers in :mod:`.layers`, and the profile
names, clause anchors and shared lists they use in :mod:`.shared`. This module assembles them, in
this order (the order docs/rules.md lists them in), and validates the whole.
"""

from __future__ import annotations

from dataclasses import replace

from icecompat_writer.errors import Violation
from icecompat_writer.rules.catalog.column_mapping import column_mapping_rules
from icecompat_writer.rules.catalog.data_types import type_rules
from icecompat_writer.rules.catalog.delta_spark import delta_spark_rules
from icecompat_writer.rules.catalog.files import file_rules
from icecompat_writer.rules.catalog.layers import BOOLEAN_PROPERTIES as BOOLEAN_PROPERTIES
from icecompat_writer.rules.catalog.layers import CONFIG_NAMESPACES as CONFIG_NAMESPACES
from icecompat_writer.rules.catalog.layers import layer_rules, row_check_rules
from icecompat_writer.rules.catalog.replacement import replace_rules
from icecompat_writer.rules.catalog.row_tracking import ASSIGNED_AT_COMMIT as ASSIGNED_AT_COMMIT
from icecompat_writer.rules.catalog.row_tracking import row_tracking_rules
from icecompat_writer.rules.catalog.shared import *  # noqa: F403 (profile names, anchors, lists: as before)
from icecompat_writer.rules.catalog.support import support_rules
from icecompat_writer.rules.catalog.writer_compat import writer_compat_feature_rules
from icecompat_writer.rules.kinds import check_against_kinds, kind_of
from icecompat_writer.rules.model import Rule, Scope, Stage, unique_ids

__all__ = [
    "CATALOG", "DELTA_SPARK_RULES", "LAYER_RULES", "RULES", "RULES_BY_ID", "layer_rule", "layer_violation",
]  # fmt: skip


def _with_stages(rule: Rule) -> Rule:
    """A rule of a check kind is enforced by the planner and at commit, or on data files."""
    file = kind_of(rule).scope is Scope.FILE
    return replace(rule, stages=(Stage.FILE,) if file else (Stage.PLAN, Stage.COMMIT))


# The rules ``validate`` evaluates through their check kinds (profiles list these).
CATALOG: tuple[Rule, ...] = tuple(
    _with_stages(r)
    for r in (
        *support_rules(),
        *column_mapping_rules(),
        *row_tracking_rules(),
        *type_rules(),
        *writer_compat_feature_rules(),
        *delta_spark_rules(),
        *replace_rules(),
        *file_rules(),
    )
)
check_against_kinds(CATALOG)

# What delta-spark refuses to write although the protocol and Iceberg allow it: a writer's limit, not a
# property of the table's Iceberg view (the emitter converts such tables written by other writers).
DELTA_SPARK_RULES = frozenset(r.id for r in delta_spark_rules())

# The rules the write, Iceberg and upgrade layers enforce themselves.
LAYER_RULES: tuple[Rule, ...] = (*layer_rules(), *row_check_rules())

# Every rule of every layer: what docs/rules.md lists and what a rule id is looked up in.
RULES: tuple[Rule, ...] = (*CATALOG, *LAYER_RULES)
unique_ids(RULES)

RULES_BY_ID = {r.id: r for r in RULES}


def layer_rule(rule_id: str) -> Rule:
    """The catalog entry of a rule a layer enforces itself; ValueError for an id that is not one.

    Layers raise violations through this, so that no rule id can be used without a catalog entry.
    """
    rule = RULES_BY_ID.get(rule_id)
    if rule is None or rule.kind is not None:
        raise ValueError(f"{rule_id} is not a layer rule of the catalog")
    return rule


def layer_violation(
    profile: str,
    rule_id: str,
    path: str,
    *,
    variant: str = "",
    observed: object = None,
    expected: object = None,
    clause: str = "",
    **values: object,
) -> Violation:
    """A violation of a layer's own rule, worded by its catalog templates (``variant``: one of the
    rule's named wordings) filled with ``path``, ``observed``, ``expected`` and ``values``; observed
    and expected are kept as text."""
    rule = layer_rule(rule_id)
    message, fix = rule.render_layer(
        variant, {"path": path, "observed": observed, "expected": expected, **values}
    )
    return Violation(
        profile=profile,
        rule=rule.id,
        path=path,
        message=message,
        fix=fix,
        observed=None if observed is None else str(observed),
        expected=None if expected is None else str(expected),
        clause=clause,
    )
