"""Visitors over the typed schema: one schema, or one schema walked side by side with a partner.

A :class:`SchemaVisitor` says what each kind of node becomes given what its children became
(post-order results); :func:`visit` walks the nodes and hands the results up. ``before_*``/``after_*``
hooks run around each field and slot for visitors that keep state on the way down.

A :class:`PartnerVisitor` receives, with every node, the matching node of a second structure (the
previous table schema, a Parquet footer's schema tree, ...). A :class:`PartnerAccessor` says how to
find a child's partner in that structure; a node whose partner is missing is visited with ``None``
and :meth:`PartnerVisitor.descend` decides whether it is worth going further down.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Generic, TypeVar

from icecompat_writer.schema.model import (
    ArrayType,
    DataType,
    Field,
    MapType,
    PrimitiveType,
    Schema,
    Slot,
    StructType,
)

__all__ = ["PartnerAccessor", "PartnerVisitor", "SchemaVisitor", "visit", "visit_with_partner"]

T = TypeVar("T")
P = TypeVar("P")


class SchemaVisitor(ABC, Generic[T]):
    """What each node of a schema becomes, from what its children became."""

    def before_field(self, field: Field) -> None:
        """Called before ``field``'s type is visited."""

    def after_field(self, field: Field) -> None:
        """Called after ``field``'s type was visited."""

    def before_slot(self, slot: Slot) -> None:
        """Called before ``slot``'s type is visited."""

    def after_slot(self, slot: Slot) -> None:
        """Called after ``slot``'s type was visited."""

    def schema(self, schema: Schema, struct_result: T) -> T:
        return struct_result

    @abstractmethod
    def struct(self, struct: StructType, field_results: list[T]) -> T: ...

    @abstractmethod
    def field(self, field: Field, type_result: T) -> T: ...

    def slot(self, slot: Slot, type_result: T) -> T:
        """An array element or map key/value; by default what its type became."""
        return type_result

    @abstractmethod
    def array(self, array: ArrayType, element_result: T) -> T: ...

    @abstractmethod
    def map(self, map_type: MapType, key_result: T, value_result: T) -> T: ...

    @abstractmethod
    def primitive(self, primitive: PrimitiveType) -> T: ...


def visit(node: Schema | DataType | Field, visitor: SchemaVisitor[T]) -> T:
    """Walk ``node`` depth-first and return what ``visitor`` made of it."""
    if isinstance(node, Schema):
        return visitor.schema(node, _visit_type(node.struct, visitor))
    if isinstance(node, Field):
        return _visit_field(node, visitor)
    return _visit_type(node, visitor)


def _visit_field(f: Field, visitor: SchemaVisitor[T]) -> T:
    visitor.before_field(f)
    try:
        result = _visit_type(f.type, visitor)
    finally:
        visitor.after_field(f)
    return visitor.field(f, result)


def _visit_slot(s: Slot, visitor: SchemaVisitor[T]) -> T:
    visitor.before_slot(s)
    try:
        result = _visit_type(s.type, visitor)
    finally:
        visitor.after_slot(s)
    return visitor.slot(s, result)


def _visit_type(t: DataType, visitor: SchemaVisitor[T]) -> T:
    if isinstance(t, StructType):
        return visitor.struct(t, [_visit_field(f, visitor) for f in t.fields])
    if isinstance(t, ArrayType):
        return visitor.array(t, _visit_slot(t.element, visitor))
    if isinstance(t, MapType):
        k = _visit_slot(t.key, visitor)
        return visitor.map(t, k, _visit_slot(t.value, visitor))
    assert isinstance(t, PrimitiveType)
    return visitor.primitive(t)


class PartnerAccessor(ABC, Generic[P]):
    """How to find, in the partner structure, what matches a child of the schema being visited.

    ``partner`` is always the partner of the enclosing *type* (a struct for fields, an array or map
    for slots); the result is the partner of the field or slot, and :meth:`type_partner` gives the
    partner of that field's or slot's type (the same object when the structure does not distinguish).
    """

    @abstractmethod
    def field_partner(self, partner: P, field: Field) -> P | None: ...

    @abstractmethod
    def slot_partner(self, partner: P, slot: Slot) -> P | None: ...

    def type_partner(self, partner: P) -> P | None:
        return partner


class PartnerVisitor(ABC, Generic[P, T]):
    """What each node becomes given its partner (None when the partner structure has no match)."""

    def descend(self, node: DataType, partner: P | None) -> bool:
        """Whether to visit the children of ``node``; by default only where there is a partner."""
        return partner is not None

    @abstractmethod
    def struct(self, struct: StructType, partner: P | None, field_results: list[T]) -> T: ...

    @abstractmethod
    def field(self, field: Field, partner: P | None, type_result: T) -> T: ...

    def slot(self, slot: Slot, partner: P | None, type_result: T) -> T:
        return type_result

    @abstractmethod
    def array(self, array: ArrayType, partner: P | None, element_result: T | None) -> T: ...

    @abstractmethod
    def map(
        self, map_type: MapType, partner: P | None, key_result: T | None, value_result: T | None
    ) -> T: ...

    @abstractmethod
    def primitive(self, primitive: PrimitiveType, partner: P | None) -> T: ...


def visit_with_partner(
    node: Schema | DataType,
    partner: P | None,
    visitor: PartnerVisitor[P, T],
    accessor: PartnerAccessor[P],
) -> T:
    """Walk ``node`` and ``partner`` side by side; return what ``visitor`` made of ``node``.

    Children of a node that :meth:`PartnerVisitor.descend` refuses are not visited: a struct then
    gets no field results and an array or map ``None`` for its slots.
    """
    t = node.struct if isinstance(node, Schema) else node
    return _partner_type(t, partner, visitor, accessor)


def _partner_type(t: DataType, partner: P | None, v: PartnerVisitor[P, T], acc: PartnerAccessor[P]) -> T:
    if isinstance(t, PrimitiveType):
        return v.primitive(t, partner)
    down = v.descend(t, partner)
    if isinstance(t, StructType):
        results: list[T] = []
        if down:
            for f in t.fields:
                fp = acc.field_partner(partner, f) if partner is not None else None
                tp = acc.type_partner(fp) if fp is not None else None
                results.append(v.field(f, fp, _partner_type(f.type, tp, v, acc)))
        return v.struct(t, partner, results)
    if isinstance(t, ArrayType):
        return v.array(t, partner, _partner_slot(t.element, partner, v, acc) if down else None)
    assert isinstance(t, MapType)
    if not down:
        return v.map(t, partner, None, None)
    k = _partner_slot(t.key, partner, v, acc)
    return v.map(t, partner, k, _partner_slot(t.value, partner, v, acc))


def _partner_slot(s: Slot, partner: P | None, v: PartnerVisitor[P, T], acc: PartnerAccessor[P]) -> T:
    sp = acc.slot_partner(partner, s) if partner is not None else None
    tp = acc.type_partner(sp) if sp is not None else None
    return v.slot(s, sp, _partner_type(s.type, tp, v, acc))
