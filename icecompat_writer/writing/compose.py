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
from typing import TypeVar

from icecompat_writer.deltalog.actions import Metadata
from icecompat_writer.errors import CompatViolation, Violation
from icecompat_writer.rules import verdict
from icecompat_writer.rules.schema import SameColumn, SchemaNode
from icecompat_writer.rules.writes import (
    WRITE_PROFILE,
    check_properties,
    runtime_violations,
    shallow_clone_violations,
    write_violation,
)
from icecompat_writer.schema import (
    CM_PREFIX,
    ArrayType,
    DataType,
    Field,
    JsonDict,
    MapType,
    PartnerVisitor,
    PrimitiveType,
    Schema,
    SchemaVisitor,
    Slot,
    StructType,
    fold_name,
    parse_schema,
    quote_name,
    type_text,
    visit,
    visit_with_partner,
)

__all__ = [
    "WRITE_PROFILE",
    "WriteIntent",
    "compose_metadata",
    "merge_schemas",
    "runtime_violations",
    "shallow_clone_violations",
    "write_violation",
]

_check_properties = check_properties  # the name this module used before the check moved to rules.writes

T = TypeVar("T")

# Modes as compat_write knows them (v1 names plus the v2 writer's replace flavours).
APPEND_MODES = frozenset({"append", "append_existing"})
OVERWRITE_MODES = frozenset({"overwrite", "overwrite_existing"})
REPLACE_MODES = frozenset({"replace", "create_or_replace"})


@dataclass(frozen=True)
class WriteIntent:
    """One write as the user asked for it: mode, DataFrame schema, partitioning, properties, options."""

    mode: str
    data_schema: Schema
    partition_by: tuple[str, ...] | None = None
    properties: Mapping[str, str] | None = None
    merge_schema: bool = False
    overwrite_schema: bool = False

    @property
    def replaces_schema(self) -> bool:
        """Whether the DataFrame's schema becomes the table's (instead of being checked against it)."""
        return self.mode in REPLACE_MODES or (self.mode in OVERWRITE_MODES and self.overwrite_schema)


def _find(fields: Sequence[Field], name: str) -> Field | None:
    """Delta resolves column names case-insensitively: exact match first, then case-folded."""
    for f in fields:
        if f.name == name:
            return f
    folded = fold_name(name)
    for f in fields:
        if fold_name(f.name) == folded:
            return f
    return None


@dataclass(frozen=True)
class _Merged:
    """What the merge makes of one type, field or slot: the merged type's JSON, the problems found
    below it, whether the data's type clashes with the table's right here, and (for a field) the
    DataFrame's field and the table's field it matched."""

    type_json: object
    problems: list[Violation]
    clash: bool = False
    data_field: Field | None = None
    table_field: Field | None = None


class _Merge(PartnerVisitor[SchemaNode, _Merged]):
    """The table schema extended by what the DataFrame's schema (the visited one) has on top.

    The table's schema is the partner; a DataFrame field the table lacks is appended (``add``) or a
    problem, and a type that differs from the table's is a problem at the field or slot holding it.
    """

    def __init__(self, add: bool) -> None:
        self.add = add

    def descend(self, node: DataType, partner: SchemaNode | None) -> bool:
        return isinstance(partner, DataType) and partner.category == node.category

    def _same_or_clash(self, node: DataType, partner: SchemaNode | None) -> _Merged:
        table_t = partner.raw if isinstance(partner, DataType) else None
        return _Merged(copy.deepcopy(table_t), [], table_t != node.raw)

    def primitive(self, primitive: PrimitiveType, partner: SchemaNode | None) -> _Merged:
        return self._same_or_clash(primitive, partner)

    def struct(self, struct: StructType, partner: SchemaNode | None, field_results: list[_Merged]) -> _Merged:
        if not isinstance(partner, StructType) or not self.descend(struct, partner):
            return self._same_or_clash(struct, partner)
        fields = [copy.deepcopy(f.raw) for f in partner.fields]
        position = {id(f.raw): i for i, f in enumerate(partner.fields)}
        problems: list[Violation] = []
        for below in field_results:
            data_f, table_f = below.data_field, below.table_field
            assert data_f is not None
            if table_f is None:
                if self.add:
                    # a new column starts bare (ids and names come from the planner) and nullable (rows
                    # already in the table have no value for it)
                    fields.append(_bare(data_f))
                else:
                    problems.append(
                        write_violation(
                            "DELTA-WRITE-UNKNOWN-COLUMN",
                            data_f.path,
                        )
                    )
                continue
            merged = self._at(data_f.path, data_f.type, table_f.type, below)
            at = position[id(table_f.raw)]
            fields[at] = table_f.json_with(merged.type_json, deep=True)
            problems.extend(merged.problems)
        return _Merged(partner.json_with(fields, deep=True), problems)

    def field(self, field: Field, partner: SchemaNode | None, type_result: _Merged) -> _Merged:
        table_f = partner if isinstance(partner, Field) else None
        return _Merged(type_result.type_json, type_result.problems, type_result.clash, field, table_f)

    def slot(self, slot: Slot, partner: SchemaNode | None, type_result: _Merged) -> _Merged:
        table_t = partner.type if isinstance(partner, Slot) else None
        return self._at(slot.path, slot.type, table_t, type_result)

    def array(self, array: ArrayType, partner: SchemaNode | None, element_result: _Merged | None) -> _Merged:
        if element_result is None or not isinstance(partner, ArrayType):
            return self._same_or_clash(array, partner)
        return _Merged(partner.json_with(element_result.type_json, deep=True), element_result.problems)

    def map(
        self,
        map_type: MapType,
        partner: SchemaNode | None,
        key_result: _Merged | None,
        value_result: _Merged | None,
    ) -> _Merged:
        if key_result is None or value_result is None or not isinstance(partner, MapType):
            return self._same_or_clash(map_type, partner)
        merged = partner.json_with(key_result.type_json, value_result.type_json, deep=True)
        return _Merged(merged, key_result.problems + value_result.problems)

    def _at(self, path: str, data_t: DataType, table_t: DataType | None, result: _Merged) -> _Merged:
        """The merged type at ``path`` and its problems, a clash right here included."""
        if not result.clash:
            return _Merged(result.type_json, result.problems)
        table_raw = table_t.raw if table_t is not None else None
        mismatch = write_violation(
            "DELTA-WRITE-TYPE-MISMATCH",
            path,
            observed=type_text(data_t.raw),
            expected=type_text(table_raw),
        )
        return _Merged(result.type_json, [*result.problems, mismatch])


def _bare(field: Field) -> JsonDict:
    """A deep copy of a new field's JSON without metadata, nullable."""
    out = copy.deepcopy(field.raw)
    out["metadata"] = {}
    out["nullable"] = True
    return out


def merge_schemas(table: Schema, data: Schema, *, add_new: bool) -> tuple[Schema, list[Violation]]:
    """The table schema a DataFrame write produces, with every clash found (not just the first).

    With ``add_new`` (``mergeSchema``), columns and nested struct fields that only the DataFrame has are
    appended (nullable, without column-mapping metadata); otherwise they are problems. Types of existing
    columns must match exactly: Delta's DataFrame writer does not cast.
    """
    merged = visit_with_partner(data, table.struct, _Merge(add_new), SameColumn())
    return parse_schema(merged.type_json), merged.problems


class _Transform(SchemaVisitor[object]):
    """A copy of the schema rebuilt bottom-up; subclasses change what a field, array or map keeps.

    Each node answers its JSON (a primitive its name); the whole is parsed into a :class:`Schema` once.
    """

    def struct(self, struct: StructType, field_results: list[object]) -> object:
        return struct.json_with([f for f in field_results if isinstance(f, dict)])

    def field(self, field: Field, type_result: object) -> object:
        return field.json_with(type_result)

    def array(self, array: ArrayType, element_result: object) -> object:
        return array.json_with(element_result)

    def map(self, map_type: MapType, key_result: object, value_result: object) -> object:
        return map_type.json_with(key_result, value_result)

    def primitive(self, primitive: PrimitiveType) -> object:
        return primitive.raw

    def rebuilt(self, schema: Schema) -> Schema:
        """``schema`` rebuilt by this transform, parsed."""
        return parse_schema(visit(schema, self))


class _Nullable(_Transform):
    def field(self, field: Field, type_result: object) -> object:
        return field.json_with(type_result, nullable=True)

    def array(self, array: ArrayType, element_result: object) -> object:
        return array.json_with(element_result, contains_null=True)

    def map(self, map_type: MapType, key_result: object, value_result: object) -> object:
        return map_type.json_with(key_result, value_result, value_contains_null=True)


class _WithoutMapping(_Transform):
    def field(self, field: Field, type_result: object) -> object:
        md = field.raw.get("metadata")
        kept = {k: v for k, v in md.items() if not k.startswith(CM_PREFIX)} if isinstance(md, Mapping) else {}
        return field.json_with(type_result, metadata=kept)


def _as_nullable(schema: Schema) -> Schema:
    """``schema`` with every field, element and value nullable, as Delta's DataFrame writer stores it.

    Delta makes a DataFrame's schema nullable when it creates a table from it (and cannot store NOT
    NULL below arrays and maps at all); constraints belong to DDL, not to data.
    """
    return _Nullable().rebuilt(schema)


def _strip_mapping(schema: Schema) -> Schema:
    """``schema`` without any column-mapping metadata: a DataFrame's ids mean nothing for a new table."""
    return _WithoutMapping().rebuilt(schema)


class _CarryMapping(PartnerVisitor[SchemaNode, object]):
    """A deep copy of the new schema in which every field that existed before (same name, matched as
    Delta matches names, through arrays and maps of the same kind) has its previous column-mapping
    metadata."""

    def descend(self, node: DataType, partner: SchemaNode | None) -> bool:
        return isinstance(partner, DataType) and partner.category == node.category

    def struct(self, struct: StructType, partner: SchemaNode | None, field_results: list[object]) -> object:
        if not self.descend(struct, partner):
            return copy.deepcopy(struct.raw)
        return struct.json_with([f for f in field_results if isinstance(f, dict)], deep=True)

    def field(self, field: Field, partner: SchemaNode | None, type_result: object) -> object:
        if not isinstance(partner, Field):
            return field.json_with(type_result, deep=True)
        carried = {k: v for k, v in partner.metadata.items() if k.startswith(CM_PREFIX)}
        md = field.raw.get("metadata")
        own = copy.deepcopy(md) if isinstance(md, Mapping) and md else {}
        return field.json_with(type_result, metadata={**own, **carried}, deep=True)

    def array(self, array: ArrayType, partner: SchemaNode | None, element_result: object | None) -> object:
        if element_result is None:
            return copy.deepcopy(array.raw)
        return array.json_with(element_result, deep=True)

    def map(
        self,
        map_type: MapType,
        partner: SchemaNode | None,
        key_result: object | None,
        value_result: object | None,
    ) -> object:
        if key_result is None:
            return copy.deepcopy(map_type.raw)
        return map_type.json_with(key_result, value_result, deep=True)

    def primitive(self, primitive: PrimitiveType, partner: SchemaNode | None) -> object:
        return copy.deepcopy(primitive.raw)


def _carry_field_metadata(new_schema: Schema, old_schema: Schema) -> Schema:
    """Copy column-mapping metadata of same-named fields from ``old_schema`` onto ``new_schema``.

    Used when a write replaces the schema: a column that keeps its name keeps its id and physical name,
    so its existing data stays readable by id, and the planner's id allocation stays monotonic.
    """
    return parse_schema(visit_with_partner(new_schema, old_schema.struct, _CarryMapping(), SameColumn()))


def _check_partitioning(intent: WriteIntent, schema: Schema, problems: list[Violation]) -> tuple[str, ...]:
    names = [f.name for f in schema.top]
    resolved: list[str] = []
    for col in intent.partition_by or ():
        field = _find(schema.top, col)
        if field is None:
            problems.append(
                write_violation(
                    "DELTA-WRITE-PARTITION-COLUMN",
                    quote_name(col),
                    columns=", ".join(names) or "(no columns)",
                )
            )
            continue
        kind = _partition_type_name(field.type)
        if kind is not None:
            problems.append(
                write_violation(
                    "DELTA-WRITE-PARTITION-COLUMN",
                    quote_name(field.name),
                    variant="type",
                    observed=kind,
                )
            )
            continue
        resolved.append(field.name)
    return tuple(resolved)


def _partition_type_name(dtype: DataType) -> str | None:
    """The type's name when Delta refuses to partition by it (nested, void, variant), else None.

    delta-spark refuses these itself (DELTA_INVALID_PARTITION_COLUMN_TYPE), but only when it plans the
    write; a compat write plans it here, before any data file exists.
    """
    raw = dtype.raw
    if isinstance(raw, Mapping):
        return str(raw.get("type", "nested"))
    if raw in ("void", "variant"):
        return str(raw)
    return None


def compose_metadata(intent: WriteIntent, previous: Metadata | None) -> Metadata:
    """The metadata the table should have after this write, before compliance planning.

    Raises :class:`CompatViolation` listing every problem when Delta's write rules refuse the write.
    """
    problems: list[Violation] = []
    data_schema = _as_nullable(intent.data_schema)
    props = dict(intent.properties or {})
    problems.extend(verdict.decide(verdict.DataFrameSchema(data_schema)).violations)
    if problems:  # merging or planning a schema with these would only add confusing follow-ups
        raise CompatViolation(problems, "(the write does not fit Delta's rules)")

    if previous is None:
        partitions = _check_partitioning(intent, data_schema, problems)
        problems.extend(verdict.decide(verdict.TableProperties(props)).violations)
        if problems:
            raise CompatViolation(problems, "(the write does not fit Delta's rules)")
        data_schema = _strip_mapping(data_schema)
        return Metadata(
            schema_string="{}",
            partition_columns=partitions,
            configuration=props,
            id=str(uuid.uuid4()),
        ).with_schema(data_schema)

    if intent.replaces_schema:
        schema = _carry_field_metadata(data_schema, previous.schema_model)
        partitions = _check_partitioning(intent, schema, problems) if intent.partition_by is not None else ()
        configuration = {**previous.configuration, **props}
    else:
        schema, found = merge_schemas(previous.schema_model, data_schema, add_new=intent.merge_schema)
        problems.extend(found)
        configuration = {**previous.configuration, **props}
        partitions = previous.partition_columns
        if intent.partition_by is not None:
            asked = _check_partitioning(intent, schema, problems)
            if not problems and [fold_name(p) for p in asked] != [fold_name(p) for p in partitions]:
                problems.append(
                    write_violation(
                        "DELTA-WRITE-PARTITIONING-CHANGE",
                        "",
                        observed=list(asked),
                        expected=list(partitions),
                    )
                )
    problems.extend(verdict.decide(verdict.TableProperties(configuration)).violations)
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
