"""The catalog's vocabulary: profile names, the spec clauses rules cite (as anchors into the spec
texts) and the lists several rule families share, so that a family module holds rules only.

No ``__all__``: every public name here is the vocabulary, imported with ``*`` by the package, where
these names have been importable from since the catalog was one module."""

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
