"""Column-mapping id assignment and protocol building, unit by unit."""

from __future__ import annotations

import pytest

from icecompat_writer.deltalog.actions import Protocol
from icecompat_writer.planning.ids import (
    IdCounter,
    assign_column_ids,
    assign_nested_ids,
    copy_previous_mapping,
    max_assigned_id,
    rename_physical,
    scan,
)
from icecompat_writer.planning.protocol import build_protocol
from icecompat_writer.rules.features import implicit_writer_features, supported_features
from icecompat_writer.rules.schema import CM_ID, CM_NESTED_IDS, CM_PHYSICAL_NAME
from icecompat_writer.schema import parse_schema
from tests.rules.builders import array, field, map_, mapped, struct


def test_scan_collects_fields_ids_categories_and_keys() -> None:
    s = struct(
        field("a", array("long"), mapped(4) | {CM_NESTED_IDS: {"col-4.element": 9}}), field("b.c", "variant")
    )
    sc = scan(s)
    assert [f.path for f in sc.fields] == ["a", "`b.c`"]
    assert sc.max_id == 9 == max_assigned_id(s)
    assert {"array", "long", "variant"} <= sc.categories
    assert {CM_ID, CM_PHYSICAL_NAME, CM_NESTED_IDS} <= sc.metadata_keys


def test_assign_keeps_given_ids_and_fills_the_rest() -> None:
    s = struct(
        field("a", "long", {CM_ID: 3}), field("b", "long"), field("c", "long", {CM_PHYSICAL_NAME: "keep"})
    )
    changed = assign_column_ids(scan(s).fields, IdCounter(3))
    assert [f["metadata"] for f in s["fields"]] == [
        {CM_ID: 3, CM_PHYSICAL_NAME: "col-3"},
        {CM_ID: 4, CM_PHYSICAL_NAME: "col-4"},
        {CM_PHYSICAL_NAME: "keep", CM_ID: 5},
    ]
    assert [p for p, _ in changed] == ["a", "b", "c"]


def test_rename_physical_respects_protected_fields() -> None:
    s = struct(field("a", "long", mapped(1, "old")), field("b", "long", mapped(2, "other")))
    keep = s["fields"][0]
    changed = rename_physical(scan(s).fields, "col-{id}", lambda f: f is keep)
    assert changed == [("b", f"{CM_PHYSICAL_NAME}=col-2")]
    assert s["fields"][0]["metadata"][CM_PHYSICAL_NAME] == "old"


def test_copy_previous_mapping_without_previous_column_mapping_uses_names() -> None:
    new = struct(field("ID", "long"), field("fresh", "long"))
    old = struct(field("id", "long"))
    changed, matches = copy_previous_mapping(parse_schema(new), parse_schema(old), previous_mapped=False)
    assert new["fields"][0]["metadata"] == {CM_PHYSICAL_NAME: "id"}
    assert new["fields"][1]["metadata"] == {}
    assert len(matches) == 1 and changed[0][0] == "ID"


def test_nested_ids_reuse_previous_ones_by_key() -> None:
    old = struct(
        field("m", map_("string", "long"), mapped(1) | {CM_NESTED_IDS: {"col-1.key": 7, "col-1.value": 8}})
    )
    new = struct(field("m", map_("string", array("long")), mapped(1)))
    _, matches = copy_previous_mapping(parse_schema(new), parse_schema(old), previous_mapped=True)
    changed = assign_nested_ids(scan(new), IdCounter(8), matches)
    assert new["fields"][0]["metadata"][CM_NESTED_IDS] == {
        "col-1.key": 7,
        "col-1.value": 8,
        "col-1.value.element": 9,
    }
    assert [what.split(" under")[0] for _, what in changed] == [
        "kept the existing nested id 7",
        "kept the existing nested id 8",
        "assigned nested id 9",
    ]


def test_legacy_writer_versions_imply_features() -> None:
    assert implicit_writer_features(2) == {"appendOnly", "invariants"}
    assert implicit_writer_features(6) >= {"identityColumns", "columnMapping", "changeDataFeed"}
    assert implicit_writer_features(7) == frozenset()
    assert supported_features(Protocol(2, 5)) >= {"columnMapping", "generatedColumns"}


LEGACY_5 = {
    "appendOnly",
    "invariants",
    "checkConstraints",
    "changeDataFeed",
    "generatedColumns",
    "columnMapping",
}
CM = frozenset({"columnMapping"})


@pytest.mark.parametrize(
    ("base", "add", "expected"),
    [
        (Protocol(1, 1), {"columnMapping": "R"}, Protocol(3, 7, CM, CM)),
        (Protocol(2, 5), {"rowTracking": "R"}, Protocol(2, 7, None, frozenset(LEGACY_5 | {"rowTracking"}))),
        (
            Protocol(2, 7, None, CM),
            {"timestampNtz": "R"},
            Protocol(3, 7, CM | {"timestampNtz"}, CM | {"timestampNtz"}),
        ),
        (Protocol(3, 7, frozenset(), frozenset({"x"})), {}, Protocol(3, 7, frozenset(), frozenset({"x"}))),
    ],
)
def test_build_protocol(base: Protocol, add: dict[str, str], expected: Protocol) -> None:
    got, changes = build_protocol(base, add, {7: "V"}, "V")
    assert got == expected
    assert (got is base) == (not changes)


def test_build_protocol_credits_rules() -> None:
    _, changes = build_protocol(
        Protocol(1, 2),
        {"icebergCompatV3": "ICV3-FEATURE"},
        {7: "PROTO-WRITER-VERSION"},
        "PROTO-WRITER-VERSION",
    )
    assert [(c.rule, c.what) for c in changes] == [
        ("PROTO-WRITER-VERSION", "minWriterVersion 2 -> 7"),
        ("PROTO-WRITER-VERSION", "listed writer feature appendOnly (implied by writer version 2)"),
        ("PROTO-WRITER-VERSION", "listed writer feature invariants (implied by writer version 2)"),
        ("ICV3-FEATURE", "added writer feature icebergCompatV3"),
    ]
