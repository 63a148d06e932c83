"""Column-mapping ids, physical names and nested ids, assigned the way Delta stores them.

All functions work in place on a freshly parsed, mutable schema (the planner's private copy) and
return what they changed as ``(path, description)`` pairs (a :class:`Changed`). The order is Delta
Kernel's: first every struct field in pre-order (a field, then what is inside it, then its next
sibling), then every nested element/key/value in pre-order, each new id one above the largest id seen
so far. Ids that exist are never touched: a column keeps its id and physical name for life
(PROTOCOL.md "Column Mapping"), because data files already written refer to them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from icecompat_writer.planning.changes import Changed
from icecompat_writer.rules.schema import SchemaIndex, column_id, id_filler, index_model, matched_fields
from icecompat_writer.schema import (
    CM_ID,
    CM_NESTED_IDS,
    CM_PHYSICAL_NAME,
    Field,
    JsonDict,
    JsonObject,
    Schema,
    is_id,
    parse_schema,
)

__all__ = [
    "Changed",
    "IdCounter",
    "Scan",
    "assign_column_ids",
    "assign_nested_ids",
    "copy_previous_mapping",
    "index_scanned",
    "max_assigned_id",
    "rename_physical",
    "scan",
]

class IdCounter:
    """Hands out ids above the largest one in use (``delta.columnMapping.maxColumnId`` semantics)."""

    def __init__(self, start: int) -> None:
        self.max = start

    def next(self) -> int:
        self.max += 1
        return self.max


_is_id = is_id


@dataclass
class Scan:
    """A mutable schema parsed once, with the facts the fixers need before they change anything
    (largest id, metadata keys present).

    Fixers only change field metadata, never the shape, so the model stays true for the whole plan:
    the nested-id pass and the final index reuse it instead of walking again.
    """

    model: Schema
    max_id: int
    metadata_keys: set[str]
    generated: set[str]  # the physical names of the form ``col-...`` the fields have (see assign_column_ids)

    @property
    def fields(self) -> list[Field]:
        """Every struct field in pre-order; their ``raw`` dicts are the live, mutable schema."""
        return self.model.fields

    @property
    def categories(self) -> set[str]:
        return self.model.categories


def scan(schema: JsonObject) -> Scan:
    """Parse ``schema`` once (the planner's private copy; the fields' dicts stay live and mutable)."""
    model = parse_schema(schema)
    top = 0
    generated: set[str] = set()
    if model.metadata_keys:  # a new table's columns have none: nothing to look for
        for f in model.fields:
            md = f.metadata  # as parsed: only non-empty JSON objects (the fixers replace anything else)
            if not md:
                continue
            cid = f.column_id
            if cid is not None and cid > top:
                top = cid
            nested = md.get(CM_NESTED_IDS)
            if type(nested) is dict or isinstance(nested, Mapping):
                for v in nested.values():
                    if _is_id(v) and v > top:
                        top = v
            pn = md.get(CM_PHYSICAL_NAME)
            if isinstance(pn, str) and pn.startswith("col-"):
                generated.add(pn)
    return Scan(model, top, set(model.metadata_keys), generated)


def index_scanned(schema: JsonObject, shape: Scan) -> SchemaIndex:
    """The index of ``schema`` after the fixers ran, built from the scan's model instead of a new parse.

    Each field's metadata is read again now (the fixers changed it); an irregular schema raises
    :class:`~icecompat_writer.rules.schema.MalformedSchemaError` as indexing it afresh would.
    """
    shape.model.reread_metadata()
    return index_model(shape.model)


def max_assigned_id(schema: JsonObject) -> int:
    """The largest column id or nested id in a schema (0 when there is none)."""
    return scan(schema).max_id


Fields = Sequence[Field]


def _metadata(f: JsonDict) -> JsonDict:
    md = f.get("metadata")
    if not isinstance(md, dict):
        md = {}
        f["metadata"] = md
    return md


def copy_previous_mapping(
    schema: Schema, previous: Schema, previous_mapped: bool
) -> tuple[Changed, dict[int, JsonObject]]:
    """Give columns that already existed their previous id and physical name where they lack them.

    Fields are matched by name (exact, then case-insensitive) level by level. When the previous table
    had no column mapping, its data files name columns by their logical names, so that name becomes
    the physical name (ids are then new). Returns the changes and, keyed by ``id()`` of each new field
    dict, the previous field it matched (the nested-id pass reuses the matching).
    """
    changed = Changed()
    matches: dict[int, JsonObject] = {}
    for new, old, path in matched_fields(schema, previous):
        matches[id(new)] = old
        new_md = new.get("metadata")
        md = new_md if isinstance(new_md, dict) else None
        has_id = md is not None and _is_id(md.get(CM_ID))
        has_pn = (
            md is not None and isinstance(md.get(CM_PHYSICAL_NAME), str) and bool(md.get(CM_PHYSICAL_NAME))
        )
        parts: list[str] = []
        if previous_mapped:
            old_id = column_id(old)
            old_md = old.get("metadata")
            old_pn = old_md.get(CM_PHYSICAL_NAME) if isinstance(old_md, Mapping) else None
            if not has_id and old_id is not None:
                _metadata(new)[CM_ID] = old_id
                parts.append(f"id {old_id}")
            if not has_pn and isinstance(old_pn, str) and old_pn:
                _metadata(new)[CM_PHYSICAL_NAME] = old_pn
                parts.append(f"physical name {old_pn}")
        elif not has_pn:
            old_name = str(old.get("name", ""))
            _metadata(new)[CM_PHYSICAL_NAME] = old_name
            parts.append(f"physical name {old_name} (the name its data files use)")
        if parts:
            changed.add(path, "kept the existing column's " + " and ".join(parts))
    return changed, matches


def assign_column_ids(
    fields: Fields,
    ids: IdCounter,
    *,
    taken: set[str] | None = None,
    kept: list[Field] | None = None,
) -> Changed:
    """Give every field without one a fresh id, and a physical name ``col-<id>`` where it has none.

    An id whose ``col-<id>`` a field already has as its physical name (a column named ``col-3`` in a
    table that had no column mapping keeps that name for its data files) is skipped, so that a new
    column never shares a physical name with another. ``taken``: those names, when the caller knows
    them (:attr:`Scan.generated` of a schema nothing renamed since); ``kept``, when given, receives
    every field whose physical name is not one this call made ``col-<its id>``.
    """
    changed = Changed()
    add_path, add_what = changed.paths.append, changed.whats.append
    keep = kept.append if kept is not None else None
    id_is, then_name = CM_ID + "=", ", " + CM_PHYSICAL_NAME + "=col-"  # one f-string: half of "+" chains
    top = ids.max  # handed out locally (one attribute write at the end instead of a call per field)
    if taken is None:
        taken = _generated_names_in_use(fields)
    for field in fields:
        f = field.raw
        md = f.get("metadata")
        if type(md) is not dict:
            md = _metadata(f)
        if md:  # empty (a new column, the common case): neither an id nor a physical name
            cid = md.get(CM_ID)
            pn = md.get(CM_PHYSICAL_NAME)
            has_pn = pn != "" and isinstance(pn, str)
            if cid is not None and _is_id(cid):
                if not has_pn:
                    pn = md[CM_PHYSICAL_NAME] = "col-" + str(cid)
                    add_path(field.path)
                    add_what(CM_PHYSICAL_NAME + "=" + pn)
                elif keep is not None:
                    keep(field)
                continue
            if has_pn:
                top += 1
                md[CM_ID] = top
                add_path(field.path)
                add_what(f"{CM_ID}={top}")
                if keep is not None:
                    keep(field)
                continue
        top += 1
        text = str(top)
        if taken:
            while "col-" + text in taken:
                top += 1
                text = str(top)
        md[CM_ID] = top
        md[CM_PHYSICAL_NAME] = f"col-{text}"
        add_path(field.path)
        add_what(f"{id_is}{text}{then_name}{text}")
    ids.max = top
    return changed


def _generated_names_in_use(fields: Fields) -> set[str]:
    """The physical names of the form ``col-...`` the fields already have."""
    out: set[str] = set()
    for field in fields:
        md = field.raw.get("metadata")
        pn = md.get(CM_PHYSICAL_NAME) if isinstance(md, dict) else None
        if isinstance(pn, str) and pn.startswith("col-"):
            out.add(pn)
    return out


def rename_physical(fields: Fields, template: str, keep: Callable[[JsonDict], bool]) -> Changed:
    """Set the physical name of every field ``keep`` does not protect to ``template`` filled with its id.

    Only columns that have no data yet may be renamed physically; ``keep`` says which ones do.
    """
    changed = Changed()
    fill = id_filler(template)
    for field in fields:
        f = field.raw
        md = f.get("metadata")
        if not isinstance(md, dict) or keep(f):
            continue
        cid = md.get(CM_ID)
        if not _is_id(cid):
            continue
        want = fill(cid)
        if md.get(CM_PHYSICAL_NAME) != want:
            md[CM_PHYSICAL_NAME] = want
            changed.add(field.path, f"{CM_PHYSICAL_NAME}={want}")
    return changed


def assign_nested_ids(shape: Scan, ids: IdCounter, matches: Mapping[int, JsonObject]) -> Changed:
    """Give every array element and map key/value an id where it has none, stored as PROTOCOL.md shows.

    The id goes into ``delta.columnMapping.nested.ids`` of the nearest ancestor struct field, keyed by
    that field's physical name followed by the element/key/value steps. A column that existed before
    gets back the nested id it had under the same key. ``shape`` is the scan of the schema; its slots
    are in pre-order, which is the order new ids are handed out in.
    """
    changed = Changed()
    for slot in shape.model.slots:
        owner = slot.owner
        f, field_path, slot_path = owner.raw, owner.path, slot.path
        md = f.get("metadata")  # read now: the fixers before this one named the owner
        pn = md.get(CM_PHYSICAL_NAME) if type(md) is dict or isinstance(md, Mapping) else None
        key = (pn if isinstance(pn, str) and pn else owner.name) + slot.steps
        nested = md.get(CM_NESTED_IDS) if isinstance(md, dict) else None
        if nested is not None and (type(nested) is dict or isinstance(nested, Mapping)):
            if _is_id(nested.get(key)):
                continue
        old = matches.get(id(f))
        reuse = None
        if old is not None:  # a column the previous table had: its nested id under the same key
            old_md = old.get("metadata")
            if type(old_md) is dict or isinstance(old_md, Mapping):
                old_ids = old_md.get(CM_NESTED_IDS)
                if type(old_ids) is dict or isinstance(old_ids, Mapping):
                    reuse = old_ids.get(key)
        value = reuse if _is_id(reuse) else ids.next()
        md = _metadata(f)
        if not isinstance(nested, dict):
            nested = dict(nested) if (type(nested) is dict or isinstance(nested, Mapping)) else {}
            md[CM_NESTED_IDS] = nested
        nested[key] = value
        how = "kept the existing nested id" if value is reuse else "assigned nested id"
        changed.add(slot_path, f"{how} {value} under {key!r} on `{field_path}`")
    return changed
