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
from icecompat_writer.rules.catalog import layer_rule
from icecompat_writer.schema import (
    CM_ID,
    CM_NESTED_IDS,
    CM_PHYSICAL_NAME,
    MAX_FIELD_ID,
    child_path,
    iceberg_decimal_params,
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
    rule: str, path: str, message: str, fix: str, observed: Any = None, expected: Any = None
) -> Violation:
    """A Violation of this emitter's profile (keeps every refusal spelled the same way)."""
    layer_rule(rule)  # every id is a catalog entry
    return Violation(
        profile=PROFILE,
        rule=rule,
        path=path,
        message=message,
        fix=fix,
        observed=None if observed is None else str(observed),
        expected=None if expected is None else str(expected),
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
    iceberg_type: str | dict[str, Any]


@dataclass
class ConvertedSchema:
    """The Iceberg form of one Delta schema, plus the indexes built while converting it."""

    fields: list[dict[str, Any]] = field(default_factory=list)
    primitives: dict[int, Primitive] = field(default_factory=dict)
    top: dict[str, TopColumn] = field(default_factory=dict)
    name_mapping: list[dict[str, Any]] = field(default_factory=list)
    max_id: int = 0

    def to_json(self, schema_id: int) -> dict[str, Any]:
        """The schema as Iceberg table metadata stores it (spec Appendix C)."""
        return {"type": "struct", "schema-id": schema_id, "fields": self.fields}

    def same_as(self, other: Mapping[str, Any]) -> bool:
        """Whether an already recorded schema JSON has exactly these fields (its id aside)."""
        return list(other.get("fields", [])) == self.fields


class _Converter:
    """One walk over a Delta schema; collects fields, indexes and violations together."""

    def __init__(self, format_version: int) -> None:
        self.format_version = format_version
        self.out = ConvertedSchema()
        self.violations: list[Violation] = []
        self.id_problems: list[str] = []
        self.seen_ids: dict[int, str] = {}

    def _claim(self, fid: Any, path: str) -> int | None:
        """Check an id is a usable, unique Iceberg field id; record it."""
        if isinstance(fid, bool) or not isinstance(fid, int):
            self.id_problems.append(f"`{path}`: id {fid!r} is not an integer")
            return None
        if fid <= 0 or fid > MAX_FIELD_ID:
            self.id_problems.append(f"`{path}`: id {fid} is outside 1..{MAX_FIELD_ID}")
            return None
        other = self.seen_ids.get(fid)
        if other is not None:
            self.id_problems.append(f"`{path}`: id {fid} is also used by `{other}`")
            return None
        self.seen_ids[fid] = path
        self.out.max_id = max(self.out.max_id, fid)
        return fid

    def struct_fields(
        self, delta_fields: list[dict[str, Any]], path: str, stats_path: tuple[str, ...] | None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Convert the fields of a struct; returns (iceberg fields, name-mapping entries)."""
        fields: list[dict[str, Any]] = []
        mapping: list[dict[str, Any]] = []
        for f in delta_fields:
            name = str(f.get("name"))
            fpath = child_path(path, name)  # quoted as every other layer spells a column
            meta = f.get("metadata") or {}
            physical = meta.get(CM_PHYSICAL_NAME)
            raw_id = meta.get(CM_ID)
            if raw_id is None or not physical:
                missing = " and ".join(
                    k for k, v in ((CM_ID, raw_id), (CM_PHYSICAL_NAME, physical)) if v is None or v == ""
                )
                self.id_problems.append(f"`{fpath}`: no {missing}")
                fid = None
            else:
                fid = self._claim(raw_id, fpath)
            child_stats = None if stats_path is None or not physical else (*stats_path, str(physical))
            nested_ids = meta.get(CM_NESTED_IDS) or {}
            itype, sub_mapping = self.convert_type(
                f.get("type"), fpath, child_stats, nested_ids, str(physical or name)
            )
            if fid is None or itype is None:
                continue
            fields.append(
                {"id": fid, "name": name, "required": not bool(f.get("nullable", True)), "type": itype}
            )
            entry: dict[str, Any] = {"field-id": fid, "names": [str(physical)]}
            if sub_mapping:
                entry["fields"] = sub_mapping
            mapping.append(entry)
            if isinstance(itype, str):
                delta_type = str(f.get("type"))
                self.out.primitives[fid] = Primitive(fid, fpath, itype, delta_type, child_stats)
            if not path:
                self.out.top[name] = TopColumn(fid, name, str(physical), itype)
        return fields, mapping

    def _nested_id(self, nested_ids: Mapping[str, Any], key: str, path: str) -> int | None:
        raw = nested_ids.get(key)
        if raw is None:
            self.id_problems.append(f"`{path}`: no `{key}` in `{CM_NESTED_IDS}` of the enclosing field")
            return None
        return self._claim(raw, path)

    def convert_type(
        self,
        dtype: Any,
        path: str,
        stats_path: tuple[str, ...] | None,
        nested_ids: Mapping[str, Any],
        id_prefix: str,
    ) -> tuple[str | dict[str, Any] | None, list[dict[str, Any]]]:
        """Convert one Delta type; ``id_prefix`` is the nested-ids key prefix for lists and maps."""
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
        kind = dtype.get("type")
        if kind == "struct":
            fields, mapping = self.struct_fields(list(dtype.get("fields") or []), path, stats_path)
            return {"type": "struct", "fields": fields}, mapping
        if kind == "array":
            key = f"{id_prefix}.element"
            eid = self._nested_id(nested_ids, key, f"{path}.element")
            etype, emap = self.convert_type(
                dtype.get("elementType"), f"{path}.element", None, nested_ids, key
            )
            if eid is None or etype is None:
                return None, []
            elem_entry: dict[str, Any] = {"field-id": eid, "names": ["element"]}
            if emap:
                elem_entry["fields"] = emap
            return (
                {
                    "type": "list",
                    "element-id": eid,
                    "element": etype,
                    "element-required": not bool(dtype.get("containsNull", True)),
                },
                [elem_entry],
            )
        if kind == "map":
            kkey, vkey = f"{id_prefix}.key", f"{id_prefix}.value"
            kid = self._nested_id(nested_ids, kkey, f"{path}.key")
            vid = self._nested_id(nested_ids, vkey, f"{path}.value")
            ktype, kmap = self.convert_type(dtype.get("keyType"), f"{path}.key", None, nested_ids, kkey)
            vtype, vmap = self.convert_type(dtype.get("valueType"), f"{path}.value", None, nested_ids, vkey)
            if kid is None or vid is None or ktype is None or vtype is None:
                return None, []
            k_entry: dict[str, Any] = {"field-id": kid, "names": ["key"]}
            v_entry: dict[str, Any] = {"field-id": vid, "names": ["value"]}
            if kmap:
                k_entry["fields"] = kmap
            if vmap:
                v_entry["fields"] = vmap
            return (
                {
                    "type": "map",
                    "key-id": kid,
                    "key": ktype,
                    "value-id": vid,
                    "value": vtype,
                    "value-required": not bool(dtype.get("valueContainsNull", True)),
                },
                [k_entry, v_entry],
            )
        self._unsupported(path, str(kind))
        return None, []

    def _unsupported(self, path: str, dtype: str) -> None:
        self.violations.append(
            violation(
                "ICEBERG-EMIT-TYPE",
                path,
                f"Delta type `{dtype}` has no Iceberg counterpart this emitter writes",
                "use only the IcebergCompatV2 type allow-list (variant/geo types are not converted yet)",
                observed=dtype,
            )
        )


def convert_schema(
    delta_schema: Mapping[str, Any], format_version: int
) -> tuple[ConvertedSchema, list[Violation]]:
    """Convert a Delta struct schema (parsed ``schemaString``) to Iceberg, ids taken from Delta.

    Returns the converted schema and every ``ICEBERG-EMIT-TYPE`` violation; when the list is not
    empty the schema is incomplete and must not be written. Raises :class:`SchemaIdError` for fields
    without a usable id (which the catalog's id rules refuse before this is called).
    """
    conv = _Converter(format_version)
    fields, mapping = conv.struct_fields(list(delta_schema.get("fields") or []), "", ())
    if conv.id_problems:
        raise SchemaIdError(conv.id_problems)
    conv.out.fields = fields
    conv.out.name_mapping = mapping
    return conv.out, conv.violations
