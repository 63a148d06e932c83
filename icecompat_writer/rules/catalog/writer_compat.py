"""Rules of IcebergWriterCompat: its feature allow-lists and the "supported but not active" checks."""

from __future__ import annotations

from icecompat_writer.rules.catalog.shared import (
    IDENTITY_KEYS,
    IWC1_ALLOWED,
    IWC3_ALLOWED,
    KERNEL_W3,
    LEGACY_INACTIVE,
    W1,
    W3,
    W_ALLOWLIST,
    W_DISALLOWED,
    WRITERS,
)
from icecompat_writer.rules.model import Rule


def writer_compat_feature_rules() -> list[Rule]:
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
