"""The schema index, column paths, type categories and field matching."""

from __future__ import annotations

import json

import pytest

from icecompat_writer.rules.schema import (
    cached_index,
    field_lookup,
    index_schema,
    index_schema_string,
    matched_fields,
    quote_name,
    type_category,
    type_shape,
    type_text,
)
from icecompat_writer.schema import parse_schema

from .builders import array, field, map_, mapped, struct


@pytest.mark.parametrize(
    ("name", "quoted"),
    [
        ("plain", "plain"),
        ("with space", "with space"),
        ("ünï", "ünï"),
        ("a.b", "`a.b`"),
        ("q`uote", "`q``uote`"),
        ("", "``"),
    ],
)
def test_quote_name(name: str, quoted: str) -> None:
    assert quote_name(name) == quoted


@pytest.mark.parametrize(
    ("t", "category"),
    [
        ("integer", "integer"),
        ("decimal(10,2)", "decimal"),
        ("decimal", "decimal"),
        ("timestamp_ntz", "timestamp_ntz"),
        ("geometry(OGC:CRS84)", "geometry"),
        ("geography(OGC:CRS84, spherical)", "geography"),
        ({"type": "variant"}, "variant"),
        (struct(), "struct"),
        (array("long"), "array"),
        (map_("string", "long"), "map"),
        (42, "unknown"),
    ],
)
def test_type_category(t: object, category: str) -> None:
    assert type_category(t) == category


def test_type_text_names_nested_types() -> None:
    assert type_text(map_("string", array("byte"))) == "map<string, array<byte>>"


SCHEMA = struct(
    field("a.b", struct(field("c", array(struct(field("d", "byte")))))),
    field("m", map_(struct(field("k", "string")), array("long")), mapped(2, "col-m")),
)


def test_index_paths_slots_and_lookups() -> None:
    idx = index_schema(SCHEMA)
    assert [f.path for f in idx.fields] == ["`a.b`", "`a.b`.c", "`a.b`.c.element.d", "m", "m.key.k"]
    assert [(s.path, s.key, s.owner.path) for s in idx.slots] == [
        ("`a.b`.c.element", "c.element", "`a.b`.c"),
        ("m.key", "col-m.key", "m"),
        ("m.value", "col-m.value", "m"),
        ("m.value.element", "col-m.value.element", "m"),
    ]
    assert {"byte", "struct", "array", "map", "string", "long"} == idx.categories
    assert [t.path for t in idx.of_categories(["byte", "long"])] == ["`a.b`.c.element.d", "m.value.element"]
    assert idx.of_categories(["variant"]) == []
    assert [f.path for f in idx.fields_with_key("delta.columnMapping.id")] == ["m"]
    assert idx.all_ids() == [(2, "m")]
    assert idx.top_level("M") is idx.top[1]
    assert idx.top_level("missing") is None


def test_index_tolerates_odd_json() -> None:
    idx = index_schema({"type": "struct", "fields": [1, {"name": 5, "type": "long"}, {"type": "integer"}]})
    assert [f.path for f in idx.fields] == ["5", "``"]


def test_string_index_is_cached() -> None:
    s = json.dumps(SCHEMA)
    first = index_schema_string(s)
    assert index_schema_string(s) is first
    assert cached_index(s) is first
    assert cached_index(s + " ") is None


def test_field_lookup_prefers_exact_then_case_insensitive() -> None:
    find = field_lookup(struct(field("Col", "long"), field("col", "string"), field("Other", "date")))
    assert find("col")["type"] == "string"
    assert find("COL")["type"] == "long"
    assert find("other")["type"] == "date"
    assert find("none") is None


def test_matched_fields_descends_only_through_matching_types() -> None:
    old = struct(field("A", array(struct(field("x", "long")))), field("s", struct(field("y", "long"))))
    new = struct(field("a", array(struct(field("x", "long"), field("new", "long")))), field("s", "string"))
    assert [p for _, _, p in matched_fields(parse_schema(new), parse_schema(old))] == [
        "a",
        "a.element.x",
        "s",
    ]


def test_type_shape_ignores_metadata_only() -> None:
    a = struct(field("k", "string", mapped(1)))
    b = struct(field("k", "string", mapped(7)))
    assert type_shape(a) == type_shape(b)
    assert type_shape(a) != type_shape(struct(field("k", "string", nullable=False)))
    assert type_shape(a) != type_shape(struct(field("K", "string")))
