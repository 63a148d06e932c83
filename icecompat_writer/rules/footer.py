"""Pairing the table schema with a Parquet footer's schema tree, for the file-level rules.

Data files name columns by their *physical* names (PROTOCOL.md "Writer Requirements for Column
Mapping"), lists and maps appear as Parquet's LIST/MAP wrapper groups, and Iceberg reads every node by
its field id. This module visits the Delta schema with the footer as its partner and yields, for each
node present in the file, the logical path, the Delta type, the footer node and the id the Delta
metadata says that node must carry. Columns absent from a file are skipped: a missing column reads as
null, which is legal.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from icecompat_writer.facts import ParquetField, ParquetFooter
from icecompat_writer.schema import (
    ELEMENT,
    KEY,
    ArrayType,
    DataType,
    Field,
    JsonObject,
    MapType,
    PartnerAccessor,
    PartnerVisitor,
    PrimitiveType,
    Schema,
    Slot,
    StructType,
    parse_schema,
    visit_with_partner,
)

__all__ = ["FooterNode", "walk_footer"]


@dataclass(frozen=True, slots=True)
class FooterNode:
    """One schema node found in a data file: ``expected_id`` is None when Delta assigns it no id."""

    path: str
    type: object  # the type's JSON
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


_Node = ParquetField | ParquetFooter  # the footer itself stands for the top-level struct


class _FooterPartner(PartnerAccessor[_Node]):
    """Footer nodes by physical name; elements, keys and values through Parquet's LIST/MAP groups."""

    def field_partner(self, partner: _Node, field: Field) -> _Node | None:
        if isinstance(partner, ParquetFooter):
            return partner.field(field.physical_name)
        return partner.child(field.physical_name)

    def slot_partner(self, partner: _Node, slot: Slot) -> _Node | None:
        if not isinstance(partner, ParquetField):
            return None
        if slot.step == ELEMENT:
            return _list_element(partner)
        key, value = _map_key_value(partner)
        return key if slot.step == KEY else value


class _Pairing(PartnerVisitor[_Node, list[FooterNode]]):
    def descend(self, node: DataType, partner: _Node | None) -> bool:
        # a leaf in the file where Delta has a group: nothing below to pair
        return isinstance(partner, ParquetFooter) or (partner is not None and partner.physical_type is None)

    def struct(
        self, struct: StructType, partner: _Node | None, field_results: list[list[FooterNode]]
    ) -> list[FooterNode]:
        return [n for r in field_results for n in r]

    def field(self, field: Field, partner: _Node | None, type_result: list[FooterNode]) -> list[FooterNode]:
        if not isinstance(partner, ParquetField):
            return []
        return [FooterNode(field.path, field.raw.get("type"), partner, field.column_id), *type_result]

    def slot(self, slot: Slot, partner: _Node | None, type_result: list[FooterNode]) -> list[FooterNode]:
        if not isinstance(partner, ParquetField):
            return []
        return [FooterNode(slot.path, slot.type.raw, partner, slot.id), *type_result]

    def array(
        self, array: ArrayType, partner: _Node | None, element_result: list[FooterNode] | None
    ) -> list[FooterNode]:
        return element_result or []

    def map(
        self,
        map_type: MapType,
        partner: _Node | None,
        key_result: list[FooterNode] | None,
        value_result: list[FooterNode] | None,
    ) -> list[FooterNode]:
        return (key_result or []) + (value_result or [])

    def primitive(self, primitive: PrimitiveType, partner: _Node | None) -> list[FooterNode]:
        return []


def walk_footer(schema: Schema | Sequence[JsonObject], footer: ParquetFooter) -> Iterator[FooterNode]:
    """Every schema node that is present in ``footer``, in schema order, top-level columns matched by
    physical name. ``schema`` is a parsed schema or the list of its top-level fields' JSON."""
    model = schema if isinstance(schema, Schema) else parse_schema({"fields": list(schema)})
    yield from visit_with_partner(model, footer, _Pairing(), _FooterPartner())
