"""Conformance: one base set of cases, each run for every profile, with the exact rules each profile
must report.

Every case starts from a table the planner made compliant with that profile (a nested, oddly named
schema: arrays of structs, a map with a struct key and array-of-struct value, a map of maps, structs
five deep, names with spaces, dots, backticks and unicode), breaks one thing, and states which rule ids
fire for v3, writer-v1 and writer-v3 (an empty set: the profile accepts it). The last test proves that
every rule of every profile both fails and passes somewhere in this table.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from typing import Any

import pytest

from icecompat_writer.deltalog.actions import TableState
from icecompat_writer.facts import DataFileFacts
from icecompat_writer.rules import CATALOG, PROFILES, validate
from icecompat_writer.rules.schema import CM_ID, CM_NESTED_IDS, CM_PHYSICAL_NAME

from .builders import (
    compliant,
    drop_from_footer,
    edit_footer,
    field,
    find,
    good_file,
    meta,
    physical_of,
    with_config,
    with_features,
    with_protocol,
    with_schema,
)

V3, W1, W3 = "v3", "writer-v1", "writer-v3"


@dataclass(frozen=True)
class Outcome:
    state: TableState
    previous: TableState | None = None
    files: tuple[DataFileFacts, ...] = ()


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[TableState], Outcome]
    expect: dict[str, frozenset[str]] = dc_field(default_factory=dict)


def exp(all_: tuple[str, ...] = (), **per: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """Expected rule ids: ``all_`` for every profile, ``v3=``/``w1=``/``w3=`` add per profile."""
    names = {"v3": V3, "w1": W1, "w3": W3}
    out = {p: frozenset(all_) for p in (V3, W1, W3)}
    for short, rules in per.items():
        out[names[short]] = out[names[short]] | frozenset(rules)
    return out


def state_only(edit: Callable[[TableState], TableState]) -> Callable[[TableState], Outcome]:
    return lambda s: Outcome(edit(s))


def schema_edit(edit: Callable[[dict], Any]) -> Callable[[TableState], Outcome]:
    return state_only(lambda s: with_schema(s, edit))


def set_meta(path: str, **values: Any) -> Callable[[dict], None]:
    def edit(schema: dict) -> None:
        meta(schema, path).update(values)

    return edit


def set_type(path: str, type_: Any) -> Callable[[dict], None]:
    def edit(schema: dict) -> None:
        find(schema, path)["type"] = type_

    return edit


def replaced(edit: Callable[[TableState], TableState]) -> Callable[[TableState], Outcome]:
    """The baseline is the previous state; the edited copy is the new one."""
    return lambda s: Outcome(edit(s), previous=s)


def files(make: Callable[[TableState], tuple[DataFileFacts, ...]]) -> Callable[[TableState], Outcome]:
    return lambda s: Outcome(s, files=make(s))


def _fresh(s: TableState) -> int:
    return int(s.metadata.configuration["delta.columnMapping.maxColumnId"]) + 1


_CDF_W = ("IWC1-NO-CHANGE-DATA-FEED",)


def _cdf(s: TableState) -> TableState:
    return with_config(s, {"delta.enableChangeDataFeed": "true"})


def _add_key_field(s: TableState) -> TableState:
    new_id = _fresh(s)

    def edit(schema: dict) -> None:
        find(schema, "m")["type"]["keyType"]["fields"].append(
            field("k3", "long", {CM_ID: new_id, CM_PHYSICAL_NAME: f"col-{new_id}"})
        )

    return with_config(with_schema(s, edit), {"delta.columnMapping.maxColumnId": str(new_id)})


def _add_value_field(s: TableState) -> TableState:
    new_id = _fresh(s)

    def edit(schema: dict) -> None:
        find(schema, "m/value")  # the value is array<struct<v>>: add to that struct
        find(schema, "m")["type"]["valueType"]["elementType"]["fields"].append(
            field("w", "long", {CM_ID: new_id, CM_PHYSICAL_NAME: f"col-{new_id}"})
        )

    return with_config(with_schema(s, edit), {"delta.columnMapping.maxColumnId": str(new_id)})


def _renumber(s: TableState) -> TableState:
    new_id = _fresh(s)
    edited = with_schema(s, set_meta("ünï", **{CM_ID: new_id, CM_PHYSICAL_NAME: f"col-{new_id}"}))
    return with_config(edited, {"delta.columnMapping.maxColumnId": str(new_id)})


def _duplicate_id(schema: dict) -> None:
    other = meta(schema, "id")[CM_ID]
    meta(schema, "deep/l1/l2/l3/l4/l5").update({CM_ID: other, CM_PHYSICAL_NAME: f"col-{other}"})


def _shared_physical(source: str, target: str) -> Callable[[dict], None]:
    """Give the field at ``target`` the physical name of the field at ``source``."""

    def edit(schema: dict) -> None:
        meta(schema, target)[CM_PHYSICAL_NAME] = meta(schema, source)[CM_PHYSICAL_NAME]

    return edit


def _nested_dup(schema: dict) -> None:
    m = meta(schema, "m")
    m[CM_NESTED_IDS][m[CM_PHYSICAL_NAME] + ".key"] = meta(schema, "id")[CM_ID]


def _drop_nested(schema: dict) -> None:
    m = meta(schema, "mm")
    del m[CM_NESTED_IDS][m[CM_PHYSICAL_NAME] + ".value.value.element"]


def _type_change(
    path: str, frm: str, to: str, field_path: str | None = None
) -> Callable[[TableState], TableState]:
    change = {"fromType": frm, "toType": to, **({"fieldPath": field_path} if field_path else {})}

    def edit(s: TableState) -> TableState:
        return with_features(
            with_schema(s, set_meta(path, **{"delta.typeChanges": [change]})),
            ["typeWidening"],
            ["typeWidening"],
        )

    return edit


def _row_tracking_file(field_id: int) -> Callable[[TableState], tuple[DataFileFacts, ...]]:
    """A good data file that also holds the materialized row-tracking column ``_row-col``."""

    def make(s: TableState) -> tuple[DataFileFacts, ...]:
        from icecompat_writer.facts import ParquetField

        f = good_file(s.metadata)
        footer = replace(f.footer, fields=(*f.footer.fields, ParquetField("_row-col", field_id, "INT64")))
        return (replace(f, footer=footer),)

    return make


def _with_row_tracking_names(s: TableState) -> TableState:
    return with_config(
        s,
        {
            "delta.rowTracking.materializedRowIdColumnName": "_row-col",
            "delta.rowTracking.materializedRowCommitVersionColumnName": "_row-col",
        },
    )


CASES: list[Case] = [
    Case("compliant baseline", state_only(lambda s: s), exp()),
    # --- protocol -----------------------------------------------------------------------------------
    Case(
        "writer version 6",
        state_only(lambda s: with_protocol(s, min_writer_version=6)),
        exp(("PROTO-WRITER-VERSION",)),
    ),
    Case(
        "reader version 1",
        state_only(lambda s: with_protocol(s, min_reader_version=1, reader_features=None)),
        exp(("PROTO-READER-COLUMN-MAPPING",)),
    ),
    Case(
        "reader version 2 implies column mapping",
        state_only(lambda s: with_protocol(s, min_reader_version=2, reader_features=None)),
        exp(),
    ),
    Case(
        "reader feature not listed as writer feature",
        state_only(lambda s: with_features(s, add_reader=["v2Checkpoint"])),
        exp(("PROTO-READER-FEATURES-IN-WRITER",)),
    ),
    Case(
        "columnMapping missing from writerFeatures",
        state_only(
            lambda s: with_features(with_features(s, drop=["columnMapping"]), add_reader=["columnMapping"])
        ),
        exp(("CM-WRITER-FEATURE", "PROTO-READER-FEATURES-IN-WRITER")),
    ),
    Case(
        "icebergCompatV3 feature missing",
        state_only(lambda s: with_features(s, drop=["icebergCompatV3"])),
        exp(v3=("ICV3-FEATURE",), w3=("ICV3-FEATURE",)),
    ),
    Case(
        "icebergCompatV2 feature missing",
        state_only(lambda s: with_features(s, drop=["icebergCompatV2"])),
        exp(w1=("ICV2-FEATURE",)),
    ),
    Case(
        "icebergWriterCompatV1 feature missing",
        state_only(lambda s: with_features(s, drop=["icebergWriterCompatV1"])),
        exp(w1=("IWC1-FEATURE",)),
    ),
    Case(
        "icebergWriterCompatV3 feature missing",
        state_only(lambda s: with_features(s, drop=["icebergWriterCompatV3"])),
        exp(w3=("IWC3-FEATURE",)),
    ),
    Case(
        "rowTracking and domainMetadata features missing",
        state_only(lambda s: with_features(s, drop=["rowTracking", "domainMetadata"])),
        exp(v3=("ICV3-ROW-TRACKING-FEATURES",), w3=("ICV3-ROW-TRACKING-FEATURES",)),
    ),
    Case(
        "deletionVectors supported",
        state_only(lambda s: with_features(s, ["deletionVectors"], ["deletionVectors"])),
        exp(w1=("IWC1-FEATURE-ALLOWLIST",)),
    ),
    Case(
        "materializePartitionColumns supported",
        state_only(lambda s: with_features(s, ["materializePartitionColumns"])),
        exp(w1=("IWC1-FEATURE-ALLOWLIST",), w3=("IWC3-FEATURE-ALLOWLIST",)),
    ),
    Case(
        "checkpointProtection (Kernel allows it for V3)",
        state_only(lambda s: with_features(s, ["checkpointProtection"])),
        exp(w1=("IWC1-FEATURE-ALLOWLIST",)),
    ),
    Case(
        "legacy features supported but inactive",
        state_only(
            lambda s: with_features(
                s,
                [
                    "invariants",
                    "changeDataFeed",
                    "checkConstraints",
                    "identityColumns",
                    "generatedColumns",
                    "appendOnly",
                ],
            )
        ),
        exp(),
    ),
    Case(
        "legacy writer version 6 implies features (all allowed inactive)",
        state_only(lambda s: with_protocol(s, min_writer_version=6, writer_features=None)),
        exp(
            ("PROTO-WRITER-VERSION",),
            v3=("ICV3-FEATURE", "ICV3-ROW-TRACKING-FEATURES"),
            w1=("ICV2-FEATURE", "IWC1-FEATURE"),
            w3=("ICV3-FEATURE", "ICV3-ROW-TRACKING-FEATURES", "IWC3-FEATURE"),
        ),
    ),
    Case(
        "rowTracking supported but inactive",
        state_only(lambda s: with_features(s, ["rowTracking", "domainMetadata"])),
        exp(),
    ),
    # --- table properties -------------------------------------------------------------------------------
    Case(
        "enableIcebergCompatV3 absent",
        state_only(lambda s: with_config(s, drop=["delta.enableIcebergCompatV3"])),
        exp(v3=("ICV3-ENABLED",), w3=("ICV3-ENABLED",)),
    ),
    Case(
        "enableIcebergCompatV3 not true",
        state_only(lambda s: with_config(s, {"delta.enableIcebergCompatV3": "false"})),
        exp(v3=("ICV3-ENABLED",), w3=("ICV3-ENABLED",)),
    ),
    Case(
        "enableIcebergCompatV2 absent",
        state_only(lambda s: with_config(s, drop=["delta.enableIcebergCompatV2"])),
        exp(w1=("ICV2-ENABLED",)),
    ),
    Case(
        "enableIcebergWriterCompatV1 absent",
        state_only(lambda s: with_config(s, drop=["delta.enableIcebergWriterCompatV1"])),
        exp(w1=("IWC1-ENABLED",)),
    ),
    Case(
        "enableIcebergWriterCompatV3 absent",
        state_only(lambda s: with_config(s, drop=["delta.enableIcebergWriterCompatV3"])),
        exp(w3=("IWC3-ENABLED",)),
    ),
    Case(
        "property values are case-insensitive",
        state_only(
            lambda s: with_config(s, {k: "TRUE" for k, v in s.metadata.configuration.items() if v == "true"})
        ),
        exp(),
    ),
    Case(
        "row tracking disabled",
        state_only(lambda s: with_config(s, {"delta.enableRowTracking": "false"})),
        exp(v3=("ICV3-ROW-TRACKING",), w3=("ICV3-ROW-TRACKING",)),
    ),
    Case(
        "row tracking active",
        state_only(lambda s: with_config(s, {"delta.enableRowTracking": "true"})),
        exp(w1=("IWC1-NO-ROW-TRACKING",)),
    ),
    Case(
        "checkpoints keep no statistics",
        state_only(
            lambda s: with_config(
                s,
                {
                    "delta.checkpoint.writeStatsAsJson": "False",
                    "delta.checkpoint.writeStatsAsStruct": "false",
                },
            )
        ),
        exp(("DELTA-CHECKPOINT-STATS",)),
    ),
    Case(
        "checkpoints keep statistics as structs only",
        state_only(
            lambda s: with_config(
                s,
                {"delta.checkpoint.writeStatsAsJson": "false", "delta.checkpoint.writeStatsAsStruct": "true"},
            )
        ),
        exp(),
    ),
    Case(
        "checkpoints keep statistics as structs, delta-spark's default",
        state_only(lambda s: with_config(s, {"delta.checkpoint.writeStatsAsJson": "false"})),
        exp(),
    ),
    Case(
        "row tracking suspended",
        state_only(lambda s: with_config(s, {"delta.rowTrackingSuspended": "true"})),
        exp(v3=("ICV3-ROW-TRACKING-NOT-SUSPENDED",), w3=("ICV3-ROW-TRACKING-NOT-SUSPENDED",)),
    ),
    Case(
        "IcebergCompatV1 enabled",
        state_only(lambda s: with_config(s, {"delta.enableIcebergCompatV1": "true"})),
        exp(v3=("ICV3-NO-OLDER-COMPAT",), w1=("ICV2-NO-V1",), w3=("ICV3-NO-OLDER-COMPAT",)),
    ),
    Case(
        "IcebergCompatV2 enabled",
        state_only(lambda s: with_config(s, {"delta.enableIcebergCompatV2": "true"})),
        exp(v3=("ICV3-NO-OLDER-COMPAT",), w3=("ICV3-NO-OLDER-COMPAT",)),
    ),
    Case(
        "IcebergCompatV3 enabled (mixing)",
        state_only(lambda s: with_config(s, {"delta.enableIcebergCompatV3": "true"})),
        exp(w1=("PROFILE-EXCLUSIVE",)),
    ),
    Case(
        "IcebergWriterCompatV1 enabled (mixing)",
        state_only(lambda s: with_config(s, {"delta.enableIcebergWriterCompatV1": "true"})),
        exp(v3=("PROFILE-EXCLUSIVE",), w3=("PROFILE-EXCLUSIVE",)),
    ),
    Case(
        "IcebergWriterCompatV3 enabled (mixing)",
        state_only(lambda s: with_config(s, {"delta.enableIcebergWriterCompatV3": "true"})),
        exp(v3=("PROFILE-EXCLUSIVE",), w1=("PROFILE-EXCLUSIVE",)),
    ),
    Case(
        "deletion vectors enabled",
        state_only(lambda s: with_config(s, {"delta.enableDeletionVectors": "true"})),
        exp(w1=("ICV2-NO-DELETION-VECTORS",)),
    ),
    Case(
        "change data feed active",
        state_only(lambda s: with_config(s, {"delta.enableChangeDataFeed": "true"})),
        exp(w1=("IWC1-NO-CHANGE-DATA-FEED",), w3=("IWC1-NO-CHANGE-DATA-FEED",)),
    ),
    Case(
        "change data feed explicitly off",
        state_only(lambda s: with_config(s, {"delta.enableChangeDataFeed": "false"})),
        exp(),
    ),
    Case(
        "CHECK constraint defined",
        state_only(lambda s: with_config(s, {"delta.constraints.positive": "id > 0"})),
        exp(w1=("IWC1-NO-CHECK-CONSTRAINTS",), w3=("IWC1-NO-CHECK-CONSTRAINTS",)),
    ),
    Case(
        "column mapping in name mode",
        state_only(lambda s: with_config(s, {"delta.columnMapping.mode": "name"})),
        exp(w1=("IWC1-ID-MODE",), w3=("IWC1-ID-MODE",)),
    ),
    Case(
        "column mapping mode none",
        state_only(lambda s: with_config(s, {"delta.columnMapping.mode": "none"})),
        exp(v3=("ICV3-COLUMN-MAPPING-MODE",), w1=("IWC1-ID-MODE",), w3=("IWC1-ID-MODE",)),
    ),
    Case(
        "column mapping mode absent",
        state_only(lambda s: with_config(s, drop=["delta.columnMapping.mode"])),
        exp(v3=("ICV3-COLUMN-MAPPING-MODE",), w1=("IWC1-ID-MODE",), w3=("IWC1-ID-MODE",)),
    ),
    Case(
        "maxColumnId too low",
        state_only(lambda s: with_config(s, {"delta.columnMapping.maxColumnId": "3"})),
        exp(("CM-MAX-COLUMN-ID",)),
    ),
    Case(
        "maxColumnId absent",
        state_only(lambda s: with_config(s, drop=["delta.columnMapping.maxColumnId"])),
        exp(("CM-MAX-COLUMN-ID",)),
    ),
    Case(
        "maxColumnId not a number",
        state_only(lambda s: with_config(s, {"delta.columnMapping.maxColumnId": "many"})),
        exp(("CM-MAX-COLUMN-ID",)),
    ),
    Case(
        "maxColumnId above every id (dropped columns)",
        state_only(lambda s: with_config(s, {"delta.columnMapping.maxColumnId": "900"})),
        exp(),
    ),
    # --- schema -------------------------------------------------------------------------------------------
    Case(
        "field five deep without an id",
        schema_edit(lambda sc: meta(sc, "deep/l1/l2/l3/l4/l5").pop(CM_ID)),
        exp(("CM-IDS-ASSIGNED",)),
    ),
    Case(
        "field in a map key without a physical name",
        schema_edit(lambda sc: meta(sc, "m/key/k1").pop(CM_PHYSICAL_NAME)),
        exp(("CM-IDS-ASSIGNED",), w1=("IWC1-PHYSICAL-NAME",), w3=("IWC1-PHYSICAL-NAME",)),
    ),
    Case("id given as a boolean", schema_edit(set_meta("id", **{CM_ID: True})), exp(("CM-IDS-ASSIGNED",))),
    Case("duplicate column id", schema_edit(_duplicate_id), exp(("CM-IDS-UNIQUE",))),
    Case("nested id equal to a column id", schema_edit(_nested_dup), exp(("CM-IDS-UNIQUE",))),
    Case(
        "two columns share a physical name",
        schema_edit(_shared_physical("id", "ünï")),
        exp(("CM-PHYSICAL-NAMES-UNIQUE",), w1=("IWC1-PHYSICAL-NAME",), w3=("IWC1-PHYSICAL-NAME",)),
    ),
    Case(
        "two fields of a map key's struct share a physical name",
        schema_edit(_shared_physical("m/key/k1", "m/key/k2")),
        exp(("CM-PHYSICAL-NAMES-UNIQUE",), w1=("IWC1-PHYSICAL-NAME",), w3=("IWC1-PHYSICAL-NAME",)),
    ),
    Case(
        "fields of different structs share a physical name (distinct physical paths)",
        schema_edit(_shared_physical("id", "deep/l1")),
        exp(w1=("IWC1-PHYSICAL-NAME",), w3=("IWC1-PHYSICAL-NAME",)),
    ),
    Case(
        "id in Iceberg's reserved range",
        state_only(
            lambda s: with_config(
                with_schema(s, set_meta("ünï", **{CM_ID: 2147483540, CM_PHYSICAL_NAME: "col-2147483540"})),
                {"delta.columnMapping.maxColumnId": "2147483540"},
            )
        ),
        exp(("CM-IDS-UNIQUE",)),
    ),
    Case(
        "nested id missing (map of map of array)",
        schema_edit(_drop_nested),
        exp(v3=("ICV3-NESTED-IDS",), w1=("ICV2-NESTED-IDS",), w3=("ICV3-NESTED-IDS",)),
    ),
    Case(
        "nested ids missing entirely on an array of structs",
        schema_edit(lambda sc: meta(sc, "arr").pop(CM_NESTED_IDS)),
        exp(v3=("ICV3-NESTED-IDS",), w1=("ICV2-NESTED-IDS",), w3=("ICV3-NESTED-IDS",)),
    ),
    Case(
        "physical name not col-<id>",
        schema_edit(set_meta("a.b/x.y", **{CM_PHYSICAL_NAME: "col-5f422f40-de70-45b2"})),
        exp(w1=("IWC1-PHYSICAL-NAME",), w3=("IWC1-PHYSICAL-NAME",)),
    ),
    Case(
        "byte inside an array of structs",
        schema_edit(set_type("arr/element/c", "byte")),
        exp(w1=("IWC1-NO-BYTE-SHORT",), w3=("IWC1-NO-BYTE-SHORT",)),
    ),
    Case(
        "short as a map key field",
        schema_edit(set_type("m/key/k2", "short")),
        exp(w1=("IWC1-NO-BYTE-SHORT",), w3=("IWC1-NO-BYTE-SHORT",)),
    ),
    Case(
        "variant without its feature",
        schema_edit(set_type("deep/l1/l2/l3/l4/l5", "variant")),
        exp(v3=("DELTA-VARIANT-FEATURE",), w1=("ICV2-TYPE-ALLOWLIST",), w3=("DELTA-VARIANT-FEATURE",)),
    ),
    Case(
        "variant with the variantType feature",
        state_only(
            lambda s: with_features(
                with_schema(s, set_type("my col", "variant")), ["variantType"], ["variantType"]
            )
        ),
        exp(w1=("ICV2-TYPE-ALLOWLIST", "IWC1-FEATURE-ALLOWLIST")),
    ),
    Case(
        "void column",
        schema_edit(set_type("ünï", "void")),
        exp(v3=("ICV3-TYPE-ALLOWLIST",), w1=("ICV2-TYPE-ALLOWLIST",), w3=("ICV3-TYPE-ALLOWLIST",)),
    ),
    Case(
        "interval type",
        schema_edit(set_type("arr/element/d/element/e", "interval day to second")),
        exp(v3=("ICV3-TYPE-ALLOWLIST",), w1=("ICV2-TYPE-ALLOWLIST",), w3=("ICV3-TYPE-ALLOWLIST",)),
    ),
    Case(
        "geometry type", schema_edit(set_type("ünï", "geometry(OGC:CRS84)")), exp(w1=("ICV2-TYPE-ALLOWLIST",))
    ),
    Case(
        "timestamp_ntz without its feature",
        schema_edit(set_type("deep/l1/l2/l3/l4/l5", "timestamp_ntz")),
        exp(("DELTA-TIMESTAMP-NTZ-FEATURE",)),
    ),
    Case(
        "timestamp_ntz with its feature",
        state_only(
            lambda s: with_features(
                with_schema(s, set_type("ünï", "timestamp_ntz")), ["timestampNtz"], ["timestampNtz"]
            )
        ),
        exp(),
    ),
    Case("type change integer -> long", state_only(_type_change("p", "integer", "long")), exp()),
    Case(
        "type change decimal precision increase",
        state_only(_type_change("id", "decimal(10,2)", "decimal(12,2)")),
        exp(),
    ),
    Case(
        "type change decimal scale increase",
        state_only(_type_change("id", "decimal(10,2)", "decimal(12,4)")),
        exp(v3=("ICV3-TYPE-WIDENING",), w1=("ICV2-TYPE-WIDENING",), w3=("ICV3-TYPE-WIDENING",)),
    ),
    Case(
        "type change integer -> double on an array element",
        state_only(_type_change("mm", "integer", "double", "value.key")),
        exp(v3=("ICV3-TYPE-WIDENING",), w1=("ICV2-TYPE-WIDENING",), w3=("ICV3-TYPE-WIDENING",)),
    ),
    Case(
        "type change date -> timestamp_ntz",
        state_only(_type_change("ünï", "date", "timestamp_ntz")),
        exp(v3=("ICV3-TYPE-WIDENING",), w1=("ICV2-TYPE-WIDENING",), w3=("ICV3-TYPE-WIDENING",)),
    ),
    Case(
        "unsupported type change without the typeWidening feature",
        schema_edit(
            set_meta("ünï", **{"delta.typeChanges": [{"fromType": "date", "toType": "timestamp_ntz"}]})
        ),
        exp(),
    ),
    Case(
        "literal column default without its feature",
        schema_edit(set_meta("id", CURRENT_DEFAULT="42")),
        exp(
            v3=("DELTA-COLUMN-DEFAULTS-FEATURE",),
            w1=("IWC1-NO-DEFAULT-COLUMNS",),
            w3=("DELTA-COLUMN-DEFAULTS-FEATURE",),
        ),
    ),
    Case(
        "literal column default with allowColumnDefaults",
        state_only(
            lambda s: with_features(
                with_schema(s, set_meta("my col", CURRENT_DEFAULT="'n/a'")), ["allowColumnDefaults"]
            )
        ),
        exp(w1=("IWC1-NO-DEFAULT-COLUMNS", "IWC1-FEATURE-ALLOWLIST")),
    ),
    Case(
        "expression column default",
        state_only(
            lambda s: with_features(
                with_schema(s, set_meta("deep/l1/l2/l3/l4/l5", CURRENT_DEFAULT="current_timestamp()")),
                ["allowColumnDefaults"],
            )
        ),
        exp(
            v3=("ICV3-LITERAL-DEFAULTS",),
            w1=("IWC1-NO-DEFAULT-COLUMNS", "IWC1-FEATURE-ALLOWLIST"),
            w3=("ICV3-LITERAL-DEFAULTS",),
        ),
    ),
    Case(
        "column invariant",
        schema_edit(
            set_meta("arr/element/c", **{"delta.invariants": '{"expression":{"expression":"c > 0"}}'})
        ),
        exp(w1=("IWC1-NO-INVARIANTS",), w3=("IWC1-NO-INVARIANTS",)),
    ),
    Case(
        "identity column",
        schema_edit(set_meta("id", **{"delta.identity.start": 1, "delta.identity.step": 1})),
        exp(w1=("IWC1-NO-IDENTITY-COLUMNS",), w3=("IWC1-NO-IDENTITY-COLUMNS",)),
    ),
    Case(
        "generated column",
        schema_edit(set_meta("p", **{"delta.generationExpression": "id % 10"})),
        exp(w1=("IWC1-NO-GENERATED-COLUMNS",), w3=("IWC1-NO-GENERATED-COLUMNS",)),
    ),
    Case(
        "collated string",
        schema_edit(set_meta("my col", __COLLATIONS={"my col": "ICU.UNICODE_CI"})),
        exp(v3=("DELTA-SPARK-COLLATION",), w1=("IWC1-NO-COLLATIONS",), w3=("IWC1-NO-COLLATIONS",)),
    ),
    Case(
        "decimal partition column (delta-spark refuses every decimal)",
        schema_edit(set_type("p", "decimal(12,5)")),
        exp(("DELTA-SPARK-DECIMAL-PARTITION",)),
    ),
    Case(
        "decimal column that is not a partition column", schema_edit(set_type("id", "decimal(38,18)")), exp()
    ),
    # --- replace: new state against the previous one ----------------------------------------------------
    Case("append with the same state", replaced(lambda s: s), exp()),
    Case(
        "partition column renamed",
        replaced(lambda s: replace(s, metadata=replace(s.metadata, partition_columns=("id",)))),
        exp(
            v3=("ICV3-NO-PARTITION-RENAME",),
            w1=("ICV2-NO-PARTITION-RENAME",),
            w3=("ICV3-NO-PARTITION-RENAME",),
        ),
    ),
    Case(
        "partition column renamed by case only (delta-spark compares names exactly)",
        replaced(lambda s: replace(s, metadata=replace(s.metadata, partition_columns=("P",)))),
        exp(
            v3=("ICV3-NO-PARTITION-RENAME",),
            w1=("ICV2-NO-PARTITION-RENAME",),
            w3=("ICV3-NO-PARTITION-RENAME",),
        ),
    ),
    Case(
        "partitioning dropped",
        replaced(lambda s: replace(s, metadata=replace(s.metadata, partition_columns=()))),
        exp(
            v3=("ICV3-NO-PARTITION-RENAME",),
            w1=("ICV2-NO-PARTITION-RENAME",),
            w3=("ICV3-NO-PARTITION-RENAME",),
        ),
    ),
    Case(
        "partition column type widened (same name)",
        replaced(lambda s: with_schema(s, set_type("p", "long"))),
        exp(),
    ),
    Case(
        "struct map key changed",
        replaced(_add_key_field),
        exp(w1=("IWC1-MAP-KEY-IMMUTABLE",), w3=("IWC1-MAP-KEY-IMMUTABLE",)),
    ),
    Case(
        "struct map key field renamed",
        replaced(lambda s: with_schema(s, lambda sc: find(sc, "m/key/k1").update(name="k1_renamed"))),
        exp(w1=("IWC1-MAP-KEY-IMMUTABLE",), w3=("IWC1-MAP-KEY-IMMUTABLE",)),
    ),
    Case("map value changed", replaced(_add_value_field), exp()),
    Case(
        "change data feed on, a column renamed",
        replaced(lambda s: with_schema(_cdf(s), lambda sc: find(sc, "id").update(name="id2"))),
        exp(("DELTA-SPARK-CDF-COLUMN-MAPPING",), w1=_CDF_W, w3=_CDF_W),
    ),
    Case(
        "change data feed on, a nested field dropped",
        replaced(lambda s: with_schema(_cdf(s), lambda sc: find(sc, "a.b")["type"]["fields"].pop())),
        exp(("DELTA-SPARK-CDF-COLUMN-MAPPING",), w1=_CDF_W, w3=_CDF_W),
    ),
    Case("change data feed on, the same columns", replaced(_cdf), exp(w1=_CDF_W, w3=_CDF_W)),
    Case("existing column renumbered", replaced(_renumber), exp(("CM-PHYSICAL-NAMES-STABLE",))),
    Case(
        "column mapping mode changed on an existing table",
        replaced(lambda s: with_config(s, {"delta.columnMapping.mode": "name"})),
        exp(("CM-MODE-CHANGE",), w1=("IWC1-ID-MODE",), w3=("IWC1-ID-MODE",)),
    ),
    # --- data files ---------------------------------------------------------------------------------------
    Case("a good data file", files(lambda s: (good_file(s.metadata),)), exp()),
    Case(
        "file without numRecords",
        files(lambda s: (good_file(s.metadata, num_records=None, has_stats=False),)),
        exp(v3=("ICV3-NUM-RECORDS",), w1=("ICV2-NUM-RECORDS",), w3=("ICV3-NUM-RECORDS",)),
    ),
    Case(
        "file without row ids in a table with row tracking",
        files(lambda s: (good_file(s.metadata, base_row_id=None, default_row_commit_version=None),)),
        exp(v3=("ICV3-ROW-IDS-ASSIGNED",), w3=("ICV3-ROW-IDS-ASSIGNED",)),
    ),
    Case(
        "footer not read: only the AddFile is checked",
        files(lambda s: (good_file(s.metadata, footer=None),)),
        exp(),
    ),
    Case(
        "partition column not materialized",
        files(
            lambda s: (
                good_file(
                    s.metadata,
                    footer=drop_from_footer(good_file(s.metadata).footer, physical_of(s.metadata, "p")),
                ),
            )
        ),
        exp(
            v3=("ICV3-PARTITION-MATERIALIZED",),
            w1=("ICV2-PARTITION-MATERIALIZED",),
            w3=("ICV3-PARTITION-MATERIALIZED",),
        ),
    ),
    Case(
        "partition column named with another case is still found in the file",
        lambda s: Outcome(
            replace(s, metadata=replace(s.metadata, partition_columns=("P",))), files=(good_file(s.metadata),)
        ),
        exp(),
    ),
    Case(
        "INT96 timestamp five levels deep",
        files(
            lambda s: (
                good_file(
                    s.metadata,
                    footer=edit_footer(
                        good_file(s.metadata).footer,
                        [
                            physical_of(s.metadata, "deep"),
                            physical_of(s.metadata, "deep/l1"),
                            physical_of(s.metadata, "deep/l1/l2"),
                            physical_of(s.metadata, "deep/l1/l2/l3"),
                            physical_of(s.metadata, "deep/l1/l2/l3/l4"),
                            physical_of(s.metadata, "deep/l1/l2/l3/l4/l5"),
                        ],
                        lambda n: replace(n, physical_type="INT96", logical_type=None),
                    ),
                ),
            )
        ),
        exp(v3=("ICV3-TIMESTAMP-INT64",), w1=("ICV2-TIMESTAMP-INT64",), w3=("ICV3-TIMESTAMP-INT64",)),
    ),
    Case(
        "wrong field id on a map value element",
        files(
            lambda s: (
                good_file(
                    s.metadata,
                    footer=edit_footer(
                        good_file(s.metadata).footer,
                        [physical_of(s.metadata, "m"), "key_value", "value", "list", "element"],
                        lambda n: replace(n, field_id=999),
                    ),
                ),
            )
        ),
        exp(v3=("ICV3-PARQUET-FIELD-IDS",), w1=("ICV2-PARQUET-FIELD-IDS",), w3=("ICV3-PARQUET-FIELD-IDS",)),
    ),
    Case(
        "a good file, then one whose footer differs only by a field id: each footer is checked",
        files(
            lambda s: (
                good_file(s.metadata),
                good_file(
                    s.metadata,
                    footer=edit_footer(
                        good_file(s.metadata).footer,
                        [physical_of(s.metadata, "id")],
                        lambda n: replace(n, field_id=999),
                    ),
                ),
            )
        ),
        exp(v3=("ICV3-PARQUET-FIELD-IDS",), w1=("ICV2-PARQUET-FIELD-IDS",), w3=("ICV3-PARQUET-FIELD-IDS",)),
    ),
    Case(
        "field id missing on a top-level column",
        files(
            lambda s: (
                good_file(
                    s.metadata,
                    footer=edit_footer(
                        good_file(s.metadata).footer,
                        [physical_of(s.metadata, "id")],
                        lambda n: replace(n, field_id=None),
                    ),
                ),
            )
        ),
        exp(v3=("ICV3-PARQUET-FIELD-IDS",), w1=("ICV2-PARQUET-FIELD-IDS",), w3=("ICV3-PARQUET-FIELD-IDS",)),
    ),
    Case(
        "column absent from a file",
        files(
            lambda s: (
                good_file(
                    s.metadata,
                    footer=drop_from_footer(good_file(s.metadata).footer, physical_of(s.metadata, "arr")),
                ),
            )
        ),
        exp(),
    ),
    Case(
        "deletion vector on a file",
        files(lambda s: (good_file(s.metadata, has_deletion_vector=True),)),
        exp(w1=("ICV2-NO-DELETION-VECTOR-FILES",)),
    ),
    Case(
        "materialized row id with the wrong field id",
        lambda s: Outcome(_with_row_tracking_names(s), files=_row_tracking_file(7)(s)),
        exp(
            v3=("ICV3-ROW-ID-FIELD-ID", "ICV3-ROW-COMMIT-VERSION-FIELD-ID"),
            w3=("ICV3-ROW-ID-FIELD-ID", "ICV3-ROW-COMMIT-VERSION-FIELD-ID"),
        ),
    ),
    Case(
        "materialized row id with the right field id",
        lambda s: Outcome(
            with_config(s, {"delta.rowTracking.materializedRowIdColumnName": "_row-col"}),
            files=_row_tracking_file(2147483540)(s),
        ),
        exp(),
    ),
    Case(
        "materialized row commit version with the right field id",
        lambda s: Outcome(
            with_config(s, {"delta.rowTracking.materializedRowCommitVersionColumnName": "_row-col"}),
            files=_row_tracking_file(2147483539)(s),
        ),
        exp(),
    ),
]

_BASELINES: dict[str, TableState] = {}


def baseline(profile: str) -> TableState:
    if profile not in _BASELINES:
        _BASELINES[profile] = compliant(profile)
    return _BASELINES[profile]


@pytest.mark.parametrize("profile", [V3, W1, W3])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case: Case, profile: str) -> None:
    out = case.build(baseline(profile))
    violations = validate(profile, out.state.metadata, out.state.protocol, out.previous, files=out.files)
    assert {v.rule for v in violations} == set(case.expect[profile]), [v.render() for v in violations]
    for v in violations:
        assert v.profile == profile
        assert v.clause and v.fix and v.message


def test_every_rule_fails_and_passes_somewhere_for_each_of_its_profiles() -> None:
    failing = {(p, r) for c in CASES for p, rules in c.expect.items() for r in rules}
    passing_everywhere = [c for c in CASES if not any(c.expect.values())]
    assert passing_everywhere, "the table needs cases every profile accepts"
    missing = [(p, r.id) for r in CATALOG for p in r.profiles if (p, r.id) not in failing]
    assert not missing, f"rules with no failing conformance case: {missing}"
    foreign = [(p, r) for p, r in failing if p not in PROFILES or r not in PROFILES[p].rule_ids]
    assert not foreign, f"cases expect rules that are not in the profile: {foreign}"


def test_baseline_schema_really_is_nested_and_oddly_named() -> None:
    s = json.loads(baseline(V3).metadata.schema_string)
    names = {f["name"] for f in s["fields"]}
    assert {"my col", "a.b", "ünï"} <= names
    assert find(s, "deep/l1/l2/l3/l4/l5")["type"] == "timestamp"
