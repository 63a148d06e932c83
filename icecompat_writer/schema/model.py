"""A typed Delta schema, parsed once from the ``schemaString`` JSON.

Every struct field, array element and map key/value becomes a node that knows its column path, its
nearest ancestor struct field and (through that field's metadata) its column-mapping id. The nodes
keep the JSON object they came from (``raw``); each field's metadata, column id and physical name are
read once, when the field is parsed, so that the rules' index can use the parsed fields as they are
(one node per field, not two). The planner changes ids and physical names in place on its private
copy, never the shape, and calls :meth:`Schema.reread_metadata` when it is done: one parse serves a
whole plan.

The links up the tree (a field's ``parent``, a slot's ``owner``) are weak references: with the links
down (a struct's fields, an array's element) they would make every parsed schema a reference cycle,
which only the cyclic collector frees. A schema of 10,000 leaves is ~30,000 such objects, and every
schema the planner or the checker drops would wait for a collection of the older generations, paid by
whatever runs next (~40 ms each here). Without cycles a schema is freed the moment it is dropped.
Keep the :class:`Schema` while its fields are used: a field whose schema is gone cannot name its
parent and says so (``ReferenceError``).

Parsing never rejects anything: a damaged log can hold a struct whose ``fields`` is not a list or a
type that is not a type, and each reader decides what that means (the rules refuse it, the planner
walks what is there). Such a struct parses with no fields, a ``struct``, ``array`` or ``map`` written
as a bare name parses as an unknown leaf, and ``Schema.irregular`` names the first of them.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from types import MappingProxyType
from weakref import ReferenceType
from weakref import ref as _ref

from icecompat_writer.schema.jsontypes import JsonDict, JsonObject
from icecompat_writer.schema.keys import CM_ID, CM_NESTED_IDS, CM_PHYSICAL_NAME, is_id
from icecompat_writer.schema.paths import ELEMENT, KEY, VALUE, child_path
from icecompat_writer.schema.types import type_category

__all__ = [
    "ArrayType",
    "DataType",
    "Field",
    "MapType",
    "PrimitiveType",
    "Schema",
    "Slot",
    "StructType",
    "parse_schema",
    "parse_schema_json",
]

NO_METADATA: JsonObject = MappingProxyType({})


class DataType:
    """One type occurrence: ``raw`` is its JSON (a string for primitives), ``category`` its kind."""

    __slots__ = ("category", "raw")

    def __init__(self, raw: object, category: str) -> None:
        self.raw = raw
        self.category = category


class PrimitiveType(DataType):
    """A type without children: Delta's primitives, and anything unrecognisable (``category`` says which)."""

    __slots__ = ()


class StructType(DataType):
    """A struct: its fields in order (fields that are not JSON objects are left out)."""

    __slots__ = ("fields",)
    raw: JsonDict

    def __init__(self, raw: JsonDict, fields: list[Field]) -> None:
        super().__init__(raw, "struct")
        self.fields = fields

    def json_with(self, fields: list[JsonDict], *, deep: bool = False) -> JsonDict:
        """This struct's JSON with ``fields`` in place of its own (other keys kept, deep-copied with
        ``deep``)."""
        out = _rest(self.raw, deep, "fields")
        out["fields"] = fields
        return out


class ArrayType(DataType):
    """An array: ``element`` is the slot that holds the element type and its nested id."""

    __slots__ = ("element",)
    raw: JsonDict

    def __init__(self, raw: JsonDict, element: Slot) -> None:
        super().__init__(raw, "array")
        self.element = element

    @property
    def contains_null(self) -> bool:
        return bool(self.raw.get("containsNull", True))

    def json_with(
        self, element: object, *, contains_null: bool | None = None, deep: bool = False
    ) -> JsonDict:
        """This array's JSON with another element type (and ``containsNull`` when given)."""
        out = _rest(self.raw, deep, "elementType")
        if contains_null is not None:
            out["containsNull"] = contains_null
        out["elementType"] = element
        return out


class MapType(DataType):
    """A map: ``key`` and ``value`` are the slots that hold their types and nested ids."""

    __slots__ = ("key", "value")
    raw: JsonDict

    def __init__(self, raw: JsonDict, key: Slot, value: Slot) -> None:
        super().__init__(raw, "map")
        self.key = key
        self.value = value

    @property
    def value_contains_null(self) -> bool:
        return bool(self.raw.get("valueContainsNull", True))

    def json_with(
        self, key: object, value: object, *, value_contains_null: bool | None = None, deep: bool = False
    ) -> JsonDict:
        """This map's JSON with other key and value types (and ``valueContainsNull`` when given)."""
        out = _rest(self.raw, deep, "keyType", "valueType")
        if value_contains_null is not None:
            out["valueContainsNull"] = value_contains_null
        out["keyType"] = key
        out["valueType"] = value
        return out


class Field:
    """A struct field anywhere in the schema; ``parent`` is the nearest ancestor struct field.

    ``metadata`` (empty when the JSON has none, or something that is not an object), ``column_id``
    (the ``delta.columnMapping.id`` when it is an integer; bools are not ids) and ``physical_name``
    (the logical name when there is none, as PROTOCOL.md "Column Mapping" says) are read from ``raw``
    when the field is parsed, and again by :meth:`Schema.reread_metadata`.
    """

    __slots__ = (
        "__weakref__", "_parent", "column_id", "index", "metadata", "name", "path", "physical_name", "raw",
        "type",
    )  # fmt: skip

    def __init__(
        self,
        raw: JsonDict,
        name: str,
        path: str,
        type_: DataType,
        parent: ReferenceType[Field] | None,
        index: int,
        metadata: JsonObject,
        column_id: int | None,
        physical_name: str,
    ) -> None:
        self.raw = raw
        self.name = name
        self.path = path
        self.type = type_
        self._parent = parent
        self.index = index  # position in Schema.fields
        self.metadata = metadata
        self.column_id = column_id
        self.physical_name = physical_name

    @property
    def parent(self) -> Field | None:
        """The nearest ancestor struct field (None at the top level)."""
        return None if self._parent is None else _alive(self._parent)

    @property
    def nullable(self) -> bool:
        return bool(self.raw.get("nullable", True))

    def json_with(
        self,
        type_: object,
        *,
        nullable: bool | None = None,
        metadata: JsonObject | None = None,
        deep: bool = False,
    ) -> JsonDict:
        """This field's JSON with another type (and ``nullable``/``metadata`` when given)."""
        out = _rest(self.raw, deep, "type")
        if nullable is not None:
            out["nullable"] = nullable
        if metadata is not None:
            out["metadata"] = dict(metadata)
        out["type"] = type_
        return out

    @property
    def nested_ids(self) -> JsonObject:
        v = self.metadata.get(CM_NESTED_IDS)
        return v if (type(v) is dict or isinstance(v, Mapping)) else NO_METADATA


class Slot:
    """An array ``element`` or a map ``key``/``value``: a place that carries a nested id (IcebergCompatV2).

    ``steps`` are the element/key/value steps below ``owner`` (the nearest ancestor struct field), such
    as ``.value.element``; the nested id lives in the owner's ``delta.columnMapping.nested.ids`` under
    ``key``, the owner's physical name followed by the steps.
    """

    __slots__ = ("_owner", "path", "step", "steps", "type")

    def __init__(
        self, step: str, path: str, steps: str, owner: ReferenceType[Field], type_: DataType
    ) -> None:
        self.step = step
        self.path = path
        self.steps = steps
        self._owner = owner
        self.type = type_

    @property
    def owner(self) -> Field:
        """The nearest ancestor struct field, whose metadata holds this slot's nested id."""
        return _alive(self._owner)

    @property
    def key(self) -> str:
        return self.owner.physical_name + self.steps

    @property
    def id(self) -> int | None:
        v = self.owner.nested_ids.get(self.key)
        return v if is_id(v) else None


class Schema:
    """A parsed schema: the top-level struct plus, in pre-order, every field and every slot.

    ``fields`` and ``slots`` are each in pre-order (a field, then what is inside it, then its next
    sibling): the order Delta Kernel hands out ids in. ``structs`` holds every struct: the top level,
    then the types of struct fields, then those of slots, each in pre-order. ``categories`` holds the
    category of every type occurrence. ``irregular`` is the path of the first struct whose ``fields``
    is not a list (``""`` for the top level) or of the first nested type written as a bare name, None
    when there is none.
    From the fields' metadata (see :meth:`reread_metadata`): ``metadata_keys`` holds every key of
    every field's metadata, ``complete`` says that every field has an integer column id and a
    non-empty string physical name, ``column_ids`` lists the fields' column ids (in field order,
    fields without one left out) and ``nested_id_owners`` the fields whose metadata holds
    ``delta.columnMapping.nested.ids``.
    """

    __slots__ = (
        "categories", "column_ids", "complete", "fields", "irregular", "metadata_keys", "nested_id_owners",
        "raw", "slots", "struct", "structs",
    )  # fmt: skip

    def __init__(self, raw: object) -> None:
        self.raw = raw
        self.fields: list[Field] = []
        self.slots: list[Slot] = []
        self.categories: set[str] = set()
        self.metadata_keys: set[str] = set()
        self.complete = True
        self.column_ids: list[int] = []
        self.nested_id_owners: list[Field] = []
        self.irregular: str | None = None
        self.struct = StructType(_as_dict(raw), [])
        self.structs: list[StructType] = [self.struct]

    @property
    def top(self) -> list[Field]:
        return self.struct.fields

    def reread_metadata(self, *, fresh: bool = False) -> None:
        """Read every field's metadata (``parse_schema`` does; the planner again after changing it in
        place), and the summaries of it this schema keeps. ``fresh``: the fields still hold what they
        were made with (no metadata, no id, the logical name), so a field without metadata is left as
        it is (most fields of a new table)."""
        keys: set[str] = set()
        add_keys = keys.update
        ids: list[int] = []
        add_id = ids.append
        owners: list[Field] = []
        complete = True
        no_md = NO_METADATA
        for f in self.fields:
            md = f.raw.get("metadata")
            if md and (type(md) is dict or isinstance(md, Mapping)):
                add_keys(md)
                cid = md.get(CM_ID)
                if type(cid) is int or (isinstance(cid, int) and not isinstance(cid, bool)):
                    add_id(cid)
                else:
                    cid = None
                    complete = False
                if CM_NESTED_IDS in md:
                    owners.append(f)
                pn = md.get(CM_PHYSICAL_NAME)
                if type(pn) is not str or not pn:
                    if not isinstance(pn, str) or not pn:
                        pn = f.name
                        complete = False
                f.metadata = md
                f.column_id = cid
                f.physical_name = pn
            else:
                complete = False
                if not fresh:
                    f.metadata = no_md
                    f.column_id = None
                    f.physical_name = f.name
        self.metadata_keys = keys
        self.complete = complete
        self.column_ids = ids
        self.nested_id_owners = owners


def parse_schema(raw: object) -> Schema:
    """The typed form of a parsed ``schemaString`` (a non-object parses as an empty schema).

    The JSON is referenced, not copied. Raises RecursionError for a schema nested beyond Python's
    recursion limit; callers that read logs turn it into their own error.
    """
    schema = Schema(raw)
    if type(raw) is dict or isinstance(raw, Mapping):
        parser = _Parser(schema)
        schema.struct.fields = parser.struct_fields(schema.struct.raw, "", None)
        schema.structs = [schema.struct, *parser.field_structs, *parser.slot_structs]
    schema.reread_metadata(fresh=True)
    return schema


class _Parser:
    """One parse: the schema being filled and the structs met so far (a class rather than closures,
    which would refer to each other and leave the schema in a reference cycle)."""

    __slots__ = ("field_structs", "schema", "slot_structs")

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.field_structs: list[StructType] = []
        self.slot_structs: list[StructType] = []

    def struct_fields(self, struct: JsonDict, parent_path: str, parent: Field | None) -> list[Field]:
        fs = struct.get("fields")
        schema = self.schema
        if type(fs) is not list:
            if not isinstance(fs, list):
                if fs is not None and schema.irregular is None:
                    schema.irregular = parent_path
                return []
        fields_out = schema.fields
        add_field = fields_out.append
        add_cat = schema.categories.add
        shared = _SHARED_PRIMITIVES
        no_md = NO_METADATA  # until reread_metadata reads each field's
        out: list[Field] = []
        add = out.append
        prefix = parent_path + "." if parent_path else ""
        up = None if parent is None else _ref(parent)  # one weak reference, shared by every child
        for item in fs:
            if type(item) is dict:
                f: JsonDict = item
            elif isinstance(item, Mapping):
                f = dict(item)
            else:
                continue
            name = f.get("name", "")
            if type(name) is not str:
                name = str(name)
            if name and "." not in name and "`" not in name:  # child_path, inlined for the common case
                path = prefix + name
            else:
                path = child_path(parent_path, name)
            t = f.get("type")
            leaf = shared.get(t) if type(t) is str else None
            if leaf is not None:  # a primitive seen before: its shared node, no call per field
                add_cat(leaf.category)
                node = Field(f, name, path, leaf, up, len(fields_out), no_md, None, name)
                add_field(node)
                add(node)
                continue
            node = Field(f, name, path, _PENDING, up, len(fields_out), no_md, None, name)
            add_field(node)
            add(node)
            node.type = self.type_of(t, path, node, "")
        return out

    def type_of(self, t: object, path: str, owner: Field, steps: str) -> DataType:
        schema = self.schema
        if type(t) is str:
            leaf = _SHARED_PRIMITIVES.get(t)
            if leaf is not None:
                schema.categories.add(leaf.category)
                return leaf
        cat = type_category(t)
        if cat in _NESTED:
            if not isinstance(t, Mapping):  # "struct" as a bare name
                if schema.irregular is None:
                    schema.irregular = path
                return PrimitiveType(t, "unknown")
            t = _as_dict(t)
            schema.categories.add(cat)
            if cat == "struct":
                st = StructType(t, [])
                # in pre-order, as fields and slots are
                (self.slot_structs if steps else self.field_structs).append(st)
                st.fields = self.struct_fields(t, path, owner)
                return st
            if cat == "array":
                return ArrayType(t, self.slot(ELEMENT, t.get("elementType"), path, owner, steps))
            k = self.slot(KEY, t.get("keyType"), path, owner, steps)
            return MapType(t, k, self.slot(VALUE, t.get("valueType"), path, owner, steps))
        schema.categories.add(cat)
        if type(t) is str:
            return _shared_primitive(t, cat)
        return PrimitiveType(t, cat)

    def slot(self, step: str, t: object, path: str, owner: Field, steps: str) -> Slot:
        p = path + "." + step
        k = steps + "." + step
        s = Slot(step, p, k, _ref(owner), _PENDING)  # weakref.ref hands out the owner's one reference
        self.schema.slots.append(s)
        s.type = self.type_of(t, p, owner, k)
        return s


# A primitive type written as a string is the same immutable node wherever it occurs (its ``raw`` is
# the string itself, nothing changes a type node): sharing it saves an object and a call per leaf.
# Other names (``decimal(P,S)``, text a damaged log holds) are shared too, up to a bound.
_SHARED_PRIMITIVES: dict[str, PrimitiveType] = {}
_NESTED = frozenset({"struct", "array", "map"})
_SHARED_LIMIT = 1024


def _shared_primitive(t: str, category: str) -> PrimitiveType:
    node = PrimitiveType(t, category)
    if len(_SHARED_PRIMITIVES) < _SHARED_LIMIT:
        _SHARED_PRIMITIVES[t] = node
    return node


def parse_schema_json(text: str) -> Schema:
    """Parse ``schemaString`` text (ValueError when it is not JSON)."""
    return parse_schema(json.loads(text))


_PENDING = PrimitiveType(None, "unknown")  # a node's type while its children are being parsed


def _rest(raw: JsonDict, deep: bool, *replaced: str) -> JsonDict:
    """A new dict with ``raw``'s keys in order, its values shared or (``deep``) deep-copied, except
    those under ``replaced``, which the caller is about to set."""
    if not deep:
        return dict(raw)
    return {k: v if k in replaced else copy.deepcopy(v) for k, v in raw.items()}


def _as_dict(raw: object) -> JsonDict:
    """A JSON object as the dict the nodes hold (the same dict: the planner edits it in place); an
    empty one for anything that is not an object."""
    if type(raw) is dict:
        return raw
    return dict(raw) if isinstance(raw, Mapping) else {}


def _alive(up: ReferenceType[Field]) -> Field:
    node = up()
    if node is None:
        raise ReferenceError("the schema this node was parsed into is gone: keep the Schema while using it")
    return node
