"""What the table's metadata should become after a write, before any compliance rule is applied.

This is Delta's own write semantics, restated on the log's JSON: which schema a mode produces
(append keeps the table's, ``mergeSchema`` adds new columns and nested fields, overwrite with
``overwriteSchema`` and replace take the DataFrame's), which partitioning, which properties. Existing
fields keep their column-mapping metadata so that the planner never renumbers them; new fields arrive
bare and the planner gives them ids. Everything here happens before a single file is written, so a
mismatch is refused while the table is still untouched.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icecompat_writer.deltalog.actions import Metadata, Protocol
from icecompat_writer.errors import CompatViolation, Violation
from icecompat_writer.rules.schema import fold_name, join_path, quote_name

__all__ = ["WriteIntent", "compose_metadata", "merge_schemas", "runtime_violations", "write_violation"]

WRITE_PROFILE = "delta"  # the "profile" named on violations of Delta's own write rules

# Modes as compat_write knows them (v1 names plus the v2 writer's replace flavours).
APPEND_MODES = frozenset({"append", "append_existing"})
OVERWRITE_MODES = frozenset({"overwrite", "overwrite_existing"})
REPLACE_MODES = frozenset({"replace", "create_or_replace"})


@dataclass(frozen=True)
class WriteIntent:
    """One write as the user asked for it: mode, DataFrame schema, partitioning, properties, options."""

    mode: str
    data_schema: Mapping[str, Any]
    partition_by: tuple[str, ...] | None = None
    properties: Mapping[str, str] | None = None
    merge_schema: bool = False
    overwrite_schema: bool = False

    @property
    def replaces_schema(self) -> bool:
        """Whether the DataFrame's schema becomes the table's (instead of being checked against it)."""
        return self.mode in REPLACE_MODES or (self.mode in OVERWRITE_MODES and self.overwrite_schema)


def write_violation(
    rule: str, path: str, message: str, fix: str, observed: Any = None, expected: Any = None
) -> Violation:
    """A violation of Delta's own write rules (profile ``delta``), refused before any file is written."""
    return Violation(
        profile=WRITE_PROFILE,
        rule=rule,
        path=path,
        message=message,
        fix=fix,
        observed=None if observed is None else str(observed),
        expected=None if expected is None else str(expected),
        clause="delta-PROTOCOL.md#schema-serialization-format",
    )


def _join(prefix: str, name: str) -> str:
    """Column paths are spelled exactly as the rule catalog spells them."""
    return join_path(prefix, quote_name(name))


def _find(fields: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    """Delta resolves column names case-insensitively: exact match first, then case-folded."""
    for f in fields:
        if f["name"] == name:
            return f
    folded = fold_name(name)
    for f in fields:
        if fold_name(f["name"]) == folded:
            return f
    return None


def _type_name(t: Any) -> str:
    if isinstance(t, str):
        return t
    kind = t.get("type")
    if kind == "struct":
        return "struct<" + ",".join(f"{f['name']}:{_type_name(f['type'])}" for f in t["fields"]) + ">"
    if kind == "array":
        return f"array<{_type_name(t['elementType'])}>"
    if kind == "map":
        return f"map<{_type_name(t['keyType'])},{_type_name(t['valueType'])}>"
    return str(kind)


def _merge_type(table_t: Any, data_t: Any, path: str, add: bool, problems: list[Violation]) -> Any:
    """``table_t`` extended by what ``data_t`` has on top (when ``add``), or problems when they clash."""
    if isinstance(table_t, dict) and isinstance(data_t, dict) and table_t.get("type") == data_t.get("type"):
        kind = table_t["type"]
        if kind == "struct":
            return _merge_struct(table_t, data_t, path, add, problems)
        if kind == "array":
            merged = copy.deepcopy(table_t)
            merged["elementType"] = _merge_type(
                table_t["elementType"], data_t["elementType"], f"{path}.element", add, problems
            )
            return merged
        if kind == "map":
            merged = copy.deepcopy(table_t)
            merged["keyType"] = _merge_type(
                table_t["keyType"], data_t["keyType"], f"{path}.key", add, problems
            )
            merged["valueType"] = _merge_type(
                table_t["valueType"], data_t["valueType"], f"{path}.value", add, problems
            )
            return merged
    if table_t == data_t:
        return copy.deepcopy(table_t)
    problems.append(
        write_violation(
            "DELTA-WRITE-TYPE-MISMATCH",
            path,
            "the DataFrame's type differs from the table's type for this column",
            "cast the column to the table's type before writing, or overwrite with overwriteSchema=true",
            observed=_type_name(data_t),
            expected=_type_name(table_t),
        )
    )
    return copy.deepcopy(table_t)


def _merge_struct(
    table_s: Mapping[str, Any], data_s: Mapping[str, Any], path: str, add: bool, problems: list[Violation]
) -> dict[str, Any]:
    merged = copy.deepcopy(dict(table_s))
    fields: list[dict[str, Any]] = merged["fields"]
    for data_f in data_s["fields"]:
        here = _join(path, data_f["name"])
        table_f = _find(fields, data_f["name"])
        if table_f is None:
            if add:
                new_f = copy.deepcopy(dict(data_f))
                new_f["metadata"] = {}  # a new column starts bare: ids and names come from the planner
                new_f["nullable"] = True  # rows already in the table have no value for it
                fields.append(new_f)
            else:
                problems.append(
                    write_violation(
                        "DELTA-WRITE-UNKNOWN-COLUMN",
                        here,
                        "the DataFrame has a column the table does not have",
                        "add .option('mergeSchema', 'true') to add it to the table, "
                        "or drop it from the DataFrame",
                    )
                )
            continue
        assert isinstance(table_f, dict)
        table_f["type"] = _merge_type(table_f["type"], data_f["type"], here, add, problems)
    return merged


def merge_schemas(
    table_schema: Mapping[str, Any], data_schema: Mapping[str, Any], *, add_new: bool
) -> tuple[dict[str, Any], list[Violation]]:
    """The table schema a DataFrame write produces, with every clash found (not just the first).

    With ``add_new`` (``mergeSchema``), columns and nested struct fields that only the DataFrame has are
    appended (nullable, without column-mapping metadata); otherwise they are problems. Types of existing
    columns must match exactly: Delta's DataFrame writer does not cast.
    """
    problems: list[Violation] = []
    merged = _merge_struct(table_schema, data_schema, "", add_new, problems)
    return merged, problems


def _as_nullable(t: Any) -> Any:
    """``t`` with every field, element and value nullable, as Delta's DataFrame writer stores it.

    Delta makes a DataFrame's schema nullable when it creates a table from it (and cannot store NOT
    NULL below arrays and maps at all); constraints belong to DDL, not to data.
    """
    if not isinstance(t, dict):
        return t
    out = dict(t)
    kind = t.get("type")
    if kind == "struct":
        out["fields"] = [{**f, "nullable": True, "type": _as_nullable(f["type"])} for f in t["fields"]]
    elif kind == "array":
        out["containsNull"] = True
        out["elementType"] = _as_nullable(t["elementType"])
    elif kind == "map":
        out["valueContainsNull"] = True
        out["keyType"] = _as_nullable(t["keyType"])
        out["valueType"] = _as_nullable(t["valueType"])
    return out


def _strip_mapping(t: Any) -> Any:
    """``t`` without any column-mapping metadata: a DataFrame's ids mean nothing for a new table."""
    if not isinstance(t, dict):
        return t
    out = dict(t)
    kind = t.get("type")
    if kind == "struct":
        out["fields"] = [
            {
                **f,
                "metadata": {
                    k: v
                    for k, v in (f.get("metadata") or {}).items()
                    if not k.startswith("delta.columnMapping.")
                },
                "type": _strip_mapping(f["type"]),
            }
            for f in t["fields"]
        ]
    elif kind == "array":
        out["elementType"] = _strip_mapping(t["elementType"])
    elif kind == "map":
        out["keyType"] = _strip_mapping(t["keyType"])
        out["valueType"] = _strip_mapping(t["valueType"])
    return out


def _carry_field_metadata(new_t: Any, old_t: Any) -> Any:
    """Copy column-mapping metadata of same-named fields from ``old_t`` onto ``new_t`` (by name, recursively).

    Used when a write replaces the schema: a column that keeps its name keeps its id and physical name,
    so its existing data stays readable by id, and the planner's id allocation stays monotonic.
    """
    if isinstance(new_t, dict) and isinstance(old_t, dict) and new_t.get("type") == old_t.get("type"):
        kind = new_t["type"]
        out = copy.deepcopy(new_t)
        if kind == "struct":
            for f in out["fields"]:
                old_f = _find(old_t["fields"], f["name"])
                if old_f is None:
                    continue
                meta = {
                    k: v
                    for k, v in (old_f.get("metadata") or {}).items()
                    if k.startswith("delta.columnMapping.")
                }
                f["metadata"] = {**(f.get("metadata") or {}), **meta}
                f["type"] = _carry_field_metadata(f["type"], old_f["type"])
        elif kind == "array":
            out["elementType"] = _carry_field_metadata(new_t["elementType"], old_t["elementType"])
        elif kind == "map":
            out["keyType"] = _carry_field_metadata(new_t["keyType"], old_t["keyType"])
            out["valueType"] = _carry_field_metadata(new_t["valueType"], old_t["valueType"])
        return out
    return copy.deepcopy(new_t)


def _check_data_schema(t: Any, path: str, problems: list[Violation]) -> None:
    """Names Delta would take for one column, and structs Parquet cannot store, anywhere in the schema.

    delta-spark refuses both itself (DELTA_DUPLICATE_COLUMNS_FOUND, DELTA_CANNOT_WRITE_EMPTY_SCHEMA), but
    without a fix, and an empty struct below an array or map can get as far as Parquet's writer on some
    paths. Found here, every occurrence is listed with its full path before any file exists.
    """
    if not isinstance(t, Mapping):
        return
    kind = t.get("type")
    if kind == "struct":
        fields = t.get("fields") or []
        if not fields:
            problems.append(
                write_violation(
                    "DELTA-WRITE-EMPTY-STRUCT",
                    path,
                    "a struct without fields cannot be stored (Parquet has no empty group)",
                    "drop the column, or give the struct at least one field",
                )
            )
        seen: dict[str, str] = {}
        for f in fields:
            name = f["name"]
            here = _join(path, name)
            folded = fold_name(name)
            first = seen.get(folded)
            if first is None:
                seen[folded] = name
            else:
                problems.append(
                    write_violation(
                        "DELTA-WRITE-DUPLICATE-COLUMN",
                        here,
                        f"Delta matches column names ignoring case, so this name is the same column as "
                        f"{_join(path, first)}",
                        "rename or drop one of the two columns before writing",
                        observed=name,
                        expected=first,
                    )
                )
            _check_data_schema(f["type"], here, problems)
    elif kind == "array":
        _check_data_schema(t.get("elementType"), f"{path}.element", problems)
    elif kind == "map":
        _check_data_schema(t.get("keyType"), f"{path}.key", problems)
        _check_data_schema(t.get("valueType"), f"{path}.value", problems)


def _check_partitioning(
    intent: WriteIntent, schema: Mapping[str, Any], problems: list[Violation]
) -> tuple[str, ...]:
    names = [f["name"] for f in schema["fields"]]
    resolved: list[str] = []
    for col in intent.partition_by or ():
        field = _find(schema["fields"], col)
        if field is None:
            problems.append(
                write_violation(
                    "DELTA-WRITE-PARTITION-COLUMN",
                    quote_name(col),
                    "the partition column is not a top-level column of the written schema",
                    f"partition by one of: {', '.join(names) or '(no columns)'}",
                )
            )
            continue
        kind = _partition_type_name(field["type"])
        if kind is not None:
            problems.append(
                write_violation(
                    "DELTA-WRITE-PARTITION-COLUMN",
                    quote_name(field["name"]),
                    f"Delta cannot partition by a column of type {kind}",
                    "partition by a column of a primitive type (numbers, string, binary, boolean, "
                    "date, timestamp)",
                    observed=kind,
                )
            )
            continue
        resolved.append(field["name"])
    return tuple(resolved)


def _partition_type_name(dtype: Any) -> str | None:
    """The type's name when Delta refuses to partition by it (nested, void, variant), else None.

    delta-spark refuses these itself (DELTA_INVALID_PARTITION_COLUMN_TYPE), but only when it plans the
    write; a compat write plans it here, before any data file exists.
    """
    if isinstance(dtype, Mapping):
        return str(dtype.get("type", "nested"))
    if dtype in ("void", "variant"):
        return str(dtype)
    return None


# delta-spark copies every table property into the Hadoop configuration of each write (TransactionalWrite
# builds it from the table's configuration), where Hadoop, Parquet and Spark read their settings, class
# names included: `fs.file.impl` with `fs.file.impl.disable.cache`, `parquet.crypto.factory.class` and
# `spark.sql.parquet.output.committer.class` make the write load the class a table property names.
# Properties in these namespaces are refused: no table property may decide what code a write runs.
CONFIG_NAMESPACES = (
    "fs.", "hadoop.", "parquet.", "spark.", "io.", "ipc.", "mapreduce.", "mapred.", "dfs.", "yarn.",
    "file.", "ha.", "net.", "rpc.", "security.", "s3.", "s3a.", "s3n.", "s3native.", "ftp.", "avro.",
)  # fmt: skip


def _check_properties(configuration: Mapping[str, Any], problems: list[Violation]) -> None:
    for key in sorted(configuration):
        if str(key).lower().startswith(CONFIG_NAMESPACES):
            problems.append(
                write_violation(
                    "DELTA-WRITE-CONFIG-PROPERTY",
                    "",
                    f"table property `{key}` would reach the Hadoop configuration of every write to the "
                    "table (delta-spark copies table properties there), where Hadoop, Parquet and Spark "
                    "read settings and the names of classes to load",
                    "drop the property (ALTER TABLE ... UNSET TBLPROPERTIES for a table that has it); set "
                    "Hadoop and Parquet settings on the Spark session instead",
                    observed=key,
                )
            )


# Delta properties delta-spark parses as booleans (Scala's toBoolean: `true`/`false` in any case, no
# spaces). A value it cannot parse fails the write inside delta-spark with "For input string".
BOOLEAN_PROPERTIES = frozenset(
    {
        "delta.appendonly", "delta.enablechangedatafeed", "delta.enabledeletionvectors",
        "delta.enablerowtracking", "delta.enabletypewidening", "delta.randomizefileprefixes",
        "delta.checkpoint.writestatsasjson", "delta.checkpoint.writestatsasstruct",
        "delta.enableexpiredlogcleanup", "delta.enableincommittimestamps",
    }
)  # fmt: skip
_PROTOCOL_PROPERTIES = {"delta.minreaderversion": ("1", "2", "3"), "delta.minwriterversion": tuple("1234567")}
_FEATURE_STATUSES = ("supported", "enabled")


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
            f"the commit references {len(paths)} data file(s) outside the table, e.g. {paths[0]!r}: a "
            "shallow clone shares another table's files, which the guard and `icecompat check` cannot "
            "hold to the clone's profile",
            "make a DEEP CLONE (CREATE TABLE ... DEEP CLONE ...) or copy the rows with compat_write",
            observed=paths[0],
            expected="files inside the table",
        )
    ]


def _variant_paths(t: Any, path: str) -> list[str]:
    if t == "variant":
        return [path]
    if not isinstance(t, Mapping):
        return []
    kind = t.get("type")
    if kind == "struct":
        return [
            p for f in t.get("fields") or () for p in _variant_paths(f.get("type"), _join(path, f["name"]))
        ]
    if kind == "array":
        return _variant_paths(t.get("elementType"), f"{path}.element")
    if kind == "map":
        return _variant_paths(t.get("keyType"), f"{path}.key") + _variant_paths(
            t.get("valueType"), f"{path}.value"
        )
    return []


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
                    f"table property `{key}` = {value!r} {found[0]}: delta-spark would refuse it while "
                    "writing",
                    f"set `{key}` to {found[1]}, or leave it out",
                    observed=value,
                    expected=found[1],
                )
            )
    icv3 = (
        "icebergCompatV3" in (protocol.writer_features or ())
        or str(config.get("delta.enableIcebergCompatV3", "")).strip().lower() == "true"
    )
    if icv3:
        for path in _variant_paths(metadata.schema, ""):
            problems.append(
                write_violation(
                    "DELTA-WRITE-VARIANT-ICEBERG-V3",
                    path,
                    "delta-spark 4.4 cannot write a variant column into a table with IcebergCompatV3 "
                    "(it fails with INVALID_FIELD_NAME on the column's physical name), although the "
                    "profile allows variant",
                    "store the value as JSON text (to_json) in a string column, or write it to a table "
                    "without IcebergCompatV3",
                    observed="variant",
                )
            )
    return problems


def compose_metadata(intent: WriteIntent, previous: Metadata | None) -> Metadata:
    """The metadata the table should have after this write, before compliance planning.

    Raises :class:`CompatViolation` listing every problem when Delta's write rules refuse the write.
    """
    problems: list[Violation] = []
    data_schema = _as_nullable(copy.deepcopy(dict(intent.data_schema)))
    props = dict(intent.properties or {})
    _check_data_schema(data_schema, "", problems)
    if problems:  # merging or planning a schema with these would only add confusing follow-ups
        raise CompatViolation(problems, "(the write does not fit Delta's rules)")

    if previous is None:
        partitions = _check_partitioning(intent, data_schema, problems)
        _check_properties(props, problems)
        if problems:
            raise CompatViolation(problems, "(the write does not fit Delta's rules)")
        data_schema = _strip_mapping(data_schema)
        return Metadata(
            schema_string="{}",
            partition_columns=partitions,
            configuration=props,
            id=str(uuid.uuid4()),
        ).with_schema(data_schema)

    old_schema = previous.schema
    if intent.replaces_schema:
        schema = _carry_field_metadata(data_schema, old_schema)
        partitions = _check_partitioning(intent, schema, problems) if intent.partition_by is not None else ()
        configuration = {**previous.configuration, **props}
    else:
        schema, problems = merge_schemas(old_schema, data_schema, add_new=intent.merge_schema)
        configuration = {**previous.configuration, **props}
        partitions = previous.partition_columns
        if intent.partition_by is not None:
            asked = _check_partitioning(intent, schema, problems)
            if not problems and [fold_name(p) for p in asked] != [fold_name(p) for p in partitions]:
                problems.append(
                    write_violation(
                        "DELTA-WRITE-PARTITIONING-CHANGE",
                        "",
                        "the write asks for a different partitioning than the table has",
                        "write with the table's partitioning, or overwrite with overwriteSchema=true "
                        "(or replace the table) to change it",
                        observed=list(asked),
                        expected=list(partitions),
                    )
                )
    _check_properties(configuration, problems)
    if problems:
        raise CompatViolation(problems, "(the write does not fit Delta's rules)")
    return Metadata(
        schema_string="{}",
        partition_columns=tuple(partitions),
        configuration=configuration,
        id=previous.id,
        name=previous.name,
        description=previous.description,
        format_provider=previous.format_provider,
        format_options=previous.format_options,
        created_time=previous.created_time,
    ).with_schema(schema)
