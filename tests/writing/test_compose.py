"""Delta's write semantics on the log's JSON: what schema, partitioning and properties a write yields."""

from __future__ import annotations

import pytest

from icecompat_writer.deltalog.actions import Metadata
from icecompat_writer.errors import CompatViolation
from icecompat_writer.schema import parse_schema
from icecompat_writer.writing.compose import WriteIntent, compose_metadata, merge_schemas


def field(name, type_, meta=None, nullable=True):
    return {"name": name, "type": type_, "nullable": nullable, "metadata": meta or {}}


def struct(*fields):
    return {"type": "struct", "fields": list(fields)}


def mapped(i):
    return {"delta.columnMapping.id": i, "delta.columnMapping.physicalName": f"col-{i}"}


TABLE = struct(
    field("id", "long", mapped(1)),
    field("s", struct(field("x", "integer", mapped(3))), mapped(2)),
    field("p", "string", mapped(4)),
)


def previous() -> Metadata:
    return Metadata(
        schema_string="{}", partition_columns=("p",), configuration={"a": "1"}, id="t1"
    ).with_schema(parse_schema(TABLE))


def test_new_table_takes_the_dataframe_schema_without_mapping_metadata() -> None:
    data = struct(field("id", "long", mapped(99)), field("p", "string"))
    md = compose_metadata(WriteIntent("errorifexists", parse_schema(data), ("p",), {"delta.x": "y"}), None)
    assert md.partition_columns == ("p",)
    assert md.configuration == {"delta.x": "y"}
    assert md.schema["fields"][0]["metadata"] == {}
    assert md.id


def test_append_keeps_table_schema_and_ids() -> None:
    data = struct(field("ID", "long"), field("p", "string"))
    md = compose_metadata(WriteIntent("append", parse_schema(data)), previous())
    assert md.schema == TABLE
    assert md.partition_columns == ("p",)
    assert md.id == "t1"


def test_append_unknown_nested_column_is_refused_with_its_path() -> None:
    data = struct(field("s", struct(field("x", "integer"), field("new.one", "string"))), field("zz", "long"))
    with pytest.raises(CompatViolation) as err:
        compose_metadata(WriteIntent("append", parse_schema(data)), previous())
    paths = {(v.rule, v.path) for v in err.value.violations}
    assert paths == {("DELTA-WRITE-UNKNOWN-COLUMN", "s.`new.one`"), ("DELTA-WRITE-UNKNOWN-COLUMN", "zz")}


def test_merge_schema_adds_nested_and_top_level_fields_bare() -> None:
    data = struct(
        field("s", struct(field("x", "integer"), field("y", "string", nullable=False))), field("z", "long")
    )
    md = compose_metadata(WriteIntent("append", parse_schema(data), merge_schema=True), previous())
    s_type = md.schema["fields"][1]["type"]
    assert [f["name"] for f in s_type["fields"]] == ["x", "y"]
    assert s_type["fields"][0]["metadata"] == mapped(3)
    assert s_type["fields"][1] == field("y", "string", {}, nullable=True)
    assert md.schema["fields"][-1]["name"] == "z"


def test_type_mismatch_is_refused_even_with_merge_schema() -> None:
    data = struct(field("id", "integer"), field("s", struct(field("x", "string"))))
    with pytest.raises(CompatViolation) as err:
        compose_metadata(WriteIntent("append", parse_schema(data), merge_schema=True), previous())
    got = {(v.rule, v.path, v.observed, v.expected) for v in err.value.violations}
    assert got == {
        ("DELTA-WRITE-TYPE-MISMATCH", "id", "integer", "long"),
        ("DELTA-WRITE-TYPE-MISMATCH", "s.x", "string", "integer"),
    }


def test_partitioning_change_needs_overwrite_schema() -> None:
    data = struct(field("id", "long"), field("p", "string"))
    with pytest.raises(CompatViolation) as err:
        compose_metadata(WriteIntent("append", parse_schema(data), ("id",)), previous())
    assert err.value.rules == ["DELTA-WRITE-PARTITIONING-CHANGE"]


def test_overwrite_schema_carries_ids_of_kept_columns() -> None:
    data = struct(field("s", struct(field("x", "integer"), field("w", "long"))), field("q", "date"))
    md = compose_metadata(
        WriteIntent("overwrite", parse_schema(data), ("q",), overwrite_schema=True), previous()
    )
    s = md.schema["fields"][0]
    assert s["metadata"] == mapped(2)
    assert s["type"]["fields"][0]["metadata"] == mapped(3)
    assert s["type"]["fields"][1]["metadata"] == {}
    assert md.schema["fields"][1]["metadata"] == {}
    assert md.partition_columns == ("q",)


def test_unknown_partition_column_is_refused() -> None:
    data = struct(field("id", "long"))
    with pytest.raises(CompatViolation) as err:
        compose_metadata(WriteIntent("errorifexists", parse_schema(data), ("nope",)), None)
    assert [(v.rule, v.path) for v in err.value.violations] == [("DELTA-WRITE-PARTITION-COLUMN", "nope")]


def test_merge_walks_arrays_and_maps() -> None:
    elem = struct(field("a", "integer"))
    table = struct(field("arr", {"type": "array", "elementType": elem, "containsNull": True}))
    data_elem = struct(field("a", "integer"), field("b", "string"))
    data = struct(field("arr", {"type": "array", "elementType": data_elem, "containsNull": True}))
    merged, problems = merge_schemas(parse_schema(table), parse_schema(data), add_new=True)
    assert problems == []
    assert [f.name for f in merged.fields] == ["arr", "a", "b"]
    assert [f.path for f in merged.fields] == ["arr", "arr.element.a", "arr.element.b"]
    _, problems = merge_schemas(parse_schema(table), parse_schema(data), add_new=False)
    assert [(p.rule, p.path) for p in problems] == [("DELTA-WRITE-UNKNOWN-COLUMN", "arr.element.b")]


def test_new_tables_store_the_dataframe_schema_as_nullable() -> None:
    elem = struct(field("h", "short", nullable=False))
    data = struct(
        field("id", "long", nullable=False),
        field("arr", {"type": "array", "elementType": elem, "containsNull": False}, nullable=False),
        field("m", {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": False}),
    )
    md = compose_metadata(WriteIntent("errorifexists", parse_schema(data)), None)
    f_id, f_arr, f_m = md.schema["fields"]
    assert f_id["nullable"] and f_arr["nullable"] and f_arr["type"]["containsNull"]
    assert f_arr["type"]["elementType"]["fields"][0]["nullable"]
    assert f_m["type"]["valueContainsNull"]


@pytest.mark.parametrize("mode", ["errorifexists", "append", "overwrite"])
def test_names_delta_takes_as_one_column_are_refused_at_every_depth(mode: str) -> None:
    data = struct(
        field("id", "long"),
        field("ID", "long"),
        field("s", struct(field("x", "integer"), field("X", "integer"))),
        field(
            "a",
            {
                "type": "array",
                "elementType": struct(field("q", "long"), field("Q", "long")),
                "containsNull": True,
            },
        ),
        field("ß", "long"),
        field("SS", "long"),
    )
    with pytest.raises(CompatViolation) as err:
        compose_metadata(
            WriteIntent(mode, parse_schema(data), merge_schema=True),
            None if mode == "errorifexists" else previous(),
        )
    found = {(v.profile, v.rule, v.path, v.observed, v.expected) for v in err.value.violations}
    assert found == {
        ("delta", "DELTA-WRITE-DUPLICATE-COLUMN", "ID", "ID", "id"),
        ("delta", "DELTA-WRITE-DUPLICATE-COLUMN", "s.X", "X", "x"),
        ("delta", "DELTA-WRITE-DUPLICATE-COLUMN", "a.element.Q", "Q", "q"),
    }
    assert all("rename or drop" in v.fix for v in err.value.violations)


def test_structs_without_fields_are_refused_wherever_they_are() -> None:
    empty = struct()
    data = struct(
        field("id", "long"),
        field("e", empty),
        field("a", {"type": "array", "elementType": empty, "containsNull": True}),
        field("m", {"type": "map", "keyType": "string", "valueType": empty, "valueContainsNull": True}),
    )
    with pytest.raises(CompatViolation) as err:
        compose_metadata(WriteIntent("errorifexists", parse_schema(data)), None)
    assert {(v.rule, v.path) for v in err.value.violations} == {
        ("DELTA-WRITE-EMPTY-STRUCT", "e"),
        ("DELTA-WRITE-EMPTY-STRUCT", "a.element"),
        ("DELTA-WRITE-EMPTY-STRUCT", "m.value"),
    }
