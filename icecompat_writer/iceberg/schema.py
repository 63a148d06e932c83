"""Delta schema -> Iceberg schema, with the ids Delta already assigned.

Iceberg resolves columns by field id, and a column-mapped Delta table writes its ids into every Parquet
file (``delta.columnMapping.id`` for struct fields, ``delta.columnMapping.nested.ids`` for list elements
and map keys/values). Reusing those ids, rather than numbering afresh, is what lets an Iceberg reader open
the existing files unchanged.

The ids themselves are the rule catalog's business (``CM-IDS-ASSIGNED``, ``CM-IDS-UNIQUE``,
``ICV2-NESTED-IDS``/``ICV3-NESTED-IDS``), and the emitter converts a schema only after the catalog
passed it, so a missing or clashing id here is not a second rule but a broken invariant: it raises
:class:`SchemaIdError`. What the catalog accepts but this converter cannot express (types such as
``variant``) comes back as an ``ICEBERG-EMIT-TYPE`` :class:`Violation`, every one of them at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from icecompat_writer.errors import IcecompatError, Violation
from icecompat_writer.rules.catalog import layer_violation
from icecompat_writer.schema import (
    CM_ID,
    CM_NESTED_IDS,
    CM_PHYSICAL_NAME,
    ELEMENT,
    KEY,
    MAX_FIELD_ID,
    MIN_FIELD_ID,
    VALUE,
    ArrayType,
    Field,
    JsonDict,
    JsonObject,
    MapType,
    PrimitiveType,
    Schema,
    SchemaVisitor,
    Slot,
    StructType,
    iceberg_decimal_params,
    id_in_range,
    visit,
)

__all__ = [
    "PROFILE",
    "ConvertedSchema",
    "Primitive",
    "SchemaIdError",
    "convert_schema",
    "violation",
]

PROFILE = "iceberg-emitter"

# Delta primitive type name -> Iceberg primitive type. byte/short widen to int because Iceberg has no
# narrower integer; Delta's `timestamp` is an instant (UTC-adjusted in Parquet), so it is `timestamptz`.
_PRIMITIVES: Mapping[str, str] = {
    "byte": "int",
    "short": "int",
    "integer": "int",
    "long": "long",
    "float": "float",
    "double": "double",
    "string": "string",
    "binary": "binary",
    "boolean": "boolean",
    "date": "date",
    "timestamp": "timestamptz",
    "timestamp_ntz": "timestamp",
}


class SchemaIdError(IcecompatError):
    """A field, list element or map key/value without a usable, unique id reached the converter.

    The catalog's id rules refuse such schemas before conversion; seeing one here means the two
    disagree, and writing a schema that silently drops the field would misread the data.
    """

    def __init__(self, problems: list[str]) -> None:
        super().__init__(
            "schema fields without a usable Iceberg field id (the rule catalog should have refused "
            "them under CM-IDS-ASSIGNED / CM-IDS-UNIQUE / ICV*-NESTED-IDS): " + "; ".join(problems)
        )
        self.problems = problems


def violation(
    rule: str,
    path: str,
    *,
    variant: str = "",
    observed: object = None,
    expected: object = None,
    **values: object,
) -> Violation:
    """A Violation of this emitter's profile, worded by the rule's catalog templates (``variant``:
    one of its named wordings) filled with ``values``."""
    return layer_violation(
        PROFILE, rule, path, variant=variant, observed=observed, expected=expected, clause="", **values
    )


@dataclass(frozen=True)
class Primitive:
    """A primitive column of the schema, with what the manifests need to describe it.

    ``stats_path`` is the path of physical names under which Delta keeps this column's statistics; it
    is None inside lists and maps, where Delta keeps none and Iceberg metrics would be ambiguous.
    """

    field_id: int
    path: str
    iceberg_type: str
    delta_type: str
    stats_path: tuple[str, ...] | None


@dataclass(frozen=True)
class TopColumn:
    """A top-level column: what a partition spec needs (its id, physical name and type)."""

    field_id: int
    name: str
    physical_name: str
    iceberg_type: str | JsonDict


@dataclass
class ConvertedSchema:
    """The Iceberg form of one Delta schema, plus the indexes built while converting it."""

    fields: list[JsonDict] = field(default_factory=list)
    primitives: dict[int, Primitive] = field(default_factory=dict)
    top: dict[str, TopColumn] = field(default_factory=dict)
    name_mapping: list[JsonDict] = field(default_factory=list)
    max_id: int = 0

    def to_json(self, schema_id: int) -> JsonDict:
        """The schema as Iceberg table metadata stores it (spec Appendix C)."""
        return {"type": "struct", "schema-id": schema_id, "fields": self.fields}

    def same_as(self, other: JsonObject) -> bool:
        """Whether an already recorded schema JSON has exactly these fields (its id aside)."""
        fields = other.get("fields", [])
        return isinstance(fields, list | tuple) and list(fields) == self.fields


_Result = tuple[Any, list[JsonDict]]  # (Iceberg field or type JSON, or None; name-mapping entries)


class _Converter(SchemaVisitor[_Result]):
    """One visit of a Delta schema; collects fields, indexes and violations together.

    Ids are claimed on the way down (a field before what is inside it, a map's key and value ids
    before either type), in the order the catalog's id rules report them; types are converted on the
    way up.
    """

    def __init__(self, format_version: int) -> None:
        self.format_version = format_version
        self.out = ConvertedSchema()
        self.violations: list[Violation] = []
        self.id_problems: list[str] = []
        self.seen_ids: dict[int, str] = {}
        self._paths: list[str] = [""]
        self._stats: list[tuple[str, ...] | None] = [()]
        self._field_ids: dict[int, tuple[int | None, tuple[str, ...] | None]] = {}
        self._slot_ids: dict[str, int | None] = {}

    def _claim(self, fid: object, path: str) -> int | None:
        """Check an id is a usable, unique Iceberg field id; record it."""
        if isinstance(fid, bool) or not isinstance(fid, int):
            self.id_problems.append(f"`{path}`: id {fid!r} is not an integer")
            return None
        if not id_in_range(fid):
            self.id_problems.append(f"`{path}`: id {fid} is outside {MIN_FIELD_ID}..{MAX_FIELD_ID}")
            return None
        other = self.seen_ids.get(fid)
        if other is not None:
            self.id_problems.append(f"`{path}`: id {fid} is also used by `{other}`")
            return None
        self.seen_ids[fid] = path
        self.out.max_id = max(self.out.max_id, fid)
        return fid

    def _nested_id(self, owner: Field, key: str, path: str) -> int | None:
        raw = owner.nested_ids.get(key)
        if raw is None:
            self.id_problems.append(f"`{path}`: no `{key}` in `{CM_NESTED_IDS}` of the enclosing field")
            return None
        return self._claim(raw, path)

    # -- on the way down ---------------------------------------------------------------------------

    def before_field(self, field: Field) -> None:
        meta = field.metadata
        physical = meta.get(CM_PHYSICAL_NAME)
        raw_id = meta.get(CM_ID)
        if raw_id is None or not physical:
            missing = " and ".join(
                k for k, v in ((CM_ID, raw_id), (CM_PHYSICAL_NAME, physical)) if v is None or v == ""
            )
            self.id_problems.append(f"`{field.path}`: no {missing}")
            fid = None
        else:
            fid = self._claim(raw_id, field.path)
        stats = self._stats[-1]
        child_stats = None if stats is None or not physical else (*stats, str(physical))
        self._field_ids[field.index] = (fid, child_stats)
        self._paths.append(field.path)
        self._stats.append(child_stats)

    def after_field(self, field: Field) -> None:
        self._paths.pop()
        self._stats.pop()

    def before_slot(self, slot: Slot) -> None:
        if slot.step == KEY:  # the map's value id is claimed with its key id, before either type
            value_key = slot.key[: -len(KEY)] + VALUE
            value_path = slot.path[: -len(KEY)] + VALUE
            self._slot_ids[slot.path] = self._nested_id(slot.owner, slot.key, slot.path)
            self._slot_ids[value_path] = self._nested_id(slot.owner, value_key, value_path)
        elif slot.step == ELEMENT:
            self._slot_ids[slot.path] = self._nested_id(slot.owner, slot.key, slot.path)
        self._paths.append(slot.path)
        self._stats.append(None)  # Delta keeps no statistics inside lists and maps

    def after_slot(self, slot: Slot) -> None:
        self._paths.pop()
        self._stats.pop()

    # -- on the way up -----------------------------------------------------------------------------

    def primitive(self, primitive: PrimitiveType) -> _Result:
        dtype, path = primitive.raw, self._paths[-1]
        if isinstance(dtype, str):
            prim = _PRIMITIVES.get(dtype)
            if prim is not None:
                return prim, []
            params = iceberg_decimal_params(dtype)
            if params is not None:
                precision, scale = params
                if precision > 38:
                    self._unsupported(path, dtype)
                    return None, []
                return f"decimal({precision}, {scale})", []
            self._unsupported(path, dtype)
            return None, []
        if not isinstance(dtype, Mapping):
            self._unsupported(path, repr(dtype))
            return None, []
        self._unsupported(path, str(dtype.get("type")))
        return None, []

    def slot(self, slot: Slot, type_result: _Result) -> _Result:
        sid = self._slot_ids.get(slot.path)
        itype, mapping = type_result
        if sid is None or itype is None:
            return None, []
        entry: JsonDict = {"field-id": sid, "names": [slot.step]}
        if mapping:
            entry["fields"] = mapping
        return itype, [entry]

    def array(self, array: ArrayType, element_result: _Result) -> _Result:
        etype, entries = element_result
        if etype is None:
            return None, []
        return (
            {
                "type": "list",
                "element-id": entries[0]["field-id"],
                "element": etype,
                "element-required": not array.contains_null,
            },
            entries,
        )

    def map(self, map_type: MapType, key_result: _Result, value_result: _Result) -> _Result:
        (ktype, kentries), (vtype, ventries) = key_result, value_result
        if ktype is None or vtype is None:
            return None, []
        return (
            {
                "type": "map",
                "key-id": kentries[0]["field-id"],
                "key": ktype,
                "value-id": ventries[0]["field-id"],
                "value": vtype,
                "value-required": not map_type.value_contains_null,
            },
            kentries + ventries,
        )

    def field(self, field: Field, type_result: _Result) -> _Result:
        fid, child_stats = self._field_ids[field.index]
        itype, sub_mapping = type_result
        if fid is None or itype is None:
            return None, []
        f = field.raw
        name = str(f.get("name"))
        physical = field.metadata.get(CM_PHYSICAL_NAME)
        out = {"id": fid, "name": name, "required": not bool(f.get("nullable", True)), "type": itype}
        entry: JsonDict = {"field-id": fid, "names": [str(physical)]}
        if sub_mapping:
            entry["fields"] = sub_mapping
        if isinstance(itype, str):
            self.out.primitives[fid] = Primitive(fid, field.path, itype, str(f.get("type")), child_stats)
        if field.parent is None:
            self.out.top[name] = TopColumn(fid, name, str(physical), itype)
        return out, [entry]

    def struct(self, struct: StructType, field_results: list[_Result]) -> _Result:
        fields = [f for f, _ in field_results if f is not None]
        mapping = [e for _, entries in field_results for e in entries]
        return {"type": "struct", "fields": fields}, mapping

    def _unsupported(self, path: str, dtype: str) -> None:
        self.violations.append(
            violation(
                "ICEBERG-EMIT-TYPE",
                path,
                observed=dtype,
            )
        )


def convert_schema(delta_schema: Schema, format_version: int) -> tuple[ConvertedSchema, list[Violation]]:
    """Convert a Delta struct schema (parsed ``schemaString``) to Iceberg, ids taken from Delta.

    Returns the converted schema and every ``ICEBERG-EMIT-TYPE`` violation; when the list is not
    empty the schema is incomplete and must not be written. Raises :class:`SchemaIdError` for fields
    without a usable id (which the catalog's id rules refuse before this is called).
    """
    conv = _Converter(format_version)
    root, mapping = visit(delta_schema, conv)
    if conv.id_problems:
        raise SchemaIdError(conv.id_problems)
    conv.out.fields = root["fields"]
    conv.out.name_mapping = mapping
    return conv.out, conv.violations
