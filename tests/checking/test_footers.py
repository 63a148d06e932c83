"""Parquet footers: the schema tree as the file has it, field ids on every node, and broken files."""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icecompat_writer.deltalog import AddFile, read_snapshot
from icecompat_writer.errors import TableReadError
from icecompat_writer.evidence.footers import FooterReadError, decode_footer, file_facts, read_footer
from icecompat_writer.facts import ParquetField, ParquetFooter
from icecompat_writer.storage import io_for

FID = b"PARQUET:field_id"


def fid(n: int) -> dict[bytes, bytes]:
    return {FID: str(n).encode()}


NESTED_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False, metadata=fid(1)),
        pa.field("s", pa.struct([pa.field("x", pa.int32(), metadata=fid(3))]), metadata=fid(2)),
        pa.field("l", pa.list_(pa.field("element", pa.string(), metadata=fid(5))), metadata=fid(4)),
        pa.field(
            "m",
            pa.map_(
                pa.field("key", pa.string(), nullable=False, metadata=fid(7)),
                pa.field(
                    "value",
                    pa.list_(pa.field("element", pa.int64(), metadata=fid(10))),
                    metadata=fid(8),
                ),
            ),
            metadata=fid(6),
        ),
        pa.field("ts", pa.timestamp("us", tz="UTC"), metadata=fid(9)),
        pa.field("plain", pa.string()),
    ],
    metadata={"writer.note": "hello"},
)


def write_nested(path: Path, **kwargs: Any) -> Path:
    rows = [
        {"id": 1, "s": {"x": 1}, "l": ["a"], "m": {"k": [1, 2]}, "ts": 0, "plain": "p"},
        {"id": 2, "s": None, "l": None, "m": None, "ts": None, "plain": None},
    ]
    pq.write_table(pa.Table.from_pylist(rows, schema=NESTED_SCHEMA), path, **kwargs)
    return path


def shape(f: ParquetField) -> tuple:
    """A compact, comparable view of a subtree."""
    return (
        f.name,
        f.field_id,
        f.physical_type,
        f.repetition,
        f.logical_type if f.children else None,
        tuple(shape(c) for c in f.children),
    )


def test_pyarrow_file_tree_mirrors_parquet_structure_with_all_ids(tmp_path: Path) -> None:
    footer = read_footer(
        write_nested(tmp_path / "n.parquet"), io=io_for(write_nested(tmp_path / "n.parquet"))
    )
    assert isinstance(footer, ParquetFooter)
    assert footer.num_rows == 2
    assert footer.created_by is not None and footer.created_by.startswith("parquet-cpp-arrow")
    assert footer.key_value_metadata["writer.note"] == "hello"
    assert [shape(f) for f in footer.fields] == [
        ("id", 1, "INT64", "REQUIRED", None, ()),
        ("s", 2, None, "OPTIONAL", None, (("x", 3, "INT32", "OPTIONAL", None, ()),)),
        (
            "l",
            4,
            None,
            "OPTIONAL",
            "LIST",
            (("list", None, None, "REPEATED", None, (("element", 5, "BYTE_ARRAY", "OPTIONAL", None, ()),)),),
        ),
        (
            "m",
            6,
            None,
            "OPTIONAL",
            "MAP",
            (
                (
                    "key_value",
                    None,
                    None,
                    "REPEATED",
                    None,
                    (
                        ("key", 7, "BYTE_ARRAY", "REQUIRED", None, ()),
                        (
                            "value",
                            8,
                            None,
                            "OPTIONAL",
                            "LIST",
                            (
                                (
                                    "list",
                                    None,
                                    None,
                                    "REPEATED",
                                    None,
                                    (("element", 10, "INT64", "OPTIONAL", None, ()),),
                                ),
                            ),
                        ),
                    ),
                ),
            ),
        ),
        ("ts", 9, "INT64", "OPTIONAL", None, ()),
        ("plain", None, "BYTE_ARRAY", "OPTIONAL", None, ()),
    ]
    ts = footer.field("ts")
    assert ts is not None and ts.logical_type is not None
    assert ts.logical_type.startswith("Timestamp(isAdjustedToUTC=true, timeUnit=microseconds")
    plain = footer.field("plain")
    assert plain is not None and plain.logical_type == "String"
    assert footer.field("id").logical_type is None  # type: ignore[union-attr]


def _arrow_ids(field: pa.Field, prefix: str = "") -> dict[str, int]:
    """Field ids pyarrow reports, keyed by a path through Arrow's (folded) nesting."""
    out: dict[str, int] = {}
    path = prefix + field.name
    if field.metadata and FID in field.metadata:
        out[path] = int(field.metadata[FID])
    t = field.type
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            out.update(_arrow_ids(t.field(i), path + "."))
    elif pa.types.is_map(t):
        out.update(_arrow_ids(t.key_field, path + "."))
        out.update(_arrow_ids(t.item_field, path + "."))
    elif pa.types.is_list(t):
        out.update(_arrow_ids(t.value_field, path + "."))
    return out


def _tree_ids(f: ParquetField, prefix: str = "") -> dict[str, int]:
    """The same paths from our tree, skipping the repeated LIST/MAP levels Arrow folds away."""
    out: dict[str, int] = {}
    path = prefix + f.name
    if f.field_id is not None:
        out[path] = f.field_id
    children = f.children
    if f.logical_type in ("LIST", "MAP") and len(children) == 1 and children[0].repetition == "REPEATED":
        children = children[0].children
    for c in children:
        out.update(_tree_ids(c, path + "."))
    return out


def test_field_ids_agree_with_pyarrow_arrow_schema(tmp_path: Path) -> None:
    path = write_nested(tmp_path / "n.parquet")
    arrow_schema = pq.ParquetFile(path).schema_arrow
    want: dict[str, int] = {}
    for field in arrow_schema:
        want.update(_arrow_ids(field))
    got: dict[str, int] = {}
    for f in read_footer(path, io=io_for(path)).fields:
        got.update(_tree_ids(f))
    assert got == want
    assert len(got) == 10


def test_int96_timestamps(tmp_path: Path) -> None:
    path = write_nested(tmp_path / "i96.parquet", use_deprecated_int96_timestamps=True)
    ts = read_footer(path, io=io_for(path)).field("ts")
    assert ts is not None
    assert (ts.physical_type, ts.logical_type, ts.field_id) == ("INT96", None, 9)


def test_no_data_is_read(tmp_path: Path) -> None:
    """A file whose data pages are destroyed still has a readable footer."""
    path = write_nested(tmp_path / "n.parquet")
    data = bytearray(path.read_bytes())
    footer_len = struct.unpack("<I", data[-8:-4])[0]
    for i in range(4, len(data) - 8 - footer_len):
        data[i] = 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises((OSError, pa.ArrowException)):
        pq.read_table(path)
    assert read_footer(path, io=io_for(path)).num_rows == 2


# --- hand-made footers: legacy lists and ids on repeated groups ---------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


def _struct(fields: list[tuple[int, int, Any]]) -> bytes:
    """Thrift compact struct from (field id, type, value); ids ascending."""
    out = bytearray()
    last = 0
    for fid_, ttype, value in fields:
        delta = fid_ - last
        assert 0 < delta <= 15
        out.append((delta << 4) | ttype)
        last = fid_
        if ttype in (5, 6):
            out += _zigzag(value)
        elif ttype == 8:
            raw = value.encode() if isinstance(value, str) else value
            out += _varint(len(raw)) + raw
        elif ttype == 9:
            etype, items = value
            out.append((min(len(items), 15) << 4) | etype)
            if len(items) >= 15:
                out += _varint(len(items))
            for item in items:
                out += _struct(item) if etype == 12 else _zigzag(item)
        else:
            raise AssertionError(ttype)
    out.append(0)
    return bytes(out)


def element(
    name: str,
    *,
    type_: int | None = None,
    repetition: int = 1,
    children: int | None = None,
    converted: int | None = None,
    field_id: int | None = None,
) -> list[tuple[int, int, Any]]:
    fields: list[tuple[int, int, Any]] = []
    if type_ is not None:
        fields.append((1, 5, type_))
    fields.append((3, 5, repetition))
    fields.append((4, 8, name))
    if children is not None:
        fields.append((5, 5, children))
    if converted is not None:
        fields.append((6, 5, converted))
    if field_id is not None:
        fields.append((9, 5, field_id))
    return fields


def write_footer_only(path: Path, schema: list[list[tuple[int, int, Any]]]) -> Path:
    """A valid Parquet file with zero rows: magic, FileMetaData, length, magic."""
    meta = _struct([(1, 5, 1), (2, 9, (12, schema)), (3, 6, 0), (4, 9, (12, []))])
    path.write_bytes(b"PAR1" + meta + struct.pack("<I", len(meta)) + b"PAR1")
    return path


INT32, BYTE_ARRAY = 1, 6
REQUIRED, OPTIONAL, REPEATED = 0, 1, 2
UTF8, MAP, MAP_KEY_VALUE, LIST = 0, 1, 2, 3


def test_legacy_two_level_lists_and_ids_on_repeated_groups(tmp_path: Path) -> None:
    path = write_footer_only(
        tmp_path / "legacy.parquet",
        [
            element("schema", repetition=REQUIRED, children=4),
            # 2-level list: the repeated level is the element itself
            element("a", children=1, converted=LIST, field_id=1),
            element("array", type_=INT32, repetition=REPEATED, field_id=2),
            # a bare repeated primitive, no LIST annotation at all
            element("r", type_=INT32, repetition=REPEATED, field_id=3),
            # 3-level list whose repeated group carries an id
            element("b", children=1, converted=LIST, field_id=4),
            element("list", repetition=REPEATED, children=1, field_id=5),
            element("element", type_=BYTE_ARRAY, converted=UTF8, field_id=6),
            # legacy map: MAP_KEY_VALUE on the repeated group
            element("m", children=1, converted=MAP, field_id=7),
            element("map", repetition=REPEATED, children=2, converted=MAP_KEY_VALUE),
            element("key", type_=BYTE_ARRAY, repetition=REQUIRED, converted=UTF8, field_id=8),
            element("value", type_=INT32, field_id=9),
        ],
    )
    footer = read_footer(path, io=io_for(path))
    assert footer.num_rows == 0
    assert [shape(f) for f in footer.fields] == [
        ("a", 1, None, "OPTIONAL", "LIST", (("array", 2, "INT32", "REPEATED", None, ()),)),
        ("r", 3, "INT32", "REPEATED", None, ()),
        (
            "b",
            4,
            None,
            "OPTIONAL",
            "LIST",
            (("list", 5, None, "REPEATED", None, (("element", 6, "BYTE_ARRAY", "OPTIONAL", None, ()),)),),
        ),
        (
            "m",
            7,
            None,
            "OPTIONAL",
            "MAP",
            (
                (
                    "map",
                    None,
                    None,
                    "REPEATED",
                    "MAP_KEY_VALUE",
                    (
                        ("key", 8, "BYTE_ARRAY", "REQUIRED", None, ()),
                        ("value", 9, "INT32", "OPTIONAL", None, ()),
                    ),
                ),
            ),
        ),
    ]
    b_element = footer.field("b").children[0].children[0]  # type: ignore[union-attr]
    assert b_element.logical_type == "String"  # derived by pyarrow from the UTF8 converted type


def test_footer_bytes_decode_to_what_the_file_reader_reads(tmp_path: Path) -> None:
    """The bytes between the data and the length+magic (what the guard's JVM sends): one decoder."""
    path = write_nested(tmp_path / "n.parquet")
    data = path.read_bytes()
    (length,) = struct.unpack("<I", data[-8:-4])
    from_bytes = decode_footer(data[-8 - length : -8], "sent/n.parquet")
    from_file = read_footer(path, io=io_for(path))
    assert from_bytes == from_file
    assert [shape(f) for f in from_bytes.fields] == [shape(f) for f in from_file.fields]
    with pytest.raises(FooterReadError) as info:
        decode_footer(data[-8 - length : -20], "sent/n.parquet")
    assert info.value.path == "sent/n.parquet"


# --- broken files --------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FooterReadError, match="does not exist") as info:
        read_footer(tmp_path / "nope.parquet", io=io_for(tmp_path / "nope.parquet"))
    assert isinstance(info.value, TableReadError)
    assert info.value.path == str(tmp_path / "nope.parquet")


def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "e.parquet").write_bytes(b"")
    with pytest.raises(FooterReadError, match="too small"):
        read_footer(tmp_path / "e.parquet", io=io_for(tmp_path / "e.parquet"))


def test_not_parquet(tmp_path: Path) -> None:
    (tmp_path / "t.parquet").write_text("id,name\n1,a\n" * 10)
    with pytest.raises(FooterReadError, match="no Parquet magic"):
        read_footer(tmp_path / "t.parquet", io=io_for(tmp_path / "t.parquet"))


@pytest.mark.parametrize("cut", [1, 8, 200])
def test_truncated_file(tmp_path: Path, cut: int) -> None:
    path = write_nested(tmp_path / "n.parquet")
    path.write_bytes(path.read_bytes()[:-cut])
    with pytest.raises(FooterReadError):
        read_footer(path, io=io_for(path))


def test_footer_length_beyond_the_file(tmp_path: Path) -> None:
    (tmp_path / "x.parquet").write_bytes(b"PAR1" + b"\x00" * 8 + struct.pack("<I", 10_000) + b"PAR1")
    with pytest.raises(FooterReadError, match="does not fit"):
        read_footer(tmp_path / "x.parquet", io=io_for(tmp_path / "x.parquet"))


def test_garbage_footer_with_valid_magic(tmp_path: Path) -> None:
    junk = bytes(range(7, 247))
    (tmp_path / "x.parquet").write_bytes(b"PAR1" + junk + struct.pack("<I", len(junk)) + b"PAR1")
    with pytest.raises(FooterReadError):
        read_footer(tmp_path / "x.parquet", io=io_for(tmp_path / "x.parquet"))


def test_encrypted_footer(tmp_path: Path) -> None:
    (tmp_path / "x.parquet").write_bytes(b"PARE" + b"\x00" * 40 + struct.pack("<I", 20) + b"PARE")
    with pytest.raises(FooterReadError, match="encrypted"):
        read_footer(tmp_path / "x.parquet", io=io_for(tmp_path / "x.parquet"))


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(FooterReadError):
        read_footer(tmp_path, io=io_for(tmp_path))


def test_named_pipe_is_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.parquet")
    with pytest.raises(FooterReadError, match="named pipe"):
        read_footer(tmp_path / "x.parquet", io=io_for(tmp_path / "x.parquet"))


# Footers whose FileMetaData field 1 is a container the decoder walks to reach field 2 (the schema).
@pytest.mark.parametrize(
    ("footer", "reason"),
    [
        (b"\x1b" + b"\xff" * 8 + b"\x7f" + b"\x11" + b"\x00\x00", "longer than the footer"),  # 2^62 pairs
        (b"\x19\xf5\x09" + b"\x00" * 4, "longer than the footer"),  # a list of 9 i32 in 4 bytes
        (b"\x1b\x01\x95" + b"\x00" * 8, "damaged"),  # a map keyed by lists
    ],
    ids=["endless-boolean-map", "list-longer-than-footer", "unhashable-map-key"],
)
def test_forged_container_counts_are_footer_errors(tmp_path: Path, footer: bytes, reason: str) -> None:
    (tmp_path / "x.parquet").write_bytes(b"PAR1" + footer + struct.pack("<I", len(footer)) + b"PAR1")
    with pytest.raises(FooterReadError, match=reason):
        read_footer(tmp_path / "x.parquet", io=io_for(tmp_path / "x.parquet"))


def test_booleans_in_a_map_take_a_byte_each(tmp_path: Path) -> None:
    # field 1 is the map {true: false} (a byte per value), then the struct ends without a schema
    footer = b"\x1b\x01\x11\x01\x02\x00"
    (tmp_path / "x.parquet").write_bytes(b"PAR1" + footer + struct.pack("<I", len(footer)) + b"PAR1")
    with pytest.raises(FooterReadError, match="has no schema"):
        read_footer(tmp_path / "x.parquet", io=io_for(tmp_path / "x.parquet"))


# --- file_facts ----------------------------------------------------------------------------------


@pytest.fixture
def table(tmp_path: Path) -> Path:
    root = tmp_path / "table"
    (root / "p=a b").mkdir(parents=True)
    write_nested(root / "p=a b" / "good.parquet")
    (root / "bad.parquet").write_text("this is not a parquet file at all\n" * 3)
    write_nested(tmp_path / "outside.parquet")  # a real file, so "not opened" is the only reason
    log = root / "_delta_log"
    log.mkdir()
    dv = {
        "storageType": "u",
        "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
        "offset": 1,
        "sizeInBytes": 34,
        "cardinality": 1,
    }
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "x",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": "{}",
                "partitionColumns": ["p"],
                "configuration": {},
            }
        },
        {
            "add": {
                "path": "p=a%20b/good.parquet",
                "partitionValues": {"p": "a b"},
                "size": 1,
                "modificationTime": 0,
                "dataChange": True,
                "stats": '{"numRecords":2}',
                "baseRowId": 7,
                "defaultRowCommitVersion": 0,
                "deletionVector": dv,
            }
        },
        {
            "add": {
                "path": "bad.parquet",
                "partitionValues": {"p": None},
                "size": 1,
                "modificationTime": 0,
                "dataChange": True,
            }
        },
        {
            "add": {
                "path": "../outside.parquet",
                "partitionValues": {},
                "size": 1,
                "modificationTime": 0,
                "dataChange": True,
            }
        },
        {
            "add": {
                "path": "gone.parquet",
                "partitionValues": {},
                "size": 1,
                "modificationTime": 0,
                "dataChange": True,
            }
        },
    ]
    (log / "00000000000000000000.json").write_text("".join(json.dumps(a) + "\n" for a in actions))
    return root


def _adds(root: Path) -> dict[str, AddFile]:
    return {a.path: a for a in read_snapshot(root, io=io_for(root)).add_files}


def test_file_facts_for_a_good_file(table: Path) -> None:
    facts = file_facts(table, _adds(table)["p=a%20b/good.parquet"], io=io_for(table))
    assert facts.path == "p=a%20b/good.parquet"
    assert dict(facts.partition_values) == {"p": "a b"}
    assert (facts.num_records, facts.has_stats, facts.base_row_id, facts.default_row_commit_version) == (
        2,
        True,
        7,
        0,
    )
    assert facts.has_deletion_vector
    assert facts.footer is not None and facts.footer.num_rows == 2
    assert facts.footer_error is None


def test_file_facts_errors_are_per_file(table: Path) -> None:
    adds = _adds(table)
    bad = file_facts(table, adds["bad.parquet"], io=io_for(table))
    assert bad.footer is None and bad.footer_error is not None and "Parquet magic" in bad.footer_error
    assert (bad.has_stats, bad.num_records, bad.has_deletion_vector) == (False, None, False)
    outside = file_facts(table, adds["../outside.parquet"], io=io_for(table))
    assert outside.footer is None and outside.footer_error is not None
    assert "outside the table root" in outside.footer_error
    gone = file_facts(table, adds["gone.parquet"], io=io_for(table))
    assert gone.footer_error is not None and "does not exist" in gone.footer_error


def test_file_facts_without_footer(table: Path) -> None:
    facts = file_facts(
        str(table), _adds(table)["p=a%20b/good.parquet"], read_footer=False, io=io_for(str(table))
    )
    assert (facts.footer, facts.footer_error, facts.num_records) == (None, None, 2)


# --- files written by delta-spark ----------------------------------------------------------------


@pytest.fixture
def session_conf(spark: Any) -> Iterator[Any]:
    """Set session confs for one test and put the previous values back afterwards."""
    saved: dict[str, str | None] = {}

    def set_conf(key: str, value: str) -> None:
        if key not in saved:
            saved[key] = spark.conf.get(key, None)
        spark.conf.set(key, value)

    yield set_conf
    for key, value in saved.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def _data_files(root: Path) -> list[Path]:
    snap = read_snapshot(root, io=io_for(root))
    out = [snap.data_path(a) for a in snap.add_files]
    assert all(p is not None for p in out)
    return [p for p in out if p is not None]


def _schema_ids(schema_string: str) -> dict[str, Any]:
    """physical name -> (column id, nested ids) from a column-mapped Delta schema."""
    out: dict[str, Any] = {}

    def walk(fields: list[dict[str, Any]]) -> None:
        for f in fields:
            md = f["metadata"]
            out[md["delta.columnMapping.physicalName"]] = (
                md["delta.columnMapping.id"],
                md.get("delta.columnMapping.nested.ids", {}),
            )
            t = f["type"]
            while isinstance(t, dict):
                if t["type"] == "struct":
                    walk(t["fields"])
                    break
                t = t.get("elementType") or t.get("valueType")

    walk(json.loads(schema_string)["fields"])
    return out


@pytest.mark.spark
def test_delta_spark_id_mode_with_iceberg_compat_writes_nested_ids(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "ice"
    spark.sql(
        f"CREATE TABLE delta.`{root}` (id BIGINT, st STRUCT<a: INT>, arr ARRAY<STRUCT<q: INT>>, "
        "m MAP<STRING, ARRAY<BIGINT>>) USING delta "
        "TBLPROPERTIES ('delta.columnMapping.mode'='id', 'delta.enableIcebergCompatV2'='true')"
    )
    spark.sql(
        f"INSERT INTO delta.`{root}` VALUES "
        "(1, named_struct('a', 1), array(named_struct('q', 1)), map('k', array(1L)))"
    )
    ids = _schema_ids(read_snapshot(root, io=io_for(root)).metadata.schema_string)
    (path,) = _data_files(root)
    footer = read_footer(path, io=io_for(path))
    top = {f.name: f for f in footer.fields}
    assert set(top) == {name for name in ids if name in top} and len(top) == 4
    for name, f in top.items():
        assert f.field_id == ids[name][0]
    st_ = next(f for f in footer.fields if f.children and f.logical_type is None)
    assert all(c.field_id == ids[c.name][0] for c in st_.children)
    arr = next(f for f in footer.fields if f.logical_type == "LIST")
    nested = ids[arr.name][1]
    element_node = arr.children[0].children[0]
    assert element_node.field_id == nested[f"{arr.name}.element"]
    assert element_node.children[0].field_id == ids[element_node.children[0].name][0]
    m = next(f for f in footer.fields if f.logical_type == "MAP")
    nested = ids[m.name][1]
    key, value = m.children[0].children
    assert (key.field_id, value.field_id) == (nested[f"{m.name}.key"], nested[f"{m.name}.value"])
    assert value.children[0].children[0].field_id == nested[f"{m.name}.value.element"]


@pytest.mark.spark
def test_delta_spark_name_mode_ids_only_on_struct_fields(spark: Any, tmp_path: Path) -> None:
    """Observed delta-spark 4.4 behaviour: without IcebergCompat, element/key/value carry no id."""
    root = tmp_path / "name"
    spark.sql(
        f"CREATE TABLE delta.`{root}` (id BIGINT, arr ARRAY<INT>, m MAP<STRING, INT>) USING delta "
        "TBLPROPERTIES ('delta.columnMapping.mode'='name')"
    )
    spark.sql(f"INSERT INTO delta.`{root}` VALUES (1, array(1), map('k', 1))")
    ids = _schema_ids(read_snapshot(root, io=io_for(root)).metadata.schema_string)
    (path,) = _data_files(root)
    footer = read_footer(path, io=io_for(path))
    assert {f.name: f.field_id for f in footer.fields} == {name: v[0] for name, v in ids.items()}
    arr = next(f for f in footer.fields if f.logical_type == "LIST")
    m = next(f for f in footer.fields if f.logical_type == "MAP")
    assert arr.children[0].children[0].field_id is None
    assert [c.field_id for c in m.children[0].children] == [None, None]


@pytest.mark.spark
def test_delta_spark_int96_and_legacy_format(spark: Any, session_conf: Any, tmp_path: Path) -> None:
    session_conf("spark.sql.parquet.outputTimestampType", "INT96")
    session_conf("spark.sql.parquet.writeLegacyFormat", "true")
    root = tmp_path / "legacy"
    spark.sql(
        f"CREATE TABLE delta.`{root}` (id BIGINT, ts TIMESTAMP, a ARRAY<INT>, m MAP<STRING, INT>, "
        "d DECIMAL(10,2)) USING delta"
    )
    spark.sql(
        f"INSERT INTO delta.`{root}` VALUES (1, TIMESTAMP'2024-01-01 00:00:00', array(1), map('k', 1), 1.5)"
    )
    (path,) = _data_files(root)
    footer = read_footer(path, io=io_for(path))
    assert footer.num_rows == 1
    assert footer.created_by is not None and "parquet-mr" in footer.created_by
    assert "org.apache.spark.version" in footer.key_value_metadata
    ts = footer.field("ts")
    assert ts is not None and (ts.physical_type, ts.logical_type) == ("INT96", None)
    assert shape(footer.field("a")) == (  # type: ignore[arg-type]
        "a",
        None,
        None,
        "OPTIONAL",
        "LIST",
        (("bag", None, None, "REPEATED", None, (("array", None, "INT32", "OPTIONAL", None, ()),)),),
    )
    key_value = footer.field("m").children[0]  # type: ignore[union-attr]
    assert (key_value.name, key_value.logical_type) == ("key_value", "MAP_KEY_VALUE")
    d = footer.field("d")
    assert d is not None and d.physical_type == "FIXED_LEN_BYTE_ARRAY"
    assert d.logical_type == "Decimal(precision=10, scale=2)"
