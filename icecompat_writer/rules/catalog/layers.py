"""The rules of the other layers: Delta's own write rules, the Iceberg emitter's checks and the upgrade's
refusals, each enforced by the module it names rather than by a check kind."""

from __future__ import annotations

from dataclasses import replace

from icecompat_writer.rules.catalog.shared import (
    ALL,
    R3_WRITER,
    SPARK,
    SPARK_ICV,
    V3S,
    P,
)
from icecompat_writer.rules.model import Rule, Stage

# --- rules of the other layers ----------------------------------------------------------------------
# Enforced by the module each names (``layer``) rather than by a check kind; listed here so that every
# rule id a user can meet is in one catalog, with the data its layer reads as params.

_WRITE = "icecompat_writer.writing.compose"
# Delta's write rules judged on the log's JSON alone, shared by the writer, the guard and the checker
_WRITES = "icecompat_writer.rules.writes"
_WRITES_RULES = frozenset(
    {
        "DELTA-WRITE-CONFIG-PROPERTY",
        "DELTA-WRITE-DUPLICATE-COLUMN",
        "DELTA-WRITE-EMPTY-STRUCT",
        "DELTA-WRITE-PROPERTY-VALUE",
        "DELTA-WRITE-VARIANT-ICEBERG-V3",
    }
)
_WRITE_CLAUSE = f"{P}#schema-serialization-format"
# the rules the verdict raises itself from what a moment brings (paths outside the table, unread footers)
_VERDICT = "icecompat_writer.rules.verdict"
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


def layer_rules() -> list[Rule]:
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
            layer=_VERDICT,
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
            layer=_VERDICT,
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
            "ICEBERG-EMIT-DELETION-VECTOR-READ",
            "Every deletion vector converted is readable, in Delta's portable serialized form (length, "
            "magic, CRC-32, 64-bit roaring bitmap), and deletes as many rows as its log cardinality says.",
            "data file {file}: {problem}",
            "repair or restore the deletion vector file (`icecompat check TABLE` lists every one), or "
            "rewrite the data file (REORG TABLE ... APPLY (PURGE))",
        ),
        _emit_rule(
            "ICEBERG-EMIT-FORMAT-VERSION",
            "Format v3 is emitted only with row tracking, the format asked for is 2 or 3, and an existing "
            "tree keeps its format version.",
            "Iceberg format v3 needs row lineage, which comes from Delta row tracking, and row tracking "
            "is not enabled",
            "emit format 2, or enable `delta.enableRowTracking` (IcebergCompatV3 does so)",
            variants={
                "existing": (
                    "the existing Iceberg metadata is format v{expected}; an existing tree is not "
                    "re-versioned",
                    "omit --format-version, or delete metadata/ and convert again",
                ),
                "existing-property": (
                    "the table property `icecompat.iceberg.format-version` asks for format v{observed} and "
                    "the existing Iceberg metadata is format v{expected}; an existing tree is not "
                    "re-versioned",
                    "set `icecompat.iceberg.format-version` to `{expected}` (or unset it), or delete "
                    "metadata/ so that the next sync or `icecompat iceberg` converts the table again in "
                    "format v{observed}",
                ),
                "property": (
                    "the table property `{key}` is `{observed}`; Iceberg formats 2 and 3 are emitted",
                    "set `{key}` to `2` or `3`, or unset it",
                ),
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


def row_check_rules() -> list[Rule]:
    """Rows delta-spark refuses while writing, and generated columns an upgrade cannot rewrite."""
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
