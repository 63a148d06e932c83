"""Delta schema JSON (the ``schemaString`` format), indexed once so that every rule is a cheap lookup.

Rules never walk the schema themselves: :func:`index_schema` walks it once and records every struct
field and every nested-id slot (array elements, map keys and values) with its column path already
rendered, plus the sets of type categories and metadata keys present. With ~40 rules and schemas of
10,000 leaves, walking once instead of once per rule is what keeps ``validate`` fast.

Paths use logical names joined by dots with ``element``/``key``/``value`` for the nested levels
(PROTOCOL.md "Field Path"); a name containing a dot or a backtick (or an empty name) is quoted with
backticks, backticks doubled, so that every path reads back unambiguously.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from icecompat_writer.errors import TableReadError

__all__ = [
    "CM_ID",
    "CM_NESTED_IDS",
    "CM_PHYSICAL_NAME",
    "FieldNode",
    "MalformedSchemaError",
    "SchemaIndex",
    "ShapeSlot",
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
    "index_from_shape",
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

CM_ID = "delta.columnMapping.id"
CM_PHYSICAL_NAME = "delta.columnMapping.physicalName"
CM_NESTED_IDS = "delta.columnMapping.nested.ids"

_COMPLEX = frozenset({"struct", "array", "map"})


class MalformedSchemaError(TableReadError):
    """A ``schemaString`` that is not a Delta schema (not JSON, not a struct, nested beyond reason).

    Only a log can hold one (Spark never writes such a schema); no rule can be decided on it, so it is
    an error instead of an empty schema that every rule would pass.
    """


def fold_name(name: str) -> str:
    """The key under which Delta matches column names case-insensitively.

    Delta's schema merge compares ``name.toLowerCase(Locale.ROOT)``: Unicode's full lowercase
    mapping, which ``str.lower`` implements too. ``str.casefold`` folds further (``ß`` and ``SS``
    become one name) and would join columns that Delta keeps apart.
    """
    return name.lower()


def quote_name(name: str) -> str:
    """One path segment: the name itself, or backtick-quoted when it holds a dot/backtick or is empty."""
    if name and "." not in name and "`" not in name:
        return name
    return "`" + name.replace("`", "``") + "`"


def join_path(parent: str, segment: str) -> str:
    return segment if not parent else parent + "." + segment


def child_path(parent: str, name: Any) -> str:
    """The path of struct field ``name`` (any JSON value; text is what counts) below ``parent``."""
    if not isinstance(name, str):
        name = str(name)
    return join_path(parent, quote_name(name))


_DECIMAL_TYPE = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")


def decimal_params(t: Any) -> tuple[int, int] | None:
    """``(precision, scale)`` of a Delta ``decimal(P,S)`` type, else None."""
    m = _DECIMAL_TYPE.fullmatch(t.strip()) if isinstance(t, str) else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def type_category(t: Any) -> str:
    """The allow-list name of a Delta type: ``decimal(10,2)`` -> ``decimal``, a struct -> ``struct``.

    Primitive names are Delta's own (``integer``, ``timestamp_ntz``, ``variant``, ...). Anything not
    recognisable comes back as its text so that allow-lists refuse it instead of crashing on it.
    """
    if isinstance(t, str):
        if t in _SIMPLE:  # most leaves: one set lookup instead of three prefix tests
            return t
        if t.startswith("decimal"):
            return "decimal"
        if t.startswith("geometry"):
            return "geometry"
        if t.startswith("geography"):
            return "geography"
        return t
    if type(t) is dict or isinstance(t, Mapping):
        inner = t.get("type")
        if isinstance(inner, str):
            return inner if inner in _COMPLEX else type_category(inner)
    return "unknown"


def type_text(t: Any) -> str:
    """A short human form of a type for messages: primitives verbatim, complex types by their kind."""
    if isinstance(t, str):
        return t
    cat = type_category(t)
    if cat == "array":
        return f"array<{type_text(t.get('elementType'))}>"
    if cat == "map":
        return f"map<{type_text(t.get('keyType'))}, {type_text(t.get('valueType'))}>"
    if cat == "struct":
        inner = ", ".join(
            f"{quote_name(str(f.get('name', '')))}: {type_text(f.get('type'))}"
            for f in t.get("fields") or ()
            if isinstance(f, Mapping)
        )
        return f"struct<{inner}>"
    return cat


def id_filler(template: str) -> Callable[[int], str]:
    """``template`` (such as ``col-{id}``) as a function of the id.

    A schema of 10,000 leaves fills it for every field, twice per plan; concatenation is a third of
    the cost of ``str.format``. Templates with other placeholders still go through ``str.format``.
    """
    head, sep, tail = template.partition("{id}")
    if sep and "{" not in head + tail and "}" not in head + tail:
        return lambda cid: head + str(cid) + tail
    return lambda cid: template.format(id=cid)


def field_metadata(f: Mapping[str, Any]) -> Mapping[str, Any]:
    md = f.get("metadata")
    return md if (type(md) is dict or isinstance(md, Mapping)) else {}


def physical_name(f: Mapping[str, Any]) -> str:
    """The physical name of a struct field; its logical name when it has none (PROTOCOL.md)."""
    pn = field_metadata(f).get(CM_PHYSICAL_NAME)
    return pn if isinstance(pn, str) and pn else str(f.get("name", ""))


def column_id(f: Mapping[str, Any]) -> int | None:
    """The ``delta.columnMapping.id`` of a field when it is an integer (bools are not ids)."""
    v = field_metadata(f).get(CM_ID)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def nested_ids(f: Mapping[str, Any]) -> Mapping[str, Any]:
    v = field_metadata(f).get(CM_NESTED_IDS)
    return v if (type(v) is dict or isinstance(v, Mapping)) else {}


@dataclass(slots=True, eq=False)
class FieldNode:
    """A struct field anywhere in the schema (top level, inside structs, arrays or maps).

    ``column_id`` and ``physical_name`` are read once when the index is built (the physical name falls
    back to the logical name, as PROTOCOL.md says); ``parent`` is the nearest ancestor struct field.
    """

    path: str
    name: str
    raw: Mapping[str, Any]
    type: Any
    parent: FieldNode | None
    metadata: Mapping[str, Any]
    column_id: int | None
    physical_name: str


@dataclass(slots=True, eq=False)
class TypeNode:
    """One occurrence of a type: a struct field's type, or an array element / map key / map value."""

    path: str
    type: Any
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
    type: Any
    owner: FieldNode


class SchemaIndex:
    """Everything about one schema that rules look up, gathered in a single walk.

    The walk records every struct field and nested-id slot, plus the *set* of type categories and
    metadata keys present. Per-type nodes and per-key field lists are only materialised when a rule
    asks for a category or key that is present, which in a compliant table is almost never: most
    checks are then a set lookup.
    """

    __slots__ = ("_by_key", "_ids", "_types", "categories", "fields", "metadata_keys", "root", "slots", "top")

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.fields: list[FieldNode] = []
        self.slots: list[SlotNode] = []
        self.top: list[FieldNode] = []
        self.categories: set[str] = set()
        self.metadata_keys: set[str] = set()
        self._types: list[TypeNode] | None = None
        self._by_key: dict[str, list[FieldNode]] = {}
        self._ids: list[tuple[int, str]] | None = None

    @property
    def types(self) -> list[TypeNode]:
        """Every type occurrence in schema order (built on first use)."""
        if self._types is None:
            out: list[TypeNode] = []
            slot_types = {id(s.owner): [] for s in self.slots}
            for s in self.slots:
                slot_types[id(s.owner)].append(s)
            for f in self.fields:
                out.append(TypeNode(f.path, f.type, type_category(f.type), f))
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


_NO_METADATA: Mapping[str, Any] = MappingProxyType({})


def _field_node(idx: SchemaIndex, f: Mapping[str, Any], path: str, parent: FieldNode | None) -> FieldNode:
    """Record struct field ``f`` (at ``path``) in ``idx``: its id and physical name read once, its
    metadata keys added to the index's set."""
    name = f.get("name", "")
    if not isinstance(name, str):
        name = str(name)
    md = f.get("metadata")
    if (type(md) is dict or isinstance(md, Mapping)) and md:
        idx.metadata_keys.update(md)
        cid = md.get(CM_ID)
        if not isinstance(cid, int) or isinstance(cid, bool):
            cid = None
        pn = md.get(CM_PHYSICAL_NAME)
        if not isinstance(pn, str) or not pn:
            pn = name
    else:
        md, cid, pn = _NO_METADATA, None, name
    node = FieldNode(path, name, f, f.get("type"), parent, md, cid, pn)
    idx.fields.append(node)
    if parent is None:
        idx.top.append(node)
    return node


def index_schema(schema: Mapping[str, Any]) -> SchemaIndex:
    """Walk a parsed schema once and index it. The schema is referenced, not copied: do not mutate it."""
    idx = SchemaIndex(schema)
    slots_out = idx.slots
    cats = idx.categories

    def walk_struct(struct: Mapping[str, Any], parent_path: str, parent: FieldNode | None) -> None:
        fields = struct.get("fields")
        if fields is not None and not isinstance(fields, list):
            where = f"struct `{parent_path}`" if parent_path else "the schema"
            raise MalformedSchemaError(f"the fields of {where} are not a list ({type(fields).__name__})")
        for f in fields or ():
            if not (type(f) is dict or isinstance(f, Mapping)):
                continue
            node = _field_node(idx, f, child_path(parent_path, f.get("name", "")), parent)
            walk_type(node.type, node.path, node, node.physical_name)

    def walk_type(t: Any, path: str, owner: FieldNode, slot_prefix: str) -> None:
        cat = t if isinstance(t, str) and t in _SIMPLE else type_category(t)
        cats.add(cat)
        if cat == "struct":
            walk_struct(t, path, owner)
        elif cat == "array":
            p = path + ".element"
            k = slot_prefix + ".element"
            et = t.get("elementType")
            slots_out.append(SlotNode(p, k, et, owner))
            walk_type(et, p, owner, k)
        elif cat == "map":
            for step, sub in (("key", "keyType"), ("value", "valueType")):
                p = path + "." + step
                k = slot_prefix + "." + step
                st = t.get(sub)
                slots_out.append(SlotNode(p, k, st, owner))
                walk_type(st, p, owner, k)

    try:
        walk_struct(schema if isinstance(schema, Mapping) else {}, "", None)
    except RecursionError:
        raise MalformedSchemaError("the schema is nested too deeply to be checked") from None
    return idx


# An array element or map key/value of a known walk: (position of the nearest ancestor struct field
# among the walk's fields, the element/key/value steps below that field such as ``.value.element``,
# the slot's column path, the slot's type).
ShapeSlot = tuple[int, str, str, Any]


def index_from_shape(
    root: Mapping[str, Any],
    fields: Iterable[tuple[Mapping[str, Any], str]],
    parents: Iterable[int],
    slots: Iterable[ShapeSlot],
    categories: set[str],
) -> SchemaIndex:
    """The index of a schema whose walk is already known, reading each field's metadata now.

    The planner walks its copy of the schema once before the fixers change field metadata (never the
    shape); building the final index from that walk costs a third of walking again. ``fields`` are
    (struct field, path) in pre-order, ``parents`` the position of each one's nearest ancestor struct
    field (-1 at the top), ``slots`` every array element and map key/value in pre-order,
    ``categories`` every type category.
    """
    idx = SchemaIndex(root)
    idx.categories = set(categories)
    nodes = idx.fields
    for (f, path), parent_i in zip(fields, parents, strict=True):
        _field_node(idx, f, path, nodes[parent_i] if parent_i >= 0 else None)
    idx.slots = [SlotNode(p, nodes[o].physical_name + steps, t, nodes[o]) for o, steps, p, t in slots]
    return idx


# Primitive names whose category is the name itself (skips type_category's prefix tests in the walk).
_SIMPLE = frozenset(
    {
        "byte", "short", "integer", "long", "float", "double", "string", "binary", "boolean", "date",
        "timestamp", "timestamp_ntz", "variant", "void",
    }
)  # fmt: skip


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


def _parse_schema_string(schema_string: str) -> Mapping[str, Any]:
    """The parsed ``schemaString``; :class:`MalformedSchemaError` unless it is a JSON struct with fields."""
    try:
        parsed = json.loads(schema_string)
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


def field_lookup(struct: Mapping[str, Any] | None) -> Callable[[str], Mapping[str, Any] | None]:
    """Find a struct's field by name as Delta resolves names: exact match first, then case-insensitive."""
    exact: dict[str, Mapping[str, Any]] = {}
    folded: dict[str, Mapping[str, Any]] = {}
    if isinstance(struct, Mapping):
        for f in struct.get("fields") or ():
            if isinstance(f, Mapping):
                name = str(f.get("name", ""))
                exact.setdefault(name, f)
                folded.setdefault(fold_name(name), f)

    def find(name: str) -> Mapping[str, Any] | None:
        hit = exact.get(name)
        return hit if hit is not None else folded.get(fold_name(name))

    return find


def matched_fields(
    new: Mapping[str, Any], previous: Mapping[str, Any], parent_path: str = ""
) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any], str]]:
    """(new field, previous field, path) for every struct field of ``new`` that existed in ``previous``.

    Fields are matched level by level by name (see :func:`field_lookup`), descending through arrays and
    maps only where both sides have the same kind of type. This is how "the same column" is decided
    when a table's schema is replaced or evolved.
    """
    find = field_lookup(previous)
    for f in new.get("fields") or ():
        if not isinstance(f, Mapping):
            continue
        name = str(f.get("name", ""))
        p = find(name)
        if p is None:
            continue
        path = join_path(parent_path, quote_name(name))
        yield f, p, path
        yield from _matched_types(f.get("type"), p.get("type"), path)


def _matched_types(t: Any, pt: Any, path: str) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any], str]]:
    cat = type_category(t)
    if cat != type_category(pt):
        return
    if cat == "struct":
        yield from matched_fields(t, pt, path)
    elif cat == "array":
        yield from _matched_types(t.get("elementType"), pt.get("elementType"), path + ".element")
    elif cat == "map":
        yield from _matched_types(t.get("keyType"), pt.get("keyType"), path + ".key")
        yield from _matched_types(t.get("valueType"), pt.get("valueType"), path + ".value")


def type_shape(t: Any) -> Any:
    """A type with all field metadata dropped: names, nullability and nested types only.

    Used to decide whether a schema "changed" where ids and comments do not count (map keys).
    """
    cat = type_category(t)
    if cat == "struct":
        return (
            "struct",
            tuple(
                (str(f.get("name", "")), bool(f.get("nullable", True)), type_shape(f.get("type")))
                for f in t.get("fields") or ()
                if isinstance(f, Mapping)
            ),
        )
    if cat == "array":
        return ("array", bool(t.get("containsNull", True)), type_shape(t.get("elementType")))
    if cat == "map":
        return (
            "map",
            type_shape(t.get("keyType")),
            type_shape(t.get("valueType")),
            bool(t.get("valueContainsNull", True)),
        )
    return t if isinstance(t, str) else cat


def contains_struct(t: Any) -> bool:
    cat = type_category(t)
    if cat == "struct":
        return True
    if cat == "array":
        return contains_struct(t.get("elementType"))
    if cat == "map":
        return contains_struct(t.get("keyType")) or contains_struct(t.get("valueType"))
    return False


def physical_path(node: FieldNode) -> tuple[str, ...]:
    """The physical names from the root down to ``node`` (stable across renames, unlike the path)."""
    out: list[str] = []
    cur: FieldNode | None = node
    while cur is not None:
        out.append(cur.physical_name)
        cur = cur.parent
    return tuple(reversed(out))
