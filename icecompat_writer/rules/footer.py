"""Pairing the table schema with a Parquet footer's schema tree, for the file-level rules.

Data files name columns by their *physical* names (PROTOCOL.md "Writer Requirements for Column
Mapping"), lists and maps appear as Parquet's LIST/MAP wrapper groups, and Iceberg reads every node by
its field id. This module walks the Delta schema and the footer side by side and yields, for each
node present in the file, the logical path, the Delta type, the footer node and the id the Delta
metadata says that node must carry. Columns absent from a file are skipped: a missing column reads as
null, which is legal.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from icecompat_writer.facts import ParquetField, ParquetFooter
from icecompat_writer.rules.schema import (
    column_id,
    join_path,
    nested_ids,
    physical_name,
    quote_name,
    type_category,
)

__all__ = ["FooterNode", "walk_footer"]


@dataclass(frozen=True, slots=True)
class FooterNode:
    """One schema node found in a data file: ``expected_id`` is None when Delta assigns it no id."""

    path: str
    type: Any
    node: ParquetField
    expected_id: int | None


def _list_element(group: ParquetField) -> ParquetField | None:
    """The element node of a LIST group, following Parquet's backward-compatibility rules for lists.

    The repeated child is the element itself when it is a primitive, a group of several fields, or a
    one-field group named ``array`` / ``<list>_tuple`` (legacy 2-level lists); otherwise it is the
    middle level of the standard 3-level layout and its single child is the element.
    """
    if len(group.children) != 1:
        return None
    repeated = group.children[0]
    if repeated.physical_type is not None or len(repeated.children) != 1:
        return repeated
    if repeated.name == "array" or repeated.name == group.name + "_tuple":
        return repeated
    return repeated.children[0]


def _map_key_value(group: ParquetField) -> tuple[ParquetField | None, ParquetField | None]:
    if len(group.children) != 1:
        return None, None
    kv = group.children[0]
    if len(kv.children) == 2:
        return kv.children[0], kv.children[1]
    if len(kv.children) == 1:
        return kv.children[0], None
    return None, None


def walk_footer(schema_fields: list[Mapping[str, Any]], footer: ParquetFooter) -> Iterator[FooterNode]:
    """Every schema node that is present in ``footer``, top-level columns matched by physical name."""
    for f in schema_fields:
        node = footer.field(physical_name(f))
        if node is not None:
            yield from _walk_field(f, quote_name(str(f.get("name", ""))), node)


def _walk_field(f: Mapping[str, Any], path: str, node: ParquetField) -> Iterator[FooterNode]:
    t = f.get("type")
    yield FooterNode(path, t, node, column_id(f))
    yield from _walk_type(t, path, node, nested_ids(f), physical_name(f))


def _walk_type(
    t: Any, path: str, node: ParquetField, ids: Mapping[str, Any], key: str
) -> Iterator[FooterNode]:
    cat = type_category(t)
    if node.physical_type is not None:
        return  # a leaf in the file where Delta has a group (or a primitive): nothing below to pair
    if cat == "struct":
        for child in t.get("fields") or ():
            if not isinstance(child, Mapping):
                continue
            cnode = node.child(physical_name(child))
            if cnode is not None:
                yield from _walk_field(child, join_path(path, quote_name(str(child.get("name", "")))), cnode)
    elif cat == "array":
        element = _list_element(node)
        if element is not None:
            yield from _slot(t.get("elementType"), path + ".element", element, ids, key + ".element")
    elif cat == "map":
        k, v = _map_key_value(node)
        if k is not None:
            yield from _slot(t.get("keyType"), path + ".key", k, ids, key + ".key")
        if v is not None:
            yield from _slot(t.get("valueType"), path + ".value", v, ids, key + ".value")


def _slot(t: Any, path: str, node: ParquetField, ids: Mapping[str, Any], key: str) -> Iterator[FooterNode]:
    raw = ids.get(key)
    expected = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
    yield FooterNode(path, t, node, expected)
    yield from _walk_type(t, path, node, ids, key)
