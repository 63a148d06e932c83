"""The typed schema model, its visitors and the helpers every layer shares."""

from __future__ import annotations

import gc

import pytest

from icecompat_writer.deltalog.actions import Metadata
from icecompat_writer.iceberg.schema import convert_schema
from icecompat_writer.schema import (
    CM_NESTED_IDS,
    MAX_FIELD_ID,
    ArrayType,
    Field,
    MapType,
    PartnerAccessor,
    PartnerVisitor,
    PrimitiveType,
    SchemaVisitor,
    Slot,
    StructType,
    decimal_params,
    iceberg_decimal_params,
    id_in_range,
    parse_schema,
    visit,
    visit_with_partner,
)
from tests.rules.builders import array, field, map_, mapped, struct


def _sample() -> dict:
    return struct(
        field(
            "a.b",
            array(struct(field("x", "long", mapped(2)))),
            mapped(1) | {CM_NESTED_IDS: {"col-1.element": 5}},
        ),
        field("m", map_("string", array("decimal(10,2)")), mapped(3, "p3")),
    )


def test_parse_records_paths_owners_slots_and_categories() -> None:
    schema = parse_schema(_sample())
    assert [f.path for f in schema.fields] == ["`a.b`", "`a.b`.element.x", "m"]
    assert [f.column_id for f in schema.fields] == [1, 2, 3]
    assert schema.fields[1].parent is schema.fields[0]
    assert [(s.path, s.key, s.id) for s in schema.slots] == [
        ("`a.b`.element", "col-1.element", 5),
        ("m.key", "p3.key", None),
        ("m.value", "p3.value", None),
        ("m.value.element", "p3.value.element", None),
    ]
    assert {"array", "struct", "long", "map", "string", "decimal"} == schema.categories
    assert schema.irregular is None


def test_irregular_struct_is_named_not_raised() -> None:
    schema = parse_schema(struct(field("s", {"type": "struct", "fields": {"x": 1}})))
    assert schema.irregular == "s" and [f.path for f in schema.fields] == ["s"]


def test_metadata_is_read_at_parse_and_again_when_asked() -> None:
    raw = _sample()
    schema = parse_schema(raw)
    assert schema.complete and "delta.columnMapping.id" in schema.metadata_keys
    raw["fields"][0]["metadata"]["delta.columnMapping.physicalName"] = "renamed"
    del raw["fields"][1]["metadata"]
    assert schema.slots[0].key == "col-1.element"  # what the parse read
    schema.reread_metadata()
    assert schema.slots[0].key == "renamed.element"
    assert schema.fields[2].column_id is None and schema.fields[2].physical_name == "m"
    assert not schema.complete


class _Leaves(SchemaVisitor[list[str]]):
    def struct(self, struct: StructType, field_results: list[list[str]]) -> list[str]:
        return [p for r in field_results for p in r]

    def field(self, field: Field, type_result: list[str]) -> list[str]:
        return type_result or [field.path]

    def slot(self, slot: Slot, type_result: list[str]) -> list[str]:
        return type_result or [slot.path]

    def array(self, array: ArrayType, element_result: list[str]) -> list[str]:
        return element_result

    def map(self, map_type: MapType, key_result: list[str], value_result: list[str]) -> list[str]:
        return key_result + value_result

    def primitive(self, primitive: PrimitiveType) -> list[str]:
        return []


def test_visitor_hands_results_up_in_schema_order() -> None:
    assert visit(parse_schema(_sample()), _Leaves()) == ["`a.b`.element.x", "m.key", "m.value.element"]


class _ByName(PartnerAccessor[object]):
    def field_partner(self, partner: object, field: Field) -> object | None:
        assert isinstance(partner, StructType)
        return next((f for f in partner.fields if f.name == field.name), None)

    def slot_partner(self, partner: object, slot: Slot) -> object | None:
        if isinstance(partner, ArrayType):
            return partner.element
        return getattr(partner, slot.step, None) if isinstance(partner, MapType) else None

    def type_partner(self, partner: object) -> object | None:
        return partner.type if isinstance(partner, Field | Slot) else partner


class _Shared(PartnerVisitor[object, list[str]]):
    def struct(self, struct: StructType, partner: object | None, field_results: list[list[str]]) -> list[str]:
        return [p for r in field_results for p in r]

    def field(self, field: Field, partner: object | None, type_result: list[str]) -> list[str]:
        return ([field.path] if partner is not None else []) + type_result

    def array(self, array: ArrayType, partner: object | None, element_result: list[str] | None) -> list[str]:
        return element_result or []

    def map(
        self, map_type: MapType, partner: object | None, k: list[str] | None, v: list[str] | None
    ) -> list[str]:
        return (k or []) + (v or [])

    def primitive(self, primitive: PrimitiveType, partner: object | None) -> list[str]:
        return []


def test_partner_visitor_walks_two_schemas_side_by_side() -> None:
    new = parse_schema(_sample())
    old = parse_schema(struct(field("a.b", array(struct(field("x", "long"), field("gone", "long"))))))
    assert visit_with_partner(new, old.struct, _Shared(), _ByName()) == ["`a.b`", "`a.b`.element.x"]


@pytest.mark.parametrize(
    ("text", "delta", "iceberg"),
    [
        ("decimal(10,2)", (10, 2), (10, 2)),
        (" decimal( 5 , 0 ) ", (5, 0), None),
        ("decimal(10, -2)", None, (10, -2)),
        ("decimal(10)", None, None),
    ],
)
def test_decimal_parsing_keeps_each_layers_rules(
    text: str, delta: tuple | None, iceberg: tuple | None
) -> None:
    assert decimal_params(text) == delta
    assert iceberg_decimal_params(text) == iceberg


def test_id_range_is_icebergs() -> None:
    assert id_in_range(1) and id_in_range(MAX_FIELD_ID)
    assert not id_in_range(0) and not id_in_range(MAX_FIELD_ID + 1)


def test_emitter_names_a_dotted_column_as_the_rules_do() -> None:
    schema = struct(field("a.b", struct(field("v", "variant", mapped(2))), mapped(1)))
    _, problems = convert_schema(parse_schema(schema), 2)
    assert [p.path for p in problems] == ["`a.b`.v"]


def test_metadata_schema_is_parsed_once() -> None:
    md = Metadata(schema_string='{"type":"struct","fields":[]}')
    assert md.schema is md.schema
    assert md.schema_model is md.schema_model


def test_parse_lists_structs_ids_and_nested_id_owners_in_schema_order() -> None:
    raw = struct(
        field("m", map_(struct(field("k", "long", mapped(4))), "long"), mapped(1) | {CM_NESTED_IDS: {}}),
        field("s", struct(field("a", array(struct(field("x", "long"))), mapped(3))), mapped(2, "p2")),
    )
    schema = parse_schema(raw)
    assert schema.structs[0] is schema.struct
    assert [st.fields[0].path for st in schema.structs[1:]] == ["s.a", "m.key.k", "s.a.element.x"]
    assert schema.column_ids == [1, 4, 2, 3]  # field order; x has none
    assert [f.path for f in schema.nested_id_owners] == ["m"]
    assert not schema.complete


def test_a_dropped_schema_is_freed_without_the_cyclic_collector() -> None:
    """Parents and owners are weak links: a parsed schema holds no reference cycle, so dropping it frees
    every node at once instead of leaving ~3 objects per field for a collection of the old generations."""
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            schema = parse_schema(_sample())
            assert schema.fields[1].parent is schema.fields[0]  # x, inside a.b's array element
            assert schema.slots[0].owner is schema.fields[0]
            del schema
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_a_field_kept_after_its_schema_is_dropped_says_so() -> None:
    schema = parse_schema(_sample())
    x, element = schema.fields[1], schema.slots[0]
    assert x.path == "`a.b`.element.x" and x.parent is not None and x.parent.name == "a.b"
    del schema
    assert x.path == "`a.b`.element.x" and x.name == "x"  # what the field itself holds stays readable
    with pytest.raises(ReferenceError, match="keep the Schema"):
        _ = x.parent
    with pytest.raises(ReferenceError, match="keep the Schema"):
        _ = element.owner
