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
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from icecompat_writer.errors import Violation
from icecompat_writer.rules.kinds import check_against_kinds, kind_of
from icecompat_writer.rules.model import Rule, Scope, Stage, unique_ids
from icecompat_writer.schema import MAX_FIELD_ID, MIN_FIELD_ID

__all__ = [
    "CATALOG", "DELTA_SPARK_RULES", "LAYER_RULES", "RULES", "RULES_BY_ID", "layer_rule", "layer_violation",
]  # fmt: skip

V3, W1, W3 = "v3", "writer-v1", "writer-v3"
ALL = (V3, W1, W3)
V3S = (V3, W3)
WRITERS = (W1, W3)

# Clause anchors (GitHub heading slugs) in the spec texts, ../shared/specs from the project root.
R3 = "delta-rfc-iceberg-compat-v3.md"
R3_SUPPORT = f"{R3}#iceberg-compatibility-v3"
R3_WRITER = f"{R3}#writer-requirements-for-icebergcompatv3"
P = "delta-PROTOCOL.md"
P2_SUPPORT = f"{P}#iceberg-compatibility-v2"
P2_WRITER = f"{P}#writer-requirements-for-icebergcompatv2"
P_CM = f"{P}#column-mapping"
P_CM_WRITER = f"{P}#writer-requirements-for-column-mapping"
P_CM_READER = f"{P}#reader-requirements-for-column-mapping"
P_FEATURES = f"{P}#supported-features"
P_UPGRADE = f"{P}#table-features-for-new-and-existing-tables"
P_ROW_TRACKING = f"{P}#row-tracking"
P_NTZ = f"{P}#timestamp-without-timezone-timestampntz"
P_VARIANT = f"{P}#variant-data-type"
P_DEFAULTS = f"{P}#default-columns"
P_TYPE_WIDENING = f"{P}#writer-requirements-for-type-widening"
P_STATS = f"{P}#per-file-statistics"
P_CHECKPOINTS = f"{P}#checkpoints"
W = "delta-rfc-iceberg-writer-compat-v1.md"
W_SUPPORT = f"{W}#icebergwritercompatv1"
W_WRITER = f"{W}#writer-requirements-for-icebergwritercompatv1"
W_DISALLOWED = f"{W}#disallowed-features"
W_ALLOWLIST = f"{W}#allowed-supported-list-of-features"
MPC = "delta-rfc-materialize-partition-columns.md#materialize-partition-columns"
ICEBERG_RESERVED = "iceberg-spec.md#reserved-field-ids"
OURS = "docs/profiles.md#one-profile-per-table"
# What delta-spark 4.4.0 refuses although the protocol allows it (docs/profiles.md lists why).
SPARK = "docs/profiles.md#what-delta-spark-refuses"
SPARK_ICV = "delta-spark 4.4.0 IcebergCompat.scala"
SPARK_TXN = "delta-spark 4.4.0 OptimisticTransaction.scala"
KERNEL_W3 = "Delta Kernel IcebergWriterCompatV3MetadataValidatorAndUpdater"

V2_TYPES = (
    "byte", "short", "integer", "long", "float", "double", "decimal", "string", "binary", "boolean",
    "timestamp", "timestamp_ntz", "date", "array", "map", "struct",
)  # fmt: skip
V3_TYPES = (*V2_TYPES, "variant", "geometry", "geography")

# Type changes Iceberg can apply as schema evolution (the IcebergCompatV3 list; also what "supported by
# Iceberg V2" means for IcebergCompatV2, byte and short being Iceberg ints).
ICEBERG_WIDENINGS = (
    ("byte", "short"), ("byte", "integer"), ("byte", "long"),
    ("short", "integer"), ("short", "long"),
    ("integer", "long"),
    ("float", "double"),
)  # fmt: skip
TYPE_WIDENING_FEATURES = ("typeWidening", "typeWidening-preview")

LEGACY_INACTIVE = ("invariants", "changeDataFeed", "checkConstraints", "identityColumns", "generatedColumns")
IWC1_ALLOWED = (
    "appendOnly", "columnMapping", "icebergWriterCompatV1", "icebergCompatV2", "domainMetadata",
    "vacuumProtocolCheck", "v2Checkpoint", "inCommitTimestamp", "clustering", "timestampNtz", "typeWidening",
)  # fmt: skip
# Delta Kernel's allow-list for IcebergWriterCompatV3 (its common writer-compat list plus the V3 additions).
IWC3_ALLOWED = (
    "appendOnly", "columnMapping", "domainMetadata", "vacuumProtocolCheck", "v2Checkpoint",
    "checkpointProtection", "inCommitTimestamp", "clustering", "timestampNtz", "typeWidening",
    "typeWidening-preview", "catalogManaged", "rowTracking", "icebergCompatV3", "icebergWriterCompatV3",
    "deletionVectors", "variantType", "variantType-preview", "variantShredding", "variantShredding-preview",
    "allowColumnDefaults", "geospatial", "icebergCompatV2", "icebergWriterCompatV1",
)  # fmt: skip
IDENTITY_KEYS = (
    "delta.identity.start", "delta.identity.step", "delta.identity.highWaterMark",
    "delta.identity.allowExplicitInsert",
)  # fmt: skip

UPGRADE = "run `icecompat upgrade` to rewrite the table's data files under the new mapping"


def _support_rules() -> list[Rule]:
    """Protocol versions and the features/properties that switch each compat feature on."""
    supports = (R3_SUPPORT, P2_SUPPORT, W_SUPPORT)
    return [
        Rule(
            "PROTO-WRITER-VERSION",
            ALL,
            "min_writer_version",
            checks="The table is on writer version 7 (table features).",
            message="the table must be on writer version 7 to list table features",
            fix="raise minWriterVersion to 7, listing the features the old version implied",
            clause=supports[0],
            also=(*supports[1:], P_UPGRADE),
            params={"version": 7},
            autofix="raises minWriterVersion to 7 and lists every feature the legacy version implied",
        ),
        Rule(
            "PROTO-READER-COLUMN-MAPPING",
            ALL,
            "required_reader_feature",
            checks="Readers support columnMapping: reader version 2, or 3 with it in readerFeatures.",
            message="readers must support {feature}",
            fix="use reader version 3 with {feature} in readerFeatures",
            clause=supports[0],
            also=supports[1:],
            params={"feature": "columnMapping"},
            autofix="adds columnMapping to readerFeatures at reader version 3 (reader version 2 is kept)",
        ),
        Rule(
            "PROTO-READER-FEATURES-IN-WRITER",
            ALL,
            "reader_features_in_writer",
            checks="Every feature listed in readerFeatures is listed in writerFeatures too.",
            message="reader feature {feature} is missing from writerFeatures",
            fix="add {feature} to writerFeatures",
            clause=P_FEATURES,
            autofix="adds the feature to writerFeatures",
        ),
        Rule(
            "CM-WRITER-FEATURE",
            ALL,
            "required_writer_features",
            checks="The columnMapping feature is a supported writer feature.",
            message="writer feature {feature} is required",
            fix="add {feature} to writerFeatures and readerFeatures",
            clause=P_CM_WRITER,
            also=(P_CM,),
            params={"features": ["columnMapping"]},
            autofix="adds columnMapping to writerFeatures and readerFeatures",
        ),
        Rule(
            "ICV3-FEATURE",
            V3S,
            "required_writer_features",
            checks="The icebergCompatV3 feature is in writerFeatures.",
            message="writer feature {feature} is required",
            fix="add {feature} to writerFeatures",
            clause=R3_SUPPORT,
            params={"features": ["icebergCompatV3"]},
            autofix="adds icebergCompatV3 to writerFeatures",
        ),
        Rule(
            "ICV3-ENABLED",
            V3S,
            "required_property",
            checks="Table property delta.enableIcebergCompatV3 is true.",
            message="table property `{key}` must be true to enable IcebergCompatV3",
            fix="set `{key}` to `{expected}`",
            clause=R3_SUPPORT,
            params={"key": "delta.enableIcebergCompatV3", "value": "true"},
            autofix="sets delta.enableIcebergCompatV3=true",
        ),
        Rule(
            "ICV2-FEATURE",
            (W1,),
            "required_writer_features",
            checks="The icebergCompatV2 feature is in writerFeatures.",
            message="writer feature {feature} is required",
            fix="add {feature} to writerFeatures",
            clause=P2_SUPPORT,
            also=(W_SUPPORT,),
            params={"features": ["icebergCompatV2"]},
            autofix="adds icebergCompatV2 to writerFeatures",
        ),
        Rule(
            "ICV2-ENABLED",
            (W1,),
            "required_property",
            checks="Table property delta.enableIcebergCompatV2 is true.",
            message="table property `{key}` must be true: IcebergWriterCompatV1 builds on IcebergCompatV2",
            fix="set `{key}` to `{expected}`",
            clause=P2_SUPPORT,
            also=(W_WRITER,),
            params={"key": "delta.enableIcebergCompatV2", "value": "true"},
            autofix="sets delta.enableIcebergCompatV2=true",
        ),
        Rule(
            "IWC1-FEATURE",
            (W1,),
            "required_writer_features",
            checks="The icebergWriterCompatV1 feature is in writerFeatures.",
            message="writer feature {feature} is required",
            fix="add {feature} to writerFeatures",
            clause=W_SUPPORT,
            params={"features": ["icebergWriterCompatV1"]},
            autofix="adds icebergWriterCompatV1 to writerFeatures",
        ),
        Rule(
            "IWC1-ENABLED",
            (W1,),
            "required_property",
            checks="Table property delta.enableIcebergWriterCompatV1 is true.",
            message="table property `{key}` must be true to enable IcebergWriterCompatV1",
            fix="set `{key}` to `{expected}`",
            clause=W_SUPPORT,
            params={"key": "delta.enableIcebergWriterCompatV1", "value": "true"},
            autofix="sets delta.enableIcebergWriterCompatV1=true",
        ),
        Rule(
            "IWC3-FEATURE",
            (W3,),
            "required_writer_features",
            checks="The icebergWriterCompatV3 feature is in writerFeatures (as Delta Kernel requires).",
            message="writer feature {feature} is required",
            fix="add {feature} to writerFeatures",
            clause=W_SUPPORT,
            reference=KERNEL_W3,
            params={"features": ["icebergWriterCompatV3"]},
            autofix="adds icebergWriterCompatV3 to writerFeatures",
        ),
        Rule(
            "IWC3-ENABLED",
            (W3,),
            "required_property",
            checks="Table property delta.enableIcebergWriterCompatV3 is true (as Delta Kernel requires).",
            message="table property `{key}` must be true to enable IcebergWriterCompatV3",
            fix="set `{key}` to `{expected}`",
            clause=W_SUPPORT,
            reference=KERNEL_W3,
            params={"key": "delta.enableIcebergWriterCompatV3", "value": "true"},
            autofix="sets delta.enableIcebergWriterCompatV3=true",
        ),
        Rule(
            "PROFILE-EXCLUSIVE",
            ALL,
            "profile_exclusive",
            checks="No property that declares another profile is true on the table.",
            message="`{key}` is true, so the table declares profile {declared}; profiles cannot be mixed",
            fix="write this table with profile {declared}, or create a new table for this profile",
            clause=OURS,
            params={
                "properties": {
                    "delta.enableIcebergCompatV3": V3,
                    "delta.enableIcebergWriterCompatV1": W1,
                    "delta.enableIcebergWriterCompatV3": W3,
                }
            },
        ),
        Rule(
            "ICV3-NO-OLDER-COMPAT",
            V3S,
            "forbidden_property_value",
            checks="IcebergCompatV1 and IcebergCompatV2 are not enabled (their properties are not true).",
            message="`{key}` is true but IcebergCompatV3 requires IcebergCompatV1 and V2 to be inactive",
            fix="remove `{key}` (set it to false); one IcebergCompat version at a time",
            clause=R3_WRITER,
            params={
                "keys": ["delta.enableIcebergCompatV1", "delta.enableIcebergCompatV2"],
                "values": ["true"],
            },
        ),
        Rule(
            "ICV2-NO-V1",
            (W1,),
            "forbidden_property_value",
            checks="IcebergCompatV1 is not enabled (delta.enableIcebergCompatV1 is not true).",
            message="`{key}` is true but IcebergCompatV2 requires IcebergCompatV1 to be inactive",
            fix="remove `{key}` (set it to false)",
            clause=P2_WRITER,
            params={"keys": ["delta.enableIcebergCompatV1"], "values": ["true"]},
        ),
        Rule(
            "ICV2-NO-DELETION-VECTORS",
            (W1,),
            "forbidden_property_value",
            checks="Deletion vectors are not enabled (delta.enableDeletionVectors is not true).",
            message="deletion vectors are enabled (`{key}` is true); IcebergCompatV2 forbids them",
            fix="set `{key}` to false",
            clause=P2_WRITER,
            params={"keys": ["delta.enableDeletionVectors"], "values": ["true"]},
        ),
    ]


def _column_mapping_rules() -> list[Rule]:
    return [
        Rule(
            "ICV3-COLUMN-MAPPING-MODE",
            (V3,),
            "column_mapping_mode",
            checks="Column mapping mode is name or id.",
            message="IcebergCompatV3 needs column mapping in name or id mode",
            fix="set `{key}` to id (new tables) or name",
            clause=R3_WRITER,
            params={"allowed": ["name", "id"]},
            autofix="sets id on new tables; name on an existing table that had no column mapping; "
            "keeps an existing name or id mode",
        ),
        Rule(
            "IWC1-ID-MODE",
            WRITERS,
            "column_mapping_mode",
            checks="Column mapping mode is id.",
            message="IcebergWriterCompat needs column mapping in id mode",
            fix="set `{key}` to id on a new table; an existing table in another mode needs: " + UPGRADE,
            clause=W_WRITER,
            also=(P2_WRITER,),
            reference=KERNEL_W3,
            params={"allowed": ["id"]},
            autofix="sets id on new tables (an existing table keeps its mode)",
        ),
        Rule(
            "CM-MODE-CHANGE",
            ALL,
            "column_mapping_mode_transition",
            checks="An existing table keeps its column mapping mode (a table without one may move to name).",
            message="column mapping mode cannot change from {observed} on a table that has data files "
            "written under the old mode",
            fix="keep the table's mode, or " + UPGRADE,
            clause=P_CM_READER,
            also=(P_CM_WRITER,),
            params={"from_none": ["name"]},
        ),
        Rule(
            "CM-IDS-ASSIGNED",
            ALL,
            "column_ids_assigned",
            checks="Every field, nested ones included, has a column mapping id and physical name.",
            message="the field has no complete column mapping metadata",
            fix="assign a `delta.columnMapping.id` and a `delta.columnMapping.physicalName`",
            clause=P_CM,
            also=(P_CM_WRITER,),
            autofix="assigns ids after the table's maxColumnId and physical names col-<id>, keeping the ids "
            "and physical names of columns that already exist",
        ),
        Rule(
            "CM-PHYSICAL-NAMES-STABLE",
            ALL,
            "physical_names_stable",
            checks="Every column that already existed keeps its physical name and id.",
            message="an existing column's physical name or id changed; its data files use the old one",
            fix="keep the column's previous column mapping metadata",
            clause=P_CM_WRITER,
            autofix="copies id and physical name from the previous schema (matched by name, exact first, "
            "then case-insensitive)",
        ),
        Rule(
            "CM-IDS-UNIQUE",
            ALL,
            "ids_unique",
            checks="Column ids and nested ids are unique across the schema and within "
            f"{MIN_FIELD_ID}..{MAX_FIELD_ID}.",
            message="id {id} is duplicated or out of range",
            fix="give the field a fresh id above `delta.columnMapping.maxColumnId` (" + UPGRADE + ")",
            clause=P_CM,
            also=(P2_WRITER, R3_WRITER, ICEBERG_RESERVED),
            params={"min_id": MIN_FIELD_ID, "max_id": MAX_FIELD_ID},
        ),
        Rule(
            "CM-PHYSICAL-NAMES-UNIQUE",
            ALL,
            "physical_names_unique",
            checks="No two fields of one struct share a physical name (every physical field path is unique).",
            message="the field has physical name `{physical}`, which its sibling `{other}` also has: "
            "their data in every file is one Parquet column, and Delta and Iceberg readers cannot tell "
            "which field it belongs to",
            fix="recreate the table (CREATE TABLE ... AS SELECT, or write it to a new location) so that "
            "each column gets its own physical name; the data files cannot be re-mapped in place",
            clause=P_CM,
            also=(P_CM_WRITER,),
            reference="delta-spark 4.4.0 DeltaColumnMapping.checkColumnIdAndPhysicalNameAssignments",
        ),
        Rule(
            "CM-MAX-COLUMN-ID",
            ALL,
            "max_column_id",
            checks="delta.columnMapping.maxColumnId is at least every column id and nested id.",
            message="`{key}` is below the largest id in the schema",
            fix="set `{key}` to the largest id in the schema",
            clause=P_CM_WRITER,
            autofix="sets delta.columnMapping.maxColumnId to the largest id (never lowers it)",
        ),
        Rule(
            "ICV3-NESTED-IDS",
            V3S,
            "nested_ids_assigned",
            checks="Every array element and map key/value has a 32-bit id on its nearest struct field.",
            message="no id for this element/key/value in `delta.columnMapping.nested.ids` of `{owner}`",
            fix="store an id under `{key}` in `delta.columnMapping.nested.ids` of `{owner}`",
            clause=R3_WRITER,
            also=(P2_WRITER,),
            autofix="assigns nested ids after the column ids, keyed by the physical path, as PROTOCOL.md "
            "shows",
        ),
        Rule(
            "ICV2-NESTED-IDS",
            (W1,),
            "nested_ids_assigned",
            checks="Every array element and map key/value has a 32-bit id on its nearest struct field.",
            message="no id for this element/key/value in `delta.columnMapping.nested.ids` of `{owner}`",
            fix="store an id under `{key}` in `delta.columnMapping.nested.ids` of `{owner}`",
            clause=P2_WRITER,
            autofix="assigns nested ids after the column ids, keyed by the physical path, as PROTOCOL.md "
            "shows",
        ),
        Rule(
            "IWC1-PHYSICAL-NAME",
            WRITERS,
            "physical_name_pattern",
            checks="Every field's physical name is exactly col-<its column id>.",
            message="the physical name must be exactly col-<column id>",
            fix="new columns get col-<id> automatically; an existing column with another physical name: "
            + UPGRADE,
            clause=W_WRITER,
            reference=KERNEL_W3,
            params={"template": "col-{id}"},
            autofix="names new columns col-<id> (existing columns are never renamed)",
        ),
    ]


# Rules about what Delta itself writes into the AddFile at commit time (row ids): files verified
# before their commit (compat_write, upgrade) cannot have it yet; the commit check and the checker
# hold it on the committed AddFiles.
ASSIGNED_AT_COMMIT = frozenset({"ICV3-ROW-IDS-ASSIGNED"})


def _row_tracking_rules() -> list[Rule]:
    return [
        Rule(
            "ICV3-ROW-TRACKING",
            V3S,
            "required_property",
            checks="Row tracking is enabled (delta.enableRowTracking is true).",
            message="IcebergCompatV3 requires row tracking: `{key}` must be true",
            fix="set `{key}` to `{expected}`",
            clause=R3_WRITER,
            also=(P_ROW_TRACKING,),
            params={"key": "delta.enableRowTracking", "value": "true"},
            autofix="sets delta.enableRowTracking=true",
        ),
        Rule(
            "ICV3-ROW-TRACKING-FEATURES",
            V3S,
            "required_writer_features",
            checks="The rowTracking and domainMetadata features are in writerFeatures.",
            message="row tracking needs writer feature {feature}",
            fix="add {feature} to writerFeatures",
            clause=R3_WRITER,
            also=(P_ROW_TRACKING,),
            params={"features": ["rowTracking", "domainMetadata"]},
            autofix="adds rowTracking and domainMetadata to writerFeatures",
        ),
        Rule(
            "ICV3-ROW-IDS-ASSIGNED",
            V3S,
            "row_ids_assigned",
            checks="With row tracking enabled, every live AddFile has baseRowId and defaultRowCommitVersion.",
            message="file {file} has {observed}, although row tracking is enabled",
            fix="rewrite the file so that it gets row ids (" + UPGRADE + ")",
            clause=P_ROW_TRACKING,
            also=(R3_WRITER,),
            params={"key": "delta.enableRowTracking"},
        ),
        Rule(
            "ICV3-ROW-TRACKING-NOT-SUSPENDED",
            V3S,
            "forbidden_property_value",
            checks="Row tracking is not suspended (delta.rowTrackingSuspended is not true).",
            message="`{key}` is true, so row ids are not assigned and row tracking is not really enabled",
            fix="remove `{key}`",
            clause=P_ROW_TRACKING,
            also=(R3_WRITER,),
            params={"keys": ["delta.rowTrackingSuspended"], "values": ["true"]},
        ),
        Rule(
            "IWC1-NO-ROW-TRACKING",
            (W1,),
            "forbidden_property_value",
            checks="Row tracking may be supported but is not active (delta.enableRowTracking is not true).",
            message="row tracking is active or being turned on ({observed}); IcebergWriterCompatV1 allows it "
            "only inactive",
            fix="set `{key}` to false or leave it unset; a table that needs row tracking moves to a profile "
            "with it (v3, writer-v3) with `icecompat upgrade`",
            clause=W_DISALLOWED,
            also=(W_ALLOWLIST,),
            params={"keys": ["delta.enableRowTracking"], "values": ["true"]},
        ),
        Rule(
            "ICV3-ROW-ID-FIELD-ID",
            V3S,
            "row_tracking_field_id",
            checks="The materialized row id column, where a data file has it, carries field id 2147483540.",
            message="the materialized row id column (named by `{key}`) in file {file} has the wrong field id",
            fix="rewrite the file with field id {expected} on that column (" + UPGRADE + ")",
            clause=R3_WRITER,
            params={"property": "delta.rowTracking.materializedRowIdColumnName", "field_id": 2147483540},
        ),
        Rule(
            "ICV3-ROW-COMMIT-VERSION-FIELD-ID",
            V3S,
            "row_tracking_field_id",
            checks="The materialized row commit version column, where present, carries field id 2147483539.",
            message="the materialized row commit version column (named by `{key}`) in file {file} has the "
            "wrong field id",
            fix="rewrite the file with field id {expected} on that column (" + UPGRADE + ")",
            clause=R3_WRITER,
            params={
                "property": "delta.rowTracking.materializedRowCommitVersionColumnName",
                "field_id": 2147483539,
            },
        ),
    ]


def _type_rules() -> list[Rule]:
    return [
        Rule(
            "ICV3-TYPE-ALLOWLIST",
            V3S,
            "type_allowlist",
            checks="Every type in the schema is on the IcebergCompatV3 allow-list.",
            message="type {type} is not allowed by IcebergCompatV3",
            fix="cast the column to an allowed type before writing",
            clause=R3_WRITER,
            params={"allowed": list(V3_TYPES)},
        ),
        Rule(
            "ICV2-TYPE-ALLOWLIST",
            (W1,),
            "type_allowlist",
            checks="Every type in the schema is on the IcebergCompatV2 allow-list (so no variant).",
            message="type {type} is not allowed by IcebergCompatV2",
            fix="cast the column to an allowed type before writing",
            clause=P2_WRITER,
            also=(W_WRITER, W_DISALLOWED),
            params={"allowed": list(V2_TYPES)},
        ),
        Rule(
            "IWC1-NO-BYTE-SHORT",
            WRITERS,
            "forbidden_types",
            checks="No column, element, key or value has type byte or short.",
            message="type {type} is not allowed by IcebergWriterCompat",
            fix="cast the column to integer before writing",
            clause=W_WRITER,
            reference=KERNEL_W3,
            params={"types": ["byte", "short"]},
        ),
        Rule(
            "ICV3-TYPE-WIDENING",
            V3S,
            "type_widening_allowlist",
            checks="When type widening is supported, every recorded type change is one Iceberg can apply.",
            message="type change {from_type} -> {to_type} recorded in delta.typeChanges is not allowed by "
            "IcebergCompatV3",
            fix="rewrite the affected data files and drop the type change history (" + UPGRADE + ")",
            clause=R3_WRITER,
            also=(P_TYPE_WIDENING,),
            params={
                "when_features": list(TYPE_WIDENING_FEATURES),
                "changes": [list(c) for c in ICEBERG_WIDENINGS],
                "decimal_precision_increase": True,
            },
        ),
        Rule(
            "ICV2-TYPE-WIDENING",
            (W1,),
            "type_widening_allowlist",
            checks="When type widening is supported, every recorded type change is supported by Iceberg V2.",
            message="type change {from_type} -> {to_type} recorded in delta.typeChanges is not supported "
            "by Iceberg V2",
            fix="rewrite the affected data files and drop the type change history (" + UPGRADE + ")",
            clause=P2_WRITER,
            also=(P_TYPE_WIDENING,),
            params={
                "when_features": list(TYPE_WIDENING_FEATURES),
                "changes": [list(c) for c in ICEBERG_WIDENINGS],
                "decimal_precision_increase": True,
            },
        ),
        Rule(
            "ICV3-LITERAL-DEFAULTS",
            V3S,
            "literal_write_defaults",
            checks="Every column write default (CURRENT_DEFAULT) is a literal value of the column's type.",
            message="the default of this {type} column is not a literal value of its type",
            fix="drop the default, or write it as {expected}",
            clause=R3_WRITER,
            params={"key": "CURRENT_DEFAULT"},
        ),
        Rule(
            "DELTA-TIMESTAMP-NTZ-FEATURE",
            ALL,
            "type_requires_features",
            checks="A schema with timestamp_ntz supports the timestampNtz feature.",
            message="type {type} needs table feature {feature}",
            fix="add {feature} to readerFeatures and writerFeatures",
            clause=P_NTZ,
            params={"types": ["timestamp_ntz"], "features": [["timestampNtz"]]},
            autofix="adds timestampNtz to readerFeatures and writerFeatures",
        ),
        Rule(
            "DELTA-VARIANT-FEATURE",
            V3S,
            "type_requires_features",
            checks="A schema with variant supports the variantType (or variantType-preview) feature.",
            message="type {type} needs table feature {feature}",
            fix="add {feature} to readerFeatures and writerFeatures",
            clause=P_VARIANT,
            params={"types": ["variant"], "features": [["variantType", "variantType-preview"]]},
            autofix="adds variantType to readerFeatures and writerFeatures",
        ),
        Rule(
            "DELTA-COLUMN-DEFAULTS-FEATURE",
            V3S,
            "column_metadata_requires_features",
            checks="A schema with column defaults supports the allowColumnDefaults feature.",
            message="column defaults (`{key}`) need table feature {feature}",
            fix="add {feature} to writerFeatures",
            clause=P_DEFAULTS,
            params={"keys": ["CURRENT_DEFAULT"], "features": [["allowColumnDefaults"]]},
            autofix="adds allowColumnDefaults to writerFeatures",
        ),
    ]


def _writer_compat_feature_rules() -> list[Rule]:
    """IcebergWriterCompat's feature allow-lists and the "supported but not active" checks."""

    def legacy(rid: str, kind: str, params: dict[str, object], checks: str, message: str, fix: str,
               profiles: tuple[str, ...] = WRITERS) -> Rule:  # fmt: skip
        return Rule(
            rid,
            profiles,
            kind,
            checks=checks,
            message=message,
            fix=fix,
            clause=W_DISALLOWED,
            also=(W_ALLOWLIST,),
            reference=KERNEL_W3 if W3 in profiles else "",
            params=params,
        )

    return [
        Rule(
            "IWC1-FEATURE-ALLOWLIST",
            (W1,),
            "feature_allowlist",
            checks="Every supported table feature is on the IcebergWriterCompatV1 allow-list.",
            message="table feature {feature} is not allowed by IcebergWriterCompatV1",
            fix="use a table without {feature} (features cannot be removed in place)",
            clause=W_ALLOWLIST,
            also=(W_DISALLOWED,),
            params={"allowed": list(IWC1_ALLOWED), "inactive_allowed": [*LEGACY_INACTIVE, "rowTracking"]},
        ),
        Rule(
            "IWC3-FEATURE-ALLOWLIST",
            (W3,),
            "feature_allowlist",
            checks="Every supported table feature is on Delta Kernel's IcebergWriterCompatV3 allow-list.",
            message="table feature {feature} is not allowed by IcebergWriterCompatV3",
            fix="use a table without {feature} (features cannot be removed in place)",
            clause=W_ALLOWLIST,
            also=(W_DISALLOWED,),
            reference=KERNEL_W3,
            params={"allowed": list(IWC3_ALLOWED), "inactive_allowed": list(LEGACY_INACTIVE)},
        ),
        legacy(
            "IWC1-NO-INVARIANTS",
            "forbidden_column_metadata_key",
            {"keys": ["delta.invariants"]},
            "No column has delta.invariants in its metadata (invariants inactive).",
            "the column has an invariant; column invariants must not be active",
            "drop the invariant from the column",
        ),
        legacy(
            "IWC1-NO-CHANGE-DATA-FEED",
            "forbidden_property_value",
            {"keys": ["delta.enableChangeDataFeed"], "values": ["true"]},
            "Change data feed is not enabled (delta.enableChangeDataFeed is not true).",
            "change data feed is active (`{key}` is true)",
            "set `{key}` to false",
        ),
        legacy(
            "IWC1-NO-CHECK-CONSTRAINTS",
            "forbidden_property_prefix",
            {"prefix": "delta.constraints."},
            "No table property key starts with delta.constraints. (CHECK constraints inactive).",
            "CHECK constraint `{key}` is defined; CHECK constraints must not be active",
            "drop the constraint (ALTER TABLE ... DROP CONSTRAINT)",
        ),
        legacy(
            "IWC1-NO-IDENTITY-COLUMNS",
            "forbidden_column_metadata_key",
            {"keys": list(IDENTITY_KEYS)},
            "No column has delta.identity.* metadata (identity columns inactive).",
            "the column is an identity column (`{key}`); identity columns must not be active",
            "use a plain column instead of an identity column",
        ),
        legacy(
            "IWC1-NO-GENERATED-COLUMNS",
            "forbidden_column_metadata_key",
            {"keys": ["delta.generationExpression"]},
            "No column has delta.generationExpression in its metadata (generated columns inactive).",
            "the column is a generated column; generated columns must not be active",
            "compute the value before writing and drop the generation expression",
        ),
        legacy(
            "IWC1-NO-DEFAULT-COLUMNS",
            "forbidden_column_metadata_key",
            {"keys": ["CURRENT_DEFAULT"]},
            "No column has a default value (CURRENT_DEFAULT): default columns cannot be supported.",
            "the column has a default value; IcebergWriterCompatV1 does not allow default columns",
            "drop the column default",
            profiles=(W1,),
        ),
        legacy(
            "IWC1-NO-COLLATIONS",
            "forbidden_column_metadata_key",
            {"keys": ["__COLLATIONS"]},
            "No column has a collation (__COLLATIONS metadata): collations cannot be supported.",
            "the column has a collation; IcebergWriterCompat does not allow collations",
            "use the default (UTF8_BINARY) collation",
        ),
    ]


def _delta_spark_rules() -> list[Rule]:
    """What delta-spark 4.4.0 refuses on tables the profiles otherwise allow: the user hears it from the
    planner, before any file is written, instead of as an engine error after the write."""
    return [
        Rule(
            "DELTA-SPARK-DECIMAL-PARTITION",
            ALL,
            "forbidden_partition_types",
            checks="No partition column is a decimal (delta-spark's IcebergCompat partition type check "
            "refuses every decimal).",
            message="partition column of type {type}: delta-spark 4.4 refuses decimal partition columns "
            "while IcebergCompat is enabled (UNSUPPORTED_PARTITION_DATA_TYPE), although the protocol and "
            "Iceberg allow them",
            fix="partition by another column (e.g. a string or long derived from the decimal), or keep "
            "this table without IcebergCompat",
            clause=SPARK,
            also=(R3_WRITER, P2_WRITER),
            reference=SPARK_ICV + " CheckPartitionDataTypeInV2AllowList",
            params={"types": ["decimal"]},
        ),
        Rule(
            "DELTA-SPARK-COLLATION",
            (V3,),
            "forbidden_column_metadata_key",
            checks="No column has a non-default collation (__COLLATIONS metadata).",
            message="the column has a collation (`{key}`): delta-spark 4.4 refuses every commit that "
            "changes the metadata of a table with a collated string (DELTA_UNSUPPORTED_DATA_TYPES) and "
            "IcebergCompat's type allow-list has only the default string",
            fix="use the default collation (cast the column with `COLLATE UTF8_BINARY` and overwrite the "
            "table with overwriteSchema=true), or keep this table without IcebergCompatV3",
            clause=SPARK,
            also=(R3_WRITER,),
            reference=SPARK_TXN + " findUnsupportedDataTypes; " + SPARK_ICV + " CheckTypeInV3AllowList",
            params={"keys": ["__COLLATIONS"]},
        ),
        Rule(
            "DELTA-SPARK-CDF-COLUMN-MAPPING",
            ALL,
            "cdf_column_mapping_change",
            checks="With change data feed enabled, a commit does not turn column mapping on or drop or "
            "rename a physical column (delta-spark refuses such a commit when it adds or removes files).",
            message="change data feed is enabled (`{key}`) and this commit changes column mapping "
            "({observed}); delta-spark 4.4 refuses it together with data files "
            "(DELTA_BLOCK_COLUMN_MAPPING_AND_CDC_OPERATION)",
            fix="turn column mapping on in a commit of its own first (ALTER TABLE ... SET TBLPROPERTIES "
            "('delta.columnMapping.mode'='name')), then write or upgrade; or set `{key}` to false for "
            "the rewrite and back to true after it",
            clause=SPARK,
            also=(P_CM_WRITER,),
            reference=SPARK_TXN + " blockColumnMappingAndCdcOperation",
            params={"key": "delta.enableChangeDataFeed"},
        ),
    ]


def _replace_rules() -> list[Rule]:
    return [
        Rule(
            "ICV3-NO-PARTITION-RENAME",
            V3S,
            "partition_spec_unchanged",
            checks="A partitioned table is not replaced with differently named partition columns.",
            message="the table was partitioned by {expected}; replacing it with partitioning {observed} is "
            "blocked (a type-only change of the same columns is allowed)",
            fix="keep the partition columns {expected}, or drop the table and create a new one",
            clause=R3_WRITER,
        ),
        Rule(
            "ICV2-NO-PARTITION-RENAME",
            (W1,),
            "partition_spec_unchanged",
            checks="A partitioned table is not replaced with differently named partition columns.",
            message="the table was partitioned by {expected}; replacing it with partitioning {observed} is "
            "blocked (a type-only change of the same columns is allowed)",
            fix="keep the partition columns {expected}, or drop the table and create a new one",
            clause=P2_WRITER,
        ),
        Rule(
            "IWC1-MAP-KEY-IMMUTABLE",
            WRITERS,
            "map_key_struct_immutable",
            checks="The schema of a struct used as a map key does not change.",
            message="the struct used as this map key changed; Iceberg forbids any change to a map key",
            fix="keep the map key's struct exactly as it was (changes to the map value are allowed)",
            clause=W_WRITER,
        ),
    ]


def _file_rules() -> list[Rule]:
    def per_spec(suffix: str, kind: str, checks: str, message: str, fix: str, v3_clauses: tuple[str, ...],
                 v2_clauses: tuple[str, ...]) -> list[Rule]:  # fmt: skip
        return [
            Rule(f"ICV3-{suffix}", V3S, kind, checks=checks, message=message, fix=fix,
                 clause=v3_clauses[0], also=v3_clauses[1:]),
            Rule(f"ICV2-{suffix}", (W1,), kind, checks=checks, message=message, fix=fix,
                 clause=v2_clauses[0], also=v2_clauses[1:]),
        ]  # fmt: skip

    return [
        *per_spec(
            "NUM-RECORDS",
            "num_records_present",
            "Every AddFile has the numRecords statistic in its stats.",
            "file {file} has no numRecords statistic",
            "write with statistics collection on (delta-spark does so by default)",
            (R3_WRITER, P_STATS),
            (P2_WRITER, P_STATS),
        ),
        Rule(
            "DELTA-CHECKPOINT-STATS",
            ALL,
            "checkpoint_keeps_stats",
            checks="Checkpoints keep the files' statistics: delta.checkpoint.writeStatsAsJson and "
            "delta.checkpoint.writeStatsAsStruct are not both false (delta-spark writes both when unset).",
            message="checkpoints of this table keep no statistics (`{key}` and "
            "delta.checkpoint.writeStatsAsStruct are false): once its commits are cleaned up, no "
            "file has numRecords in the log",
            fix="set `{key}` to true",
            clause=P_CHECKPOINTS,
            also=(P_STATS, R3_WRITER),
            params={
                "json_key": "delta.checkpoint.writeStatsAsJson",
                "struct_key": "delta.checkpoint.writeStatsAsStruct",
            },
            autofix="sets delta.checkpoint.writeStatsAsJson=true",
        ),
        *per_spec(
            "PARTITION-MATERIALIZED",
            "partition_columns_materialized",
            "Every data file contains its partition columns (partition values are materialized).",
            "partition column missing from data file {file}",
            "rewrite the file with the partition columns materialized (" + UPGRADE + ")",
            (R3_WRITER, MPC),
            (P2_WRITER, MPC),
        ),
        *per_spec(
            "TIMESTAMP-INT64",
            "timestamps_int64",
            "Timestamp columns in data files are stored as INT64, never INT96.",
            "timestamp stored as {observed} in file {file}",
            "write with spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS and rewrite the file ("
            + UPGRADE
            + ")",
            (R3_WRITER,),
            (P2_WRITER,),
        ),
        *per_spec(
            "PARQUET-FIELD-IDS",
            "parquet_field_ids",
            "Every column, nested field, element, key and value in a data file carries its field id.",
            "the Parquet field id in file {file} does not match the column mapping metadata",
            "rewrite the file with the table's field ids (" + UPGRADE + ")",
            (R3_WRITER, P2_WRITER, P_CM_WRITER),
            (P2_WRITER, P_CM_WRITER),
        ),
        Rule(
            "ICV2-NO-DELETION-VECTOR-FILES",
            (W1,),
            "no_deletion_vector_files",
            checks="No AddFile carries a deletion vector.",
            message="file {file} has a deletion vector, which Iceberg V2 readers ignore",
            fix="turn deletion vectors off (delta.enableDeletionVectors=false) and purge them with "
            "REORG TABLE ... APPLY (PURGE); `icecompat upgrade` does not remove deletion vectors under "
            "writer-v1",
            clause=P2_WRITER,
        ),
    ]


# --- rules of the other layers ----------------------------------------------------------------------
# Enforced by the module each names (``layer``) rather than by a check kind; listed here so that every
# rule id a user can meet is in one catalog, with the data its layer reads as params.

_WRITE = "icecompat_writer.writing.compose"
# Delta's write rules judged on the log's JSON alone, shared by the writer, the guard and the checker
_WRITES = "icecompat_writer.rules.writes"
_WRITES_RULES = frozenset(
    {
        "DELTA-WRITE-CONFIG-PROPERTY",
        "DELTA-WRITE-PROPERTY-VALUE",
        "DELTA-WRITE-VARIANT-ICEBERG-V3",
    }
)
_WRITE_CLAUSE = f"{P}#schema-serialization-format"
_EMIT = "icecompat_writer.iceberg"
_EMIT_CLAUSE = "docs/iceberg.md#then-the-emitters-own-checks"
_UPGRADE_LAYER = "icecompat_writer.upgrading.plan"
_UPGRADE_CLAUSE = "docs/upgrade.md#refusals"

# Table-property namespaces delta-spark copies into the Hadoop configuration of every write.
CONFIG_NAMESPACES = (
    "fs.", "hadoop.", "parquet.", "spark.", "io.", "ipc.", "mapreduce.", "mapred.", "dfs.", "yarn.",
    "file.", "ha.", "net.", "rpc.", "security.", "s3.", "s3a.", "s3n.", "s3native.", "ftp.", "avro.",
)  # fmt: skip
# Delta properties delta-spark parses as booleans (lower-cased keys).
BOOLEAN_PROPERTIES = (
    "delta.appendonly", "delta.enablechangedatafeed", "delta.enabledeletionvectors",
    "delta.enablerowtracking", "delta.enabletypewidening", "delta.randomizefileprefixes",
    "delta.checkpoint.writestatsasjson", "delta.checkpoint.writestatsasstruct",
    "delta.enableexpiredlogcleanup", "delta.enableincommittimestamps",
)  # fmt: skip


def _write_rule(
    rule_id: str,
    checks: str,
    message: str,
    fix: str,
    variants: dict[str, tuple[str, str]] | None = None,
    **params: object,
) -> Rule:
    return Rule(
        rule_id, ALL, None, checks=checks, message=message, fix=fix, clause=_WRITE_CLAUSE,
        params=params, stages=(Stage.PLAN,), layer=_WRITES if rule_id in _WRITES_RULES else _WRITE,
        variants=variants or {},
    )  # fmt: skip


def _upgrade_too(rule_id: str, checks: str, message: str, fix: str) -> Rule:
    """A write rule the upgrade enforces as well, before it rewrites any file."""
    return replace(_write_rule(rule_id, checks, message, fix), stages=(Stage.PLAN, Stage.UPGRADE))


def _emit_rule(
    rule_id: str,
    checks: str,
    message: str,
    fix: str,
    clause: str = _EMIT_CLAUSE,
    variants: dict[str, tuple[str, str]] | None = None,
) -> Rule:
    return Rule(
        rule_id, ALL, None, checks=checks, message=message, fix=fix, clause=clause,
        stages=(Stage.ICEBERG,), layer=_EMIT, variants=variants or {},
    )  # fmt: skip


def _layer_rules() -> list[Rule]:
    """Delta's own write rules (profile ``delta`` on violations), the Iceberg emitter's checks
    (profile ``iceberg-emitter``) and the upgrade's refusals."""
    return [
        _write_rule(
            "DELTA-WRITE-DUPLICATE-COLUMN",
            "No two names in one struct are the same column to Delta (names compared ignoring case).",
            "Delta matches column names ignoring case, so this name is the same column as {other}",
            "rename or drop one of the two columns before writing",
        ),
        _write_rule(
            "DELTA-WRITE-EMPTY-STRUCT",
            "Every struct, at any depth, has at least one field.",
            "a struct without fields cannot be stored (Parquet has no empty group)",
            "drop the column, or give the struct at least one field",
        ),
        _write_rule(
            "DELTA-WRITE-UNKNOWN-COLUMN",
            "Without mergeSchema, the DataFrame has no column or nested field the table lacks.",
            "the DataFrame has a column the table does not have",
            "add .option('mergeSchema', 'true') to add it to the table, or drop it from the DataFrame",
        ),
        _write_rule(
            "DELTA-WRITE-TYPE-MISMATCH",
            "Every column the table already has keeps its exact type (the DataFrame writer does not cast).",
            "the DataFrame's type differs from the table's type for this column",
            "cast the column to the table's type before writing, or overwrite with overwriteSchema=true",
        ),
        _write_rule(
            "DELTA-WRITE-COLUMN-COUNT",
            "A write by position (insertInto) has exactly as many columns as the table.",
            "insertInto matches columns by position and the counts differ",
            "select exactly the table's columns, in the table's order",
        ),
        _write_rule(
            "DELTA-WRITE-PARTITION-COLUMN",
            "Every partition column is a top-level column of a type Delta can partition by "
            "(not a struct, array, map, void or variant).",
            "the partition column is not a top-level column of the written schema",
            "partition by one of: {columns}",
            variants={
                "type": (
                    "Delta cannot partition by a column of type {observed}",
                    "partition by a column of a primitive type (numbers, string, binary, boolean, date, "
                    "timestamp)",
                )
            },
            refused_types=["struct", "array", "map", "void", "variant"],
        ),
        _write_rule(
            "DELTA-WRITE-PARTITIONING-CHANGE",
            "A write that keeps the table's schema keeps its partitioning.",
            "the write asks for a different partitioning than the table has",
            "write with the table's partitioning, or overwrite with overwriteSchema=true (or replace the "
            "table) to change it",
        ),
        _write_rule(
            "DELTA-WRITE-CONFIG-PROPERTY",
            "No table property lies in a namespace delta-spark copies into the Hadoop configuration of "
            "every write.",
            "table property `{observed}` would reach the Hadoop configuration of every write to the table "
            "(delta-spark copies table properties there), where Hadoop, Parquet and Spark read settings "
            "and the names of classes to load",
            "drop the property (ALTER TABLE ... UNSET TBLPROPERTIES for a table that has it); set Hadoop "
            "and Parquet settings on the Spark session instead",
            namespaces=list(CONFIG_NAMESPACES),
        ),
        _write_rule(
            "DELTA-WRITE-PROPERTY-VALUE",
            "Every property value the write sets is one delta-spark can parse.",
            "table property `{key}` = {observed!r} {problem}: delta-spark would refuse it while writing",
            "set `{key}` to {expected}, or leave it out",
            boolean_properties=list(BOOLEAN_PROPERTIES),
            protocol_versions={
                "delta.minreaderversion": ["1", "2", "3"],
                "delta.minwriterversion": [str(v) for v in range(1, 8)],
            },
            feature_statuses=["supported", "enabled"],
        ),
        _upgrade_too(
            "DELTA-WRITE-VARIANT-ICEBERG-V3",
            "No variant column is written into a table with IcebergCompatV3 (delta-spark 4.4 fails on it).",
            "delta-spark 4.4 cannot write a variant column into a table with IcebergCompatV3 (it fails "
            "with INVALID_FIELD_NAME on the column's physical name), although the profile allows variant",
            "store the value as JSON text (to_json) in a string column, or write it to a table without "
            "IcebergCompatV3",
        ),
        Rule(
            "DELTA-WRITE-ALTER-V3-ROW-TRACKING",
            V3S,
            None,
            checks="An ALTER TABLE ... SET TBLPROPERTIES does not enable IcebergCompatV3 on a table whose "
            "row tracking is already enabled (delta-spark refuses that command).",
            message="this ALTER TABLE ... SET TBLPROPERTIES enables IcebergCompatV3 on a table whose row "
            "tracking is already enabled ({observed}): delta-spark 4.4 refuses that command "
            "(CheckNoRowTrackingBeforeUpgradeV3), although the protocol allows the state it asks for",
            fix="run `icecompat upgrade --profile {target}` on the table: it enables IcebergCompatV3 in a "
            "commit of its own (not a SET TBLPROPERTIES) and keeps the row ids the table has",
            clause=SPARK,
            also=(R3_WRITER,),
            reference=SPARK_ICV + " CheckNoRowTrackingBeforeUpgradeV3",
            stages=(Stage.COMMIT,),
            layer=_WRITES,
        ),
        Rule(
            "DELTA-WRITE-SHALLOW-CLONE",
            ALL,
            None,
            checks="A commit adds no data file outside the table's own directory (a SHALLOW CLONE).",
            message="the commit references {count} data file(s) outside the table, e.g. {observed!r}: a "
            "shallow clone shares another table's files, which the guard and `icecompat check` cannot hold "
            "to the clone's profile",
            fix="make a DEEP CLONE (CREATE TABLE ... DEEP CLONE ...) or copy the rows with compat_write",
            clause=_WRITE_CLAUSE,
            stages=(Stage.COMMIT,),
            layer="icecompat_writer.jvm.service",
        ),
        Rule(
            "DELTA-WRITE-FOOTER-UNREAD",
            ALL,
            None,
            checks="Every data file a commit adds has a Parquet footer that was read before the commit.",
            message="the footer of {count} new data file(s) could not be read, e.g. {observed!r}: "
            "{problem}; the file rules (field ids, types, row counts) cannot be held to files nobody read",
            fix="retry the write; if it fails again, check that the table's storage is readable with the "
            "session's settings (`icecompat doctor`)",
            clause=_WRITE_CLAUSE,
            stages=(Stage.COMMIT,),
            layer="icecompat_writer.planning",
        ),
        _emit_rule(
            "ICEBERG-EMIT-TYPE",
            "Every column's type has an Iceberg counterpart the emitter writes.",
            "Delta type `{observed}` has no Iceberg counterpart this emitter writes",
            "use only the IcebergCompatV2 type allow-list (variant/geo types are not converted yet)",
            clause="docs/iceberg.md#types",
        ),
        _emit_rule(
            "ICEBERG-EMIT-COLUMN-MAPPING",
            "Column mapping is on (id or name), so data files carry the field ids Iceberg reads by.",
            "column mapping is off, so the data files carry no field ids for Iceberg to resolve",
            "set `{key}` to `name` (existing tables) or `id` (new tables)",
        ),
        _emit_rule(
            "ICEBERG-EMIT-DELETION-VECTORS",
            "Deletion vectors are converted into Iceberg format v3 only: under format v2 they are off and "
            "no live data file carries one.",
            "deletion vectors are enabled and Iceberg format v2 has none: the rows they delete would "
            "reappear",
            "emit Iceberg format 3 (deletion vectors become Iceberg deletion vectors), or set "
            "`delta.enableDeletionVectors` to `false` and rewrite files that carry DVs (REORG TABLE ... "
            "APPLY (PURGE))",
            variants={
                "file": (
                    "data file {file} has a deletion vector and Iceberg format v2 has none: Iceberg would "
                    "return the rows it deletes",
                    "emit Iceberg format 3, or purge deletion vectors (REORG TABLE ... APPLY (PURGE)) and "
                    "disable them",
                )
            },
        ),
        _emit_rule(
            "ICEBERG-EMIT-DELETION-VECTOR-READ",
            "Every deletion vector converted is readable, in Delta's portable serialized form (length, "
            "magic, CRC-32, 64-bit roaring bitmap), and deletes as many rows as its log cardinality says.",
            "data file {file}: {problem}",
            "repair or restore the deletion vector file (`icecompat check TABLE` lists every one), or "
            "rewrite the data file (REORG TABLE ... APPLY (PURGE))",
        ),
        _emit_rule(
            "ICEBERG-EMIT-FORMAT-VERSION",
            "Format v3 is emitted only with row tracking, and an existing tree keeps its format version.",
            "Iceberg format v3 needs row lineage, which comes from Delta row tracking, and row tracking "
            "is not enabled",
            "emit format 2, or enable `delta.enableRowTracking` (IcebergCompatV3 does so)",
            variants={
                "existing": (
                    "the existing Iceberg metadata is format v{expected}; an existing tree is not "
                    "re-versioned",
                    "omit --format-version, or delete metadata/ and convert again",
                )
            },
        ),
        _emit_rule(
            "ICEBERG-EMIT-NUM-RECORDS",
            "Every data file has a row count (numRecords, or a readable footer).",
            "data file {file} has no numRecords statistic and its footer cannot be read",
            "recompute statistics for the table (IcebergCompat requires numRecords)",
        ),
        _emit_rule(
            "ICEBERG-EMIT-PARTITION-COLUMN",
            "Every partition column is a top-level column the partition spec can name.",
            "the partition column is not a top-level column of the schema",
            "repair the table metadata",
            variants={
                "type": ("an identity partition needs a primitive column", "partition by a primitive column")
            },
        ),
        _emit_rule(
            "ICEBERG-EMIT-PARTITION-VALUE",
            "Every partition value converts to its Iceberg type.",
            "partition value of {file} cannot be converted: {problem}",
            "rewrite the file's partition with a writer that records UTC ISO-8601 values",
        ),
        _emit_rule(
            "ICEBERG-EMIT-ROW-LINEAGE",
            "Under format v3 every data file has a baseRowId, so Iceberg row ids match Delta's.",
            "data file {file} has no baseRowId, so its Iceberg row ids cannot match Delta's",
            "enable row tracking and backfill it, or emit Iceberg format 2",
        ),
        _emit_rule(
            "ICEBERG-EMIT-OUTSIDE-ROOT",
            "Every data file and metadata file the emitter touches lies under the table root.",
            "data file {file} {reason}; it was not opened",
            "keep every data file under the table root (no absolute paths, `..` or links elsewhere)",
            variants={
                "prefix": (
                    "{what} {observed} is outside the table's {metadata_dir}/ prefix; nothing was read or "
                    "written there",
                    "keep the Iceberg tree in {metadata_root}",
                ),
                "root-link": (
                    "the {metadata_dir} directory {metadata_root} leads outside the table root (to "
                    "{observed}); nothing was read or written there",
                    "remove the link: the Iceberg tree is kept in {metadata_root} itself",
                ),
                "link": (
                    "{what} {location} leads outside the table's {metadata_dir}/ directory (to {observed}); "
                    "nothing was read or written there",
                    "remove the link: the Iceberg tree is kept in {metadata_root} itself",
                ),
            },
        ),
        _emit_rule(
            "ICEBERG-EMIT-EXISTING-METADATA",
            "An existing metadata/ tree was written by this emitter and is readable.",
            "{file} was not written by this emitter (no `{property}` property)",
            "move the existing metadata/ directory away; the emitter does not adopt foreign trees",
            variants={
                "other-table": (
                    "the Iceberg metadata belongs to another Delta table (the table was re-created here)",
                    "delete the metadata/ directory and convert again",
                )
            },
        ),
        _emit_rule(
            "ICEBERG-EMIT-HISTORY",
            "Every Delta commit since the last conversion still exists.",
            "Delta commits {first}..{last} were cleaned up before they were converted",
            "delete metadata/ and convert again from the current state",
        ),
        Rule(
            "UPGRADE-UNREADABLE",
            ALL,
            None,
            checks="The upgrade can read every log line and data file it replaces.",
            message="the upgrade must see every log line and data file it replaces: "
            "{observed}: {problem}{where}",
            fix="repair the table first (`icecompat check TABLE` lists what it cannot read), then upgrade",
            clause=_UPGRADE_CLAUSE,
            stages=(Stage.UPGRADE,),
            layer=_UPGRADE_LAYER,
        ),
        Rule(
            "UPGRADE-ICEBERG-READERS",
            ALL,
            None,
            checks="A new table state (new physical names) is not written under published Iceberg metadata.",
            message="the table needs a new state ({why}): every column would get a new physical name, "
            "but Iceberg metadata has already been published for it ({count} metadata file(s) in "
            "{root}/metadata); its snapshots resolve files without field ids through the name mapping, by "
            "the physical names the new state changes",
            fix="upgrade a copy of the table (e.g. compat_write it to a new path with this profile), or "
            "remove the table's metadata/ folder and publish it again with `icecompat iceberg` after the "
            "upgrade",
            clause=_UPGRADE_CLAUSE,
            stages=(Stage.UPGRADE,),
            layer=_UPGRADE_LAYER,
        ),
    ]


# --- BEGIN new entries: generated columns under an upgrade, and rows delta-spark refuses to write -----
# UPGRADE-VOLATILE-GENERATED-COLUMN (icecompat_writer.upgrading.generated) and DELTA-WRITE-ROW-CONSTRAINT
# (icecompat_writer.jvm.bridge, which maps delta-spark's row checks onto it).
def _row_check_rules() -> list[Rule]:
    return [
        Rule(
            "UPGRADE-VOLATILE-GENERATED-COLUMN",
            ALL,
            None,
            checks="An upgrade that changes the table does not rewrite a generated column whose expression "
            "depends on the time of writing or is not deterministic.",
            message="the column is generated by `{observed}`, which depends on the time of writing "
            "(`{function}`): delta-spark checks every row it rewrites against the expression evaluated "
            "at the time of the rewrite, so rows written at another time fail "
            "(DELTA_VIOLATE_CONSTRAINT_WITH_VALUES), or it refuses the expression in any commit that "
            "changes the metadata (DELTA_UNSUPPORTED_EXPRESSION_GENERATED_COLUMN); no rewrite keeps the "
            "stored values",
            fix="copy the rows into a table where `{path}` is a plain column (the values kept, no "
            "generation expression) and upgrade or compat_write that table; writers then set the value "
            "themselves",
            clause=_UPGRADE_CLAUSE,
            stages=(Stage.UPGRADE,),
            layer="icecompat_writer.upgrading.generated",
            variants={
                "random": (
                    "the column is generated by `{observed}`, which is not deterministic (`{function}`): "
                    "delta-spark refuses such an expression in any commit that changes the metadata "
                    "(DELTA_NON_DETERMINISTIC_EXPRESSION_IN_GENERATED_COLUMN) and could not re-check the "
                    "stored values against it; no rewrite keeps them",
                    "copy the rows into a table where `{path}` is a plain column (the values kept, no "
                    "generation expression) and upgrade or compat_write that table",
                )
            },
        ),
        Rule(
            "DELTA-WRITE-ROW-CONSTRAINT",
            ALL,
            None,
            checks="Every row written satisfies the table's NOT NULL columns, CHECK constraints and "
            "generation expressions (delta-spark checks each row while it writes the files).",
            message="delta-spark refused a row while writing: {problem}; nothing was committed and the "
            "files written before the refusal were deleted",
            fix="write rows that satisfy `{constraint}`; when an upgrade rewrites the table's own rows, "
            "they already break it: correct them (UPDATE ... SET) or drop the constraint (ALTER TABLE ... "
            "DROP CONSTRAINT), then upgrade",
            clause=_WRITE_CLAUSE,
            stages=(Stage.PLAN, Stage.UPGRADE),
            layer="icecompat_writer.jvm.bridge",
        ),
    ]


# --- END new entries ---------------------------------------------------------------------------------


def _with_stages(rule: Rule) -> Rule:
    """A rule of a check kind is enforced by the planner and at commit, or on data files."""
    file = kind_of(rule).scope is Scope.FILE
    return replace(rule, stages=(Stage.FILE,) if file else (Stage.PLAN, Stage.COMMIT))


# The rules ``validate`` evaluates through their check kinds (profiles list these).
CATALOG: tuple[Rule, ...] = tuple(
    _with_stages(r)
    for r in (
        *_support_rules(),
        *_column_mapping_rules(),
        *_row_tracking_rules(),
        *_type_rules(),
        *_writer_compat_feature_rules(),
        *_delta_spark_rules(),
        *_replace_rules(),
        *_file_rules(),
    )
)
check_against_kinds(CATALOG)

# What delta-spark refuses to write although the protocol and Iceberg allow it: a writer's limit, not a
# property of the table's Iceberg view (the emitter converts such tables written by other writers).
DELTA_SPARK_RULES = frozenset(r.id for r in _delta_spark_rules())

# The rules the write, Iceberg and upgrade layers enforce themselves.
LAYER_RULES: tuple[Rule, ...] = (*_layer_rules(), *_row_check_rules())

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
    observed: Any = None,
    expected: Any = None,
    clause: str = "",
    **values: Any,
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
