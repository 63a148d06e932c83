"""Rules of row tracking: the row ids and row commit versions Iceberg v3 reads as its row lineage."""

from __future__ import annotations

from icecompat_writer.rules.catalog.shared import (
    P_ROW_TRACKING,
    R3_WRITER,
    UPGRADE,
    V3S,
    W1,
    W_ALLOWLIST,
    W_DISALLOWED,
)
from icecompat_writer.rules.model import Rule

# Rules about what Delta itself writes into the AddFile at commit time (row ids): files verified
# before their commit (compat_write, upgrade) cannot have it yet; the commit check and the checker
# hold it on the committed AddFiles.
ASSIGNED_AT_COMMIT = frozenset({"ICV3-ROW-IDS-ASSIGNED"})


def row_tracking_rules() -> list[Rule]:
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
