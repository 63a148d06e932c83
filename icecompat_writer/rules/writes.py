"""Delta's own write rules (``DELTA-WRITE-*``): what delta-spark would refuse or misuse in a write.

These are not profile rules: the planned table can be what every profile wants and delta-spark still
fail on it, or a table property can make every later write load a class it names. They are judged on
the log's JSON alone, so the writer (before any file exists), the guard service (at each commit) and
the checker (on a table's log) share them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TypeVar

from icecompat_writer.errors import Violation
from icecompat_writer.facts import DataFileFacts
from icecompat_writer.model import Metadata, Protocol
from icecompat_writer.rules.catalog import RULES_BY_ID, layer_violation
from icecompat_writer.rules.detection import declared_profile
from icecompat_writer.rules.model import clauses_text
from icecompat_writer.schema import (
    ArrayType,
    Field,
    JsonObject,
    MapType,
    PrimitiveType,
    Schema,
    SchemaVisitor,
    Slot,
    StructType,
    fold_name,
    join_path,
    quote_name,
    visit,
)

__all__ = [
    "BOOLEAN_PROPERTIES",
    "CONFIG_NAMESPACES",
    "WRITE_PROFILE",
    "alter_violations",
    "check_properties",
    "data_schema_violations",
    "enable_v3_by_upgrade",
    "runtime_violations",
    "shallow_clone_violations",
    "write_violation",
]

WRITE_PROFILE = "delta"  # the "profile" named on violations of Delta's own write rules


def write_violation(
    rule: str,
    path: str,
    *,
    variant: str = "",
    observed: object = None,
    expected: object = None,
    **values: object,
) -> Violation:
    """A violation of Delta's own write rules (profile ``delta``), refused before any file is written;
    worded by the rule's catalog templates filled with ``values``."""
    return layer_violation(
        WRITE_PROFILE,
        rule,
        path,
        variant=variant,
        observed=observed,
        expected=expected,
        clause="delta-PROTOCOL.md#schema-serialization-format",
        **values,
    )


class _VariantPaths(SchemaVisitor[list[str]]):
    """The path of every field, element, key or value whose type is ``variant``, in schema order."""

    def struct(self, struct: StructType, field_results: list[list[str]]) -> list[str]:
        return [p for r in field_results for p in r]

    def field(self, field: Field, type_result: list[str]) -> list[str]:
        return [field.path] if field.type.raw == "variant" else type_result

    def slot(self, slot: Slot, type_result: list[str]) -> list[str]:
        return [slot.path] if slot.type.raw == "variant" else type_result

    def array(self, array: ArrayType, element_result: list[str]) -> list[str]:
        return element_result

    def map(self, map_type: MapType, key_result: list[str], value_result: list[str]) -> list[str]:
        return key_result + value_result

    def primitive(self, primitive: PrimitiveType) -> list[str]:
        return []


# delta-spark copies every table property into the Hadoop configuration of each write (TransactionalWrite
# builds it from the table's configuration), where Hadoop, Parquet and Spark read their settings, class
# names included: `fs.file.impl` with `fs.file.impl.disable.cache`, `parquet.crypto.factory.class` and
# `spark.sql.parquet.output.committer.class` make the write load the class a table property names.
# Properties in these namespaces are refused: no table property may decide what code a write runs.
_CONFIG_RULE = RULES_BY_ID["DELTA-WRITE-CONFIG-PROPERTY"]
CONFIG_NAMESPACES: tuple[str, ...] = tuple(_CONFIG_RULE.param("namespaces"))


def check_properties(configuration: JsonObject, problems: list[Violation]) -> None:
    """Append a violation for every table property in a namespace that reaches the Hadoop configuration."""
    for key in sorted(configuration):
        if str(key).lower().startswith(CONFIG_NAMESPACES):
            problems.append(
                write_violation(
                    "DELTA-WRITE-CONFIG-PROPERTY",
                    "",
                    observed=key,
                )
            )


# Delta properties delta-spark parses as booleans (Scala's toBoolean: `true`/`false` in any case, no
# spaces). A value it cannot parse fails the write inside delta-spark with "For input string".
_VALUE_RULE = RULES_BY_ID["DELTA-WRITE-PROPERTY-VALUE"]
BOOLEAN_PROPERTIES = frozenset(_VALUE_RULE.param("boolean_properties"))
_PROTOCOL_PROPERTIES = {k: tuple(v) for k, v in _VALUE_RULE.param("protocol_versions").items()}
_FEATURE_STATUSES = tuple(_VALUE_RULE.param("feature_statuses"))


def _property_value_problem(key: str, value: str) -> tuple[str, str] | None:
    """(what is wrong, what delta-spark accepts) for a property value delta-spark would fail on."""
    low = key.lower()
    if low in BOOLEAN_PROPERTIES and value.lower() not in ("true", "false"):
        return "is not a boolean delta-spark can parse", "true or false"
    if low in _PROTOCOL_PROPERTIES and value not in _PROTOCOL_PROPERTIES[low]:
        return "is not a protocol version", "one of " + ", ".join(_PROTOCOL_PROPERTIES[low])
    if low.startswith("delta.feature.") and value.lower() not in _FEATURE_STATUSES:
        return "is not a table feature status", "supported or enabled"
    return None


_T = TypeVar("_T")


def _join(prefix: str, name: str) -> str:
    """Column paths are spelled exactly as the rule catalog spells them."""
    return join_path(prefix, quote_name(name))


class _Paths(SchemaVisitor[_T]):
    """A visitor that knows the path of the field or slot whose type it is in (``""`` at the top)."""

    def __init__(self) -> None:
        self._at: list[str] = [""]

    @property
    def here(self) -> str:
        return self._at[-1]

    def before_field(self, field: Field) -> None:
        self._at.append(field.path)

    def after_field(self, field: Field) -> None:
        self._at.pop()

    def before_slot(self, slot: Slot) -> None:
        self._at.append(slot.path)

    def after_slot(self, slot: Slot) -> None:
        self._at.pop()


class _DataSchemaProblems(_Paths[list[Violation]]):
    """Duplicate names (as Delta matches them) and structs without fields, in schema order."""

    def struct(self, struct: StructType, field_results: list[list[Violation]]) -> list[Violation]:
        path = self.here
        problems: list[Violation] = []
        if not struct.fields:
            problems.append(
                write_violation(
                    "DELTA-WRITE-EMPTY-STRUCT",
                    path,
                )
            )
        seen: dict[str, str] = {}
        for f, below in zip(struct.fields, field_results, strict=True):
            folded = fold_name(f.name)
            first = seen.get(folded)
            if first is None:
                seen[folded] = f.name
            else:
                problems.append(
                    write_violation(
                        "DELTA-WRITE-DUPLICATE-COLUMN",
                        f.path,
                        observed=f.name,
                        expected=first,
                        other=_join(path, first),
                    )
                )
            problems.extend(below)
        return problems

    def field(self, field: Field, type_result: list[Violation]) -> list[Violation]:
        return type_result

    def array(self, array: ArrayType, element_result: list[Violation]) -> list[Violation]:
        return element_result

    def map(
        self, map_type: MapType, key_result: list[Violation], value_result: list[Violation]
    ) -> list[Violation]:
        return key_result + value_result

    def primitive(self, primitive: PrimitiveType) -> list[Violation]:
        return []


def data_schema_violations(schema: Schema) -> list[Violation]:
    """Names Delta would take for one column, and structs Parquet cannot store, anywhere in a
    DataFrame's schema.

    delta-spark refuses both itself (DELTA_DUPLICATE_COLUMNS_FOUND, DELTA_CANNOT_WRITE_EMPTY_SCHEMA), but
    without a fix, and an empty struct below an array or map can get as far as Parquet's writer on some
    paths. Found here, every occurrence is listed with its full path before any file exists.
    """
    found: list[Violation] = visit(schema, _DataSchemaProblems())
    return found


def shallow_clone_violations(paths: Sequence[str]) -> list[Violation]:
    """A commit that references data files outside its table (a SHALLOW CLONE) is refused.

    The files belong to another table: its VACUUM, OPTIMIZE or REPLACE can delete them under the
    clone, an Iceberg reader resolves them against the clone's location, and ``icecompat check`` does
    not read outside the table it audits. A compliant copy is a DEEP CLONE or ``compat_write``.
    """
    return [
        write_violation(
            "DELTA-WRITE-SHALLOW-CLONE",
            "",
            observed=paths[0],
            expected="files inside the table",
            count=len(paths),
        )
    ]


def unread_footer_violations(files: Sequence[DataFileFacts]) -> list[Violation]:
    """New data files whose footers could not be read are refused, never passed.

    The file rules skip a file without a footer (an audit reports the read error itself); a commit
    judged without its files' footers would otherwise be a silent pass.
    """
    unread = [f for f in files if f.footer is None]
    if not unread:
        return []
    first = unread[0]
    return [
        write_violation(
            "DELTA-WRITE-FOOTER-UNREAD",
            "",
            observed=first.path,
            expected="a readable Parquet footer",
            count=len(unread),
            problem=first.footer_error or "the footer was not read",
        )
    ]


def runtime_violations(
    metadata: Metadata, protocol: Protocol, asked: Mapping[str, str] | None
) -> list[Violation]:
    """What delta-spark would fail on in the planned state, found before it writes a file.

    These are not profile rules: the planned table is what the profiles want, but delta-spark 4.4
    cannot write it. Property values are judged only where the write asked for them and the plan kept
    them (a value the planner replaced never reaches delta-spark).
    """
    problems: list[Violation] = []
    config = metadata.configuration
    for key in sorted(asked or {}):
        value = config.get(key)
        if not isinstance(value, str) or value != (asked or {})[key]:
            continue
        found = _property_value_problem(key, value)
        if found is not None:
            problems.append(
                write_violation(
                    "DELTA-WRITE-PROPERTY-VALUE",
                    "",
                    observed=value,
                    expected=found[1],
                    key=key,
                    problem=found[0],
                )
            )
    problems.extend(variant_violations(metadata, protocol))
    return problems


def variant_violations(metadata: Metadata, protocol: Protocol) -> list[Violation]:
    """Every variant column of a table with IcebergCompatV3: delta-spark 4.4 fails on it in any commit
    that writes data files (compat_write's, the guard's and the upgrade's rewrite alike)."""
    icv3 = (
        "icebergCompatV3" in (protocol.writer_features or ())
        or str(metadata.configuration.get("delta.enableIcebergCompatV3", "")).strip().lower() == "true"
    )
    if not icv3:
        return []
    return [
        write_violation(
            "DELTA-WRITE-VARIANT-ICEBERG-V3",
            path,
            observed="variant",
        )
        for path in visit(metadata.schema_model, _VariantPaths())
    ]


_ICV3 = "delta.enableIcebergCompatV3"
_ROW_TRACKING = "delta.enableRowTracking"


def _true(configuration: JsonObject, key: str) -> bool:
    """A boolean table property as delta-spark reads it (``true`` in any case)."""
    return str(configuration.get(key, "")).strip().lower() == "true"


def row_tracking_before_v3(metadata: Metadata, protocol: Protocol) -> bool:
    """Whether a table state has row tracking enabled (the ``rowTracking`` feature supported and
    ``delta.enableRowTracking`` true) and IcebergCompatV3 not enabled: the state in which delta-spark
    refuses a SET TBLPROPERTIES that enables IcebergCompatV3."""
    config = metadata.configuration
    supported = "rowTracking" in (protocol.writer_features or ())
    return supported and _true(config, _ROW_TRACKING) and not _true(config, _ICV3)


def alter_violations(metadata: Metadata, previous: Metadata, previous_protocol: Protocol) -> list[Violation]:
    """An ``ALTER TABLE ... SET TBLPROPERTIES`` that enables IcebergCompatV3 on a table with row
    tracking already enabled: delta-spark refuses that command at its commit with an
    ``UnsupportedOperationException`` (its ``CheckNoRowTrackingBeforeUpgradeV3``), whatever else the
    command sets. ``metadata`` is the state the command would commit, ``previous`` the table before
    it; the fix names the profile the new state declares (``v3`` or ``writer-v3``). ``upgrade``
    enables IcebergCompatV3 in a commit of another operation, which delta-spark accepts.
    """
    if not _true(metadata.configuration, _ICV3) or not row_tracking_before_v3(previous, previous_protocol):
        return []
    rule = "DELTA-WRITE-ALTER-V3-ROW-TRACKING"
    profile = declared_profile(metadata.configuration) or "v3"
    return [
        layer_violation(
            profile,
            rule,
            "",
            observed=f"{_ROW_TRACKING}=true, rowTracking supported",
            expected=f"{_ICV3} enabled by `icecompat upgrade`",
            clause=clauses_text(RULES_BY_ID[rule]),
            target=profile,
        )
    ]


def enable_v3_by_upgrade(
    profile: str, found: list[Violation], metadata: Metadata, protocol: Protocol
) -> list[Violation]:
    """``found`` with the fix of ``ICV3-ENABLED`` pointing at ``icecompat upgrade`` where the table has
    row tracking enabled: setting the property there with ALTER TABLE ... SET TBLPROPERTIES, what the
    rule's own fix says, is what delta-spark refuses (``DELTA-WRITE-ALTER-V3-ROW-TRACKING``)."""
    if not row_tracking_before_v3(metadata, protocol):
        return found
    rule = "DELTA-WRITE-ALTER-V3-ROW-TRACKING"
    hint = (
        f"; on this table, whose row tracking is enabled, delta-spark refuses that as ALTER TABLE ... SET "
        f"TBLPROPERTIES ({rule}): run `icecompat upgrade --profile {profile}` instead"
    )
    return [dataclasses.replace(v, fix=v.fix + hint) if v.rule == "ICV3-ENABLED" else v for v in found]
