"""Delta schema JSON (the ``schemaString`` format), indexed once so that every rule is a cheap lookup.

Rules never walk the schema themselves: :func:`index_schema` parses it once into the typed model of
:mod:`icecompat_writer.schema` and records every struct field and every nested-id slot (array
elements, map keys and values) with its column path already rendered, plus the sets of type
categories and metadata keys present. With ~40 rules and schemas of 10,000 leaves, walking once
instead of once per rule is what keeps ``validate`` fast.

Column paths, column-mapping keys, type categories and decimal parameters live in
:mod:`icecompat_writer.schema`; the names are re-exported here for the rules that use them.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from icecompat_writer.errors import TableReadError
from icecompat_writer.rules.model import Finding
from icecompat_writer.schema import (
    CM_ID,
    CM_NESTED_IDS,
    CM_PHYSICAL_NAME,
    DataType,
    Field,
    JsonDict,
    JsonObject,
    PartnerAccessor,
    PartnerVisitor,
    Schema,
    Slot,
    StructType,
    child_path,
    contains_struct,
    decimal_params,
    fold_name,
    join_path,
    parse_schema,
    quote_name,
    type_category,
    type_shape,
    type_text,
    visit_with_partner,
)
from icecompat_writer.schema.model import ArrayType, MapType, PrimitiveType
from icecompat_writer.schema.paths import KEY

__all__ = [
    "CM_ID",
    "CM_NESTED_IDS",
    "CM_PHYSICAL_NAME",
    "FieldNode",
    "MalformedSchemaError",
    "SameColumn",
    "SchemaIndex",
    "SchemaNode",
    "SlotNode",
    "TypeNode",
    "cached_index",
    "child_path",
    "clear_index_cache",
    "column_id",
    "contains_struct",
    "decimal_params",
    "field_lookup",
    "field_metadata",
    "fold_name",
    "id_filler",
    "index_model",
    "index_schema",
    "index_schema_string",
    "join_path",
    "matched_fields",
    "nested_ids",
    "physical_name",
    "physical_path",
    "quote_name",
    "remember_index",
    "type_category",
    "type_shape",
    "type_text",
]


class MalformedSchemaError(TableReadError):
    """A ``schemaString`` that is not a Delta schema (not JSON, not a struct, nested beyond reason).

    Only a log can hold one (Spark never writes such a schema); no rule can be decided on it, so it is
    an error instead of an empty schema that every rule would pass.
    """


def id_filler(template: str) -> Callable[[int], str]:
    """``template`` (such as ``col-{id}``) as a function of the id.

    A schema of 10,000 leaves fills it for every field, twice per plan; concatenation is a third of
    the cost of ``str.format``. Templates with other placeholders still go through ``str.format``.
    """
    head, sep, tail = template.partition("{id}")
    if sep and "{" not in head + tail and "}" not in head + tail:
        return lambda cid: head + str(cid) + tail
    return lambda cid: template.format(id=cid)


def field_metadata(f: JsonObject) -> JsonObject:
    md = f.get("metadata")
    return md if (type(md) is dict or isinstance(md, Mapping)) else {}


def physical_name(f: JsonObject) -> str:
    """The physical name of a struct field; its logical name when it has none (PROTOCOL.md)."""
    pn = field_metadata(f).get(CM_PHYSICAL_NAME)
    return pn if isinstance(pn, str) and pn else str(f.get("name", ""))


def column_id(f: JsonObject) -> int | None:
    """The ``delta.columnMapping.id`` of a field when it is an integer (bools are not ids)."""
    v = field_metadata(f).get(CM_ID)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def nested_ids(f: JsonObject) -> JsonObject:
    v = field_metadata(f).get(CM_NESTED_IDS)
    return v if (type(v) is dict or isinstance(v, Mapping)) else {}


# A struct field of an index is the parsed schema's own node: ``column_id``, ``physical_name`` (the
# logical name when there is none, as PROTOCOL.md says) and ``metadata`` are read when the field is
# parsed (or re-read by the planner), ``parent`` is the nearest ancestor struct field and ``type`` the
# parsed type (``type.raw`` its JSON).
FieldNode = Field


@dataclass(slots=True, eq=False)
class TypeNode:
    """One occurrence of a type: a struct field's type, or an array element / map key / map value."""

    path: str
    type: object  # the type's JSON
    category: str
    owner: FieldNode


@dataclass(slots=True, eq=False)
class SlotNode:
    """An array ``element`` or map ``key``/``value``: the places that need nested ids (IcebergCompatV2).

    ``key`` is where the id lives in ``delta.columnMapping.nested.ids`` of ``owner`` (the nearest
    ancestor struct field): the owner's physical name, then the element/key/value steps, dot-joined.
    """

    path: str
    key: str
    type: object  # the type's JSON
    owner: FieldNode


_UNSET = object()


class SchemaIndex:
    """Everything about one schema that rules look up, gathered in a single walk.

    The walk records every struct field and nested-id slot, plus the *set* of type categories and
    metadata keys present. Per-type nodes and per-key field lists are only materialised when a rule
    asks for a category or key that is present, which in a compliant table is almost never: most
    checks are then a set lookup.
    """

    __slots__ = (
        "_by_key", "_id_values", "_ids", "_max_id", "_types", "categories", "complete", "fields", "findings",
        "metadata_keys", "model", "root", "slots", "top",
    )  # fmt: skip

    def __init__(self, root: JsonObject) -> None:
        self.root = root
        self.model: Schema | None = None  # the parsed schema the index was built from
        self.fields: list[FieldNode] = []  # the model's fields (index_model)
        self.slots: list[SlotNode] = []
        self.top: list[FieldNode] = []
        self.categories: set[str] = set()
        self.metadata_keys: set[str] = set()
        self._types: list[TypeNode] | None = None
        self._by_key: dict[str, list[FieldNode]] = {}
        self._ids: list[tuple[int, str]] | None = None
        self._id_values: list[int] | None = None
        self._max_id: object = _UNSET
        # every field has an integer column id and a non-empty string physical name (index_model)
        self.complete = False
        # rule id -> the findings of a rule whose kind reads the schema alone (see evaluate.validate),
        # or whose remaining inputs were decided before (physical_names_unique, past the mode)
        self.findings: dict[str, tuple[Finding, ...]] = {}

    @property
    def types(self) -> list[TypeNode]:
        """Every type occurrence in schema order (built on first use)."""
        if self._types is None:
            out: list[TypeNode] = []
            slot_types: dict[int, list[SlotNode]] = {id(s.owner): [] for s in self.slots}
            for s in self.slots:
                slot_types[id(s.owner)].append(s)
            for f in self.fields:
                out.append(TypeNode(f.path, f.type.raw, type_category(f.type.raw), f))
                for s in slot_types.get(id(f), ()):
                    out.append(TypeNode(s.path, s.type, type_category(s.type), f))
            self._types = out
        return self._types

    def of_categories(self, categories: Iterable[str]) -> list[TypeNode]:
        """Type occurrences whose category is one of ``categories``, in schema order."""
        wanted = set(categories) & self.categories
        if not wanted:
            return []
        return [t for t in self.types if t.category in wanted]

    def fields_with_key(self, key: str) -> list[FieldNode]:
        """Fields whose metadata holds ``key``, in schema order."""
        if key not in self.metadata_keys:
            return []
        hit = self._by_key.get(key)
        if hit is None:
            if key == CM_NESTED_IDS and self.model is not None:  # the parse listed them, in order
                hit = self.model.nested_id_owners
            else:
                hit = [f for f in self.fields if key in f.metadata]
            self._by_key[key] = hit
        return hit

    def with_metadata_keys(self, keys: Iterable[str]) -> list[FieldNode]:
        """Fields whose metadata holds any of ``keys``, in schema order, each once."""
        wanted = set(keys) & self.metadata_keys
        if not wanted:
            return []
        return [f for f in self.fields if not wanted.isdisjoint(f.metadata)]

    def all_ids(self) -> list[tuple[int, str]]:
        """(id, path) for every column id, then every nested id (at its slot's path), in schema order."""
        if self._ids is None:
            out = [(f.column_id, f.path) for f in self.fields if f.column_id is not None]
            slot_path = {(id(s.owner), s.key): s.path for s in self.slots}
            for f in self.fields_with_key(CM_NESTED_IDS):
                ids = f.metadata.get(CM_NESTED_IDS)
                if isinstance(ids, Mapping):
                    for key, value in ids.items():
                        if isinstance(value, int) and not isinstance(value, bool):
                            out.append((value, slot_path.get((id(f), key), f"{f.path} (nested id {key})")))
            self._ids = out
        return self._ids

    def id_values(self) -> list[int]:
        """The ids of :meth:`all_ids` without their paths, in the same order.

        What a range, uniqueness or maximum check needs first; the paths (a tuple per id, ~12,000 for
        a schema of 10,000 leaves) are only made when such a check finds something to report.
        """
        if self._id_values is None:
            if self._ids is not None:
                self._id_values = [v for v, _ in self._ids]
            else:
                if self.model is not None:  # the parse listed them as it read each field's metadata
                    out = list(self.model.column_ids)
                else:
                    out = [f.column_id for f in self.fields if f.column_id is not None]
                for f in self.fields_with_key(CM_NESTED_IDS):
                    ids = f.metadata.get(CM_NESTED_IDS)
                    if type(ids) is dict or isinstance(ids, Mapping):
                        out.extend(v for v in ids.values() if isinstance(v, int) and not isinstance(v, bool))
                self._id_values = out
        return self._id_values

    def max_id(self) -> int | None:
        """The largest column id or nested id (None when there is none)."""
        if self._max_id is _UNSET:
            self._max_id = max(self.id_values(), default=None)
        return self._max_id  # type: ignore[return-value]

    def top_level(self, name: str) -> FieldNode | None:
        """A top-level column by name: exact match first, then case-insensitive (as Delta resolves)."""
        for f in self.top:
            if f.name == name:
                return f
        folded = fold_name(name)
        for f in self.top:
            if fold_name(f.name) == folded:
                return f
        return None


def index_model(model: Schema) -> SchemaIndex:
    """The index of a parsed schema: its fields are the model's own nodes, with the metadata the parse
    (or :meth:`~icecompat_writer.schema.Schema.reread_metadata`) read.

    The planner parses its private copy once, changes field metadata in place (never the shape),
    re-reads it and indexes the same model afterwards, instead of serialising and parsing again.
    Raises :class:`MalformedSchemaError` when some struct's ``fields`` is not a list, or a struct,
    array or map type is written as a bare name (nothing to read its fields or element types from).
    """
    if model.irregular is not None:
        where = f"`{model.irregular}`" if model.irregular else "the schema"
        raise MalformedSchemaError(
            f"the type of {where} is a struct without a list of fields, or an array or map without its types"
        )
    idx = SchemaIndex(model.raw if isinstance(model.raw, Mapping) else {})
    idx.model = model
    idx.categories = set(model.categories)
    idx.metadata_keys = set(model.metadata_keys)
    idx.fields = model.fields
    idx.top = model.top
    idx.complete = model.complete
    idx.slots = [SlotNode(s.path, s.owner.physical_name + s.steps, s.type.raw, s.owner) for s in model.slots]
    return idx


def parse_checked(schema: object) -> Schema:
    """:func:`~icecompat_writer.schema.parse_schema`, with a schema nested beyond reason refused."""
    try:
        return parse_schema(schema)
    except RecursionError:
        raise MalformedSchemaError("the schema is nested too deeply to be checked") from None


def index_schema(schema: object) -> SchemaIndex:
    """Parse a schema's JSON once and index it. The JSON is referenced, not copied: do not mutate it."""
    return index_model(parse_checked(schema if isinstance(schema, Mapping) else {}))


class _IndexCache:
    """A small LRU of parsed schemas, keyed by the ``schemaString``.

    ``plan`` indexes the schema it produces and ``validate`` is then called on that very string (by the
    planner itself and again by the writer), so remembering the last few saves a JSON parse and a walk
    per call. Nothing downstream mutates an index or the JSON it points into, so sharing is safe.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[str, SchemaIndex] = OrderedDict()
        self._lock = threading.Lock()  # the writer and the checker may run in several threads

    def get(self, schema_string: str) -> SchemaIndex:
        if not isinstance(schema_string, str):  # only a damaged log holds anything else
            raise MalformedSchemaError(
                f"the table schema (schemaString) is a {type(schema_string).__name__}, not a JSON string"
            )
        hit = self.peek(schema_string)
        if hit is not None:
            return hit
        index = index_schema(_parse_schema_string(schema_string))
        self.put(schema_string, index)
        return index

    def peek(self, schema_string: str) -> SchemaIndex | None:
        with self._lock:
            hit = self._items.get(schema_string)
            if hit is not None:
                self._items.move_to_end(schema_string)
            return hit

    def put(self, schema_string: str, index: SchemaIndex) -> None:
        with self._lock:
            self._items[schema_string] = index
            self._items.move_to_end(schema_string)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def _parse_schema_string(schema_string: str) -> JsonObject:
    """The parsed ``schemaString``; :class:`MalformedSchemaError` unless it is a JSON struct with fields."""
    try:
        parsed: object = json.loads(schema_string)
    except (ValueError, TypeError, RecursionError) as e:
        raise MalformedSchemaError(f"the table schema (schemaString) is not JSON ({str(e)[:120]})") from None
    if not isinstance(parsed, Mapping) or not isinstance(parsed.get("fields"), list):
        raise MalformedSchemaError("the table schema (schemaString) is not a struct with a list of fields")
    return parsed


_CACHE = _IndexCache(16)


def index_schema_string(schema_string: str) -> SchemaIndex:
    """Parse and index a ``schemaString`` (cached: see :class:`_IndexCache`)."""
    return _CACHE.get(schema_string)


def cached_index(schema_string: str) -> SchemaIndex | None:
    """The cached index of ``schema_string``, if there is one (never parses)."""
    return _CACHE.peek(schema_string)


def clear_index_cache() -> None:
    """Forget every cached index (benchmarks measure cold runs with it)."""
    _CACHE.clear()


def remember_index(schema_string: str, index: SchemaIndex) -> None:
    """Record the index of a schema the caller has already parsed and serialised to ``schema_string``."""
    _CACHE.put(schema_string, index)


def field_lookup(struct: JsonObject | None) -> Callable[[str], JsonObject | None]:
    """Find a struct's field by name as Delta resolves names: exact match first, then case-insensitive."""
    exact: dict[str, JsonObject] = {}
    folded: dict[str, JsonObject] = {}
    fields = struct.get("fields") if isinstance(struct, Mapping) else None
    if isinstance(fields, list | tuple):
        for f in fields:
            if isinstance(f, Mapping):
                name = str(f.get("name", ""))
                exact.setdefault(name, f)
                folded.setdefault(fold_name(name), f)

    def find(name: str) -> JsonObject | None:
        hit = exact.get(name)
        return hit if hit is not None else folded.get(fold_name(name))

    return find


Matched = list[tuple[JsonDict, JsonDict, str]]
SchemaNode = Field | Slot | DataType  # a node of the typed schema, as a partner of another schema's node


class SameColumn(PartnerAccessor[SchemaNode]):
    """Partners by Delta's name resolution (see :func:`field_lookup`), through arrays and maps."""

    def __init__(self) -> None:
        self._lookups: dict[int, tuple[Callable[[str], JsonObject | None], dict[int, Field]]] = {}

    def field_partner(self, partner: SchemaNode, field: Field) -> SchemaNode | None:
        if not isinstance(partner, StructType):
            return None
        hit = self._lookups.get(id(partner))
        if hit is None:
            hit = self._lookups[id(partner)] = (
                field_lookup(partner.raw),
                {id(f.raw): f for f in partner.fields},
            )
        find, nodes = hit
        raw = find(field.name)
        return None if raw is None else nodes.get(id(raw))

    def slot_partner(self, partner: SchemaNode, slot: Slot) -> SchemaNode | None:
        if isinstance(partner, ArrayType):
            return partner.element
        if isinstance(partner, MapType):
            return partner.key if slot.step == KEY else partner.value
        return None

    def type_partner(self, partner: SchemaNode) -> SchemaNode | None:
        return partner.type if isinstance(partner, Field | Slot) else partner


class _Matcher(PartnerVisitor[SchemaNode, Matched]):
    """(new field, previous field, path) in pre-order, descending only where both sides have the same
    kind of type."""

    def descend(self, node: DataType, partner: SchemaNode | None) -> bool:
        return isinstance(partner, DataType) and partner.category == node.category

    def struct(self, struct: StructType, partner: SchemaNode | None, field_results: list[Matched]) -> Matched:
        return [m for r in field_results for m in r]

    def field(self, field: Field, partner: SchemaNode | None, type_result: Matched) -> Matched:
        if not isinstance(partner, Field):
            return []
        return [(field.raw, partner.raw, field.path), *type_result]

    def array(self, array: ArrayType, partner: SchemaNode | None, element_result: Matched | None) -> Matched:
        return element_result or []

    def map(
        self,
        map_type: MapType,
        partner: SchemaNode | None,
        key_result: Matched | None,
        value_result: Matched | None,
    ) -> Matched:
        return (key_result or []) + (value_result or [])

    def primitive(self, primitive: PrimitiveType, partner: SchemaNode | None) -> Matched:
        return []


def matched_fields(new: Schema, previous: Schema) -> Iterator[tuple[JsonDict, JsonDict, str]]:
    """(new field, previous field, path) for every struct field of ``new`` that existed in ``previous``.

    Fields are matched level by level by name (see :func:`field_lookup`), descending through arrays and
    maps only where both sides have the same kind of type. This is how "the same column" is decided
    when a table's schema is replaced or evolved. The fields are the nodes' JSON (``raw``).
    """
    yield from visit_with_partner(new, previous.struct, _Matcher(), SameColumn())


def physical_path(node: FieldNode) -> tuple[str, ...]:
    """The physical names from the root down to ``node`` (stable across renames, unlike the path)."""
    out: list[str] = []
    cur: FieldNode | None = node
    while cur is not None:
        out.append(cur.physical_name)
        cur = cur.parent
    return tuple(reversed(out))
