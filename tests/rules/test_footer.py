"""Pairing schema nodes with Parquet footer nodes: physical names, 3-level and legacy 2-level lists,
maps, and the ids each node must carry."""

from __future__ import annotations

from icecompat_writer.facts import ParquetField, ParquetFooter
from icecompat_writer.rules.footer import walk_footer
from icecompat_writer.rules.schema import CM_NESTED_IDS

from .builders import array, field, map_, mapped, struct


def leaf(name: str, fid: int | None, physical: str = "INT64") -> ParquetField:
    return ParquetField(name, fid, physical)


def group(
    name: str, fid: int | None, *children: ParquetField, logical: str | None = None, rep: str = "OPTIONAL"
) -> ParquetField:
    return ParquetField(name, fid, None, logical, rep, children)


SCHEMA = struct(
    field(
        "arr",
        array(struct(field("x", "long", mapped(2)))),
        mapped(1) | {CM_NESTED_IDS: {"col-1.element": 10}},
    ),
    field(
        "m",
        map_("string", array("long")),
        mapped(3) | {CM_NESTED_IDS: {"col-3.key": 11, "col-3.value": 12, "col-3.value.element": 13}},
    ),
    field("gone", "long", mapped(4)),
)


def paths(footer: ParquetFooter) -> list[tuple[str, int | None, int | None]]:
    return [(n.path, n.expected_id, n.node.field_id) for n in walk_footer(SCHEMA["fields"], footer)]


def test_three_level_lists_and_maps() -> None:
    footer = ParquetFooter(
        1,
        (
            group(
                "col-1",
                1,
                group("list", None, group("element", 10, leaf("col-2", 2)), rep="REPEATED"),
                logical="LIST",
            ),
            group(
                "col-3",
                3,
                group(
                    "key_value",
                    None,
                    leaf("key", 11, "BYTE_ARRAY"),
                    group(
                        "value", 12, group("list", None, leaf("element", 13), rep="REPEATED"), logical="LIST"
                    ),
                    rep="REPEATED",
                ),
                logical="MAP",
            ),
        ),
    )
    assert paths(footer) == [
        ("arr", 1, 1),
        ("arr.element", 10, 10),
        ("arr.element.x", 2, 2),
        ("m", 3, 3),
        ("m.key", 11, 11),
        ("m.value", 12, 12),
        ("m.value.element", 13, 13),
    ]


def test_legacy_two_level_lists() -> None:
    # Repeated group of several fields / named "array": the repeated node is the element itself.
    two_level = group("col-1", 1, group("array", 10, leaf("col-2", 2), rep="REPEATED"), logical="LIST")
    assert paths(ParquetFooter(1, (two_level,)))[:3] == [
        ("arr", 1, 1),
        ("arr.element", 10, 10),
        ("arr.element.x", 2, 2),
    ]
    primitive = ParquetFooter(
        1,
        (
            group(
                "col-3",
                3,
                group(
                    "key_value",
                    None,
                    leaf("key", 11, "BYTE_ARRAY"),
                    group("value", 12, leaf("element", 13, "INT64"), logical="LIST"),
                    rep="REPEATED",
                ),
                logical="MAP",
            ),
        ),
    )
    assert paths(primitive)[-1] == ("m.value.element", 13, 13)


def test_missing_columns_and_mismatched_shapes_are_skipped() -> None:
    footer = ParquetFooter(1, (leaf("col-1", 1), leaf("something-else", 9)))
    assert paths(footer) == [("arr", 1, 1)]
