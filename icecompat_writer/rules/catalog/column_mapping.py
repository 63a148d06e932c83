"""Rules of column mapping: the mapping mode, field ids and physical names the Iceberg view is built on."""

from __future__ import annotations

from icecompat_writer.rules.catalog.shared import (
    ALL,
    ICEBERG_RESERVED,
    KERNEL_W3,
    P2_WRITER,
    P_CM,
    P_CM_READER,
    P_CM_WRITER,
    R3_WRITER,
    UPGRADE,
    V3,
    V3S,
    W1,
    W_WRITER,
    WRITERS,
)
from icecompat_writer.rules.model import Rule
from icecompat_writer.schema import MAX_FIELD_ID, MIN_FIELD_ID


def column_mapping_rules() -> list[Rule]:
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
            checks="No two fields of one struct share a physical name (every physical field path is "
            "unique).",
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
