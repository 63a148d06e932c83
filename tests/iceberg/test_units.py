"""Spark-free checks of the pieces: schema conversion, value parsing, bound widening, Avro schemas."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
import struct
from decimal import Decimal
from pathlib import Path

import fastavro
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icecompat_writer.deltalog.actions import Metadata, Protocol
from icecompat_writer.errors import TableReadError, Violation
from icecompat_writer.iceberg.avro import (
    PartitionField,
    avro_name,
    manifest_entry_schema,
    manifest_file_schema,
)
from icecompat_writer.iceberg.checks import COMPAT_V2, rule_set_for, table_violations
from icecompat_writer.iceberg.metadata import (
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    RaiseLastColumnId,
    SetCurrentSchema,
    SetDefaultSpec,
    SetProperties,
    SetSnapshotRef,
    Snapshot,
    TableMetadata,
)
from icecompat_writer.iceberg.schema import Primitive, SchemaIdError, convert_schema
from icecompat_writer.iceberg.values import (
    PartitionValueError,
    file_metrics,
    parse_partition_value,
    parse_stats,
    serialize,
)
from icecompat_writer.planning import PROFILES, plan, validate
from icecompat_writer.schema import parse_schema

UTC = dt.timezone.utc  # dt.UTC from Python 3.11 on
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
EMPTY_SCHEMA = '{"type":"struct","fields":[]}'
V3_PROTOCOL = Protocol(
    3,
    7,
    frozenset({"columnMapping"}),
    frozenset({"columnMapping", "icebergCompatV3", "rowTracking", "domainMetadata"}),
)
W1_PROTOCOL = Protocol(2, 7, None, frozenset({"columnMapping", "icebergCompatV2", "icebergWriterCompatV1"}))
V2_PROTOCOL = Protocol(2, 7, None, frozenset({"columnMapping", "icebergCompatV2"}))


def _field(name: str, dtype: object, fid: int, nullable: bool = True, nested: dict | None = None) -> dict:
    meta: dict = {"delta.columnMapping.id": fid, "delta.columnMapping.physicalName": f"col-{name}"}
    if nested is not None:
        meta["delta.columnMapping.nested.ids"] = nested
    return {"name": name, "type": dtype, "nullable": nullable, "metadata": meta}


# The example of PROTOCOL.md "Example of storing identifiers for nested fields in ArrayType and MapType".
NESTED_SCHEMA = {
    "type": "struct",
    "fields": [
        _field(
            "col1",
            {
                "type": "array",
                "elementType": {"type": "array", "elementType": "integer", "containsNull": False},
                "containsNull": True,
            },
            1,
            nested={"col-col1.element": 100, "col-col1.element.element": 101},
        ),
        _field(
            "col2",
            {
                "type": "map",
                "keyType": "integer",
                "valueType": {"type": "array", "elementType": "integer", "containsNull": True},
                "valueContainsNull": False,
            },
            2,
            nested={"col-col2.key": 102, "col-col2.value": 103, "col-col2.value.element": 104},
        ),
        _field(
            "col3",
            {
                "type": "map",
                "keyType": "integer",
                "valueType": {
                    "type": "struct",
                    "fields": [
                        _field(
                            "subcol1",
                            {"type": "array", "elementType": "integer", "containsNull": True},
                            4,
                            nested={"col-subcol1.element": 107},
                        )
                    ],
                },
                "valueContainsNull": True,
            },
            3,
            nested={"col-col3.key": 105, "col-col3.value": 106},
        ),
    ],
}


def test_nested_ids_come_from_the_nearest_struct_field() -> None:
    converted, problems = convert_schema(parse_schema(NESTED_SCHEMA), 2)
    assert problems == []
    col1, col2, col3 = converted.fields
    assert col1["type"] == {
        "type": "list",
        "element-id": 100,
        "element": {"type": "list", "element-id": 101, "element": "int", "element-required": True},
        "element-required": False,
    }
    assert (col2["type"]["key-id"], col2["type"]["value-id"], col2["type"]["value"]["element-id"]) == (
        102,
        103,
        104,
    )
    assert col2["type"]["value-required"] is True
    assert (col3["type"]["key-id"], col3["type"]["value-id"]) == (105, 106)
    sub = col3["type"]["value"]["fields"][0]
    assert (sub["id"], sub["type"]["element-id"]) == (4, 107)
    assert converted.max_id == 107
    # The name mapping uses the physical names the Parquet files were written with.
    assert converted.name_mapping[2]["names"] == ["col-col3"]
    assert converted.name_mapping[2]["fields"][1]["fields"][0]["names"] == ["col-subcol1"]


def test_primitive_type_mapping_and_required() -> None:
    schema = {
        "type": "struct",
        "fields": [
            _field("b", "byte", 1),
            _field("s", "short", 2),
            _field("i", "integer", 3, nullable=False),
            _field("l", "long", 4),
            _field("ts", "timestamp", 5),
            _field("tsn", "timestamp_ntz", 6),
            _field("d", "decimal(10,2)", 7),
            _field("bin", "binary", 8),
            _field("dt", "date", 9),
            _field("st", {"type": "struct", "fields": [_field("x", "float", 11)]}, 10),
        ],
    }
    converted, problems = convert_schema(parse_schema(schema), 2)
    assert problems == []
    types = {f["name"]: f["type"] for f in converted.fields}
    assert types["b"] == types["s"] == types["i"] == "int"
    assert (types["l"], types["ts"], types["tsn"]) == ("long", "timestamptz", "timestamp")
    assert (types["d"], types["bin"], types["dt"]) == ("decimal(10, 2)", "binary", "date")
    assert [f["required"] for f in converted.fields if f["name"] in ("i", "l")] == [True, False]
    assert converted.primitives[11].stats_path == ("col-st", "col-x")


def test_unsupported_types_are_violations_and_missing_ids_a_broken_invariant() -> None:
    variant = {"type": "struct", "fields": [_field("v", "variant", 3), _field("g", "geometry(OGC:CRS84)", 4)]}
    _, problems = convert_schema(parse_schema(variant), 3)
    assert {(p.rule, p.path) for p in problems} == {("ICEBERG-EMIT-TYPE", "v"), ("ICEBERG-EMIT-TYPE", "g")}
    # Ids are the catalog's rules (CM-IDS-ASSIGNED, CM-IDS-UNIQUE, ICV*-NESTED-IDS); the converter only
    # runs once they passed, so it refuses to guess instead of reporting them a second time.
    schema = {
        "type": "struct",
        "fields": [
            {"name": "plain", "type": "integer", "nullable": True, "metadata": {}},
            _field("arr", {"type": "array", "elementType": "long", "containsNull": True}, 2, nested={}),
            _field("dup", "long", 2),
            _field("big", "long", 2147483540),
        ],
    }
    with pytest.raises(SchemaIdError) as err:
        convert_schema(parse_schema(schema), 2)
    assert [p.split(":")[0] for p in err.value.problems] == ["`plain`", "`arr.element`", "`dup`", "`big`"]
    catalog = validate("v3", Metadata(schema_string=json.dumps(schema)), Protocol())
    assert {"CM-IDS-ASSIGNED", "CM-IDS-UNIQUE", "ICV3-NESTED-IDS"} <= {v.rule for v in catalog}


def _rules(problems: list[Violation]) -> set[str]:
    return {p.rule for p in problems}


def test_rule_sets_follow_the_declared_profile() -> None:
    def meta(**conf: str) -> Metadata:
        return Metadata(schema_string=EMPTY_SCHEMA, configuration=conf)

    assert rule_set_for(meta(**{"delta.enableIcebergWriterCompatV1": "true"})).profile.name == "writer-v1"
    assert rule_set_for(meta(**{"delta.enableIcebergWriterCompatV3": "true"})).profile.name == "writer-v3"
    assert rule_set_for(meta(**{"delta.enableIcebergCompatV3": "true"})).profile.name == "v3"
    assert rule_set_for(meta(**{"delta.enableIcebergCompatV2": "true"})).profile is COMPAT_V2
    assert rule_set_for(meta()).profile.name == "v3"
    # IcebergCompatV2 alone: writer-v1's rules without IcebergWriterCompatV1's.
    writer_v1 = set(PROFILES["writer-v1"].rule_ids)
    assert set(COMPAT_V2.rule_ids) == {r for r in writer_v1 if not r.startswith("IWC1-")}
    assert {"ICV2-NUM-RECORDS", "ICV2-PARQUET-FIELD-IDS", "ICV2-NESTED-IDS", "ICV2-ENABLED"} <= set(
        COMPAT_V2.rule_ids
    )


def test_table_checks_name_the_catalog_rules_and_add_only_what_it_lacks() -> None:
    plain = Metadata(
        schema_string='{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}}]}'
    )
    converted, problems = table_violations(Protocol(), plain, 2)
    assert converted is None
    assert {"ICV3-ENABLED", "ICV3-COLUMN-MAPPING-MODE", "CM-IDS-ASSIGNED"} <= _rules(problems)
    assert not any(r.startswith("ICEBERG-EMIT-") for r in _rules(problems))

    # v3 allows deletion vectors: Iceberg v3 takes them as deletion vectors, v2 as position-delete
    # files, so neither format refuses them. Row tracking is the catalog's (ICV3-ROW-TRACKING), so the
    # emitter's format-version check stays silent.
    dv = Metadata(
        schema_string=EMPTY_SCHEMA,
        configuration={
            "delta.columnMapping.mode": "name",
            "delta.enableIcebergCompatV3": "true",
            "delta.enableDeletionVectors": "true",
        },
    )
    _, problems = table_violations(V3_PROTOCOL, dv, 3)
    assert _rules(problems) == {"ICV3-ROW-TRACKING"}
    _, problems = table_violations(V3_PROTOCOL, dv, 2)
    assert _rules(problems) == {"ICV3-ROW-TRACKING"}

    # writer-v1 forbids deletion vectors itself (ICV2-NO-DELETION-VECTORS); asking for Iceberg v3 is
    # the emitter's business (writer-v1 has no row tracking).
    w1 = Metadata(
        schema_string=EMPTY_SCHEMA,
        configuration={
            "delta.columnMapping.mode": "id",
            "delta.columnMapping.maxColumnId": "0",
            "delta.enableIcebergCompatV2": "true",
            "delta.enableIcebergWriterCompatV1": "true",
            "delta.enableDeletionVectors": "true",
        },
    )
    _, problems = table_violations(W1_PROTOCOL, w1, 3)
    assert _rules(problems) == {"ICV2-NO-DELETION-VECTORS", "ICEBERG-EMIT-FORMAT-VERSION"}

    # IcebergCompatV2 without a writer profile: no catalog rule names the mode, so the emitter does.
    v2 = Metadata(schema_string=EMPTY_SCHEMA, configuration={"delta.enableIcebergCompatV2": "true"})
    _, problems = table_violations(V2_PROTOCOL, v2, 2)
    assert _rules(problems) == {"ICEBERG-EMIT-COLUMN-MAPPING"}
    named = Metadata(
        schema_string=EMPTY_SCHEMA, configuration={**v2.configuration, "delta.columnMapping.mode": "name"}
    )
    converted, problems = table_violations(V2_PROTOCOL, named, 2)
    assert problems == [] and converted is not None


def test_partition_values_are_typed() -> None:
    assert parse_partition_value("2024-03-01T12:34:56.789012Z", "timestamptz") == (
        (dt.datetime(2024, 3, 1, 12, 34, 56, 789012, tzinfo=UTC) - EPOCH) // dt.timedelta(microseconds=1)
    )
    assert parse_partition_value("1970-01-01 00:00:01.000004", "timestamp") == 1_000_004
    assert parse_partition_value("1970-01-03", "date") == 2
    assert parse_partition_value("-7", "int") == -7
    assert parse_partition_value("true", "boolean") is True
    assert parse_partition_value("", "string") is None
    assert parse_partition_value(None, "long") is None
    assert parse_partition_value("12.30", "decimal(5, 2)") == Decimal("12.30")
    # A zone-less value for a zoned timestamp depends on the writer's session zone: refused, not guessed.
    with pytest.raises(PartitionValueError):
        parse_partition_value("2024-03-01 12:34:56", "timestamptz")
    with pytest.raises(PartitionValueError):
        parse_partition_value("maybe", "boolean")


def test_binary_partition_values_are_the_utf8_bytes_delta_logged() -> None:
    # delta-spark logs a binary partition value through Spark's binary-to-string cast (UTF-8), e.g.
    # unhex('C3A9E282AC') as "é€" and unhex('0102') as "\x01\x02" (seen in a table it wrote).
    assert parse_partition_value("é€", "binary") == bytes.fromhex("C3A9E282AC")
    assert parse_partition_value("\x01\x02", "binary") == b"\x01\x02"
    # unhex('41FF42') is logged as "A\ufffdB": the byte 0xFF is not in the log, so nothing is guessed.
    with pytest.raises(PartitionValueError, match="U\\+FFFD"):
        parse_partition_value("A\ufffdB", "binary")


def test_single_value_serialization_follows_appendix_d() -> None:
    assert serialize(1, "int") == b"\x01\x00\x00\x00"
    assert serialize(-2, "long") == struct.pack("<q", -2)
    assert serialize(19_000, "date") == struct.pack("<i", 19_000)
    assert serialize("é", "string") == "é".encode()
    assert serialize(Decimal("12.34"), "decimal(10, 2)") == b"\x04\xd2"
    assert serialize(Decimal("-0.01"), "decimal(10, 2)") == b"\xff"
    assert serialize(Decimal("1.28"), "decimal(10, 2)") == b"\x00\x80"
    assert serialize(True, "boolean") == b"\x01"


def _schema_one(name: str, dtype: str) -> tuple:
    converted, problems = convert_schema(
        parse_schema({"type": "struct", "fields": [_field(name, dtype, 1)]}), 2
    )
    assert problems == []
    return converted, converted.primitives[1]


def _bounds(dtype: str, lo: object, hi: object, prefix: int = 32) -> tuple[bytes | None, bytes | None]:
    converted, _ = _schema_one("c", dtype)
    stats = {
        "numRecords": 3,
        "minValues": {"col-c": lo},
        "maxValues": {"col-c": hi},
        "nullCount": {"col-c": 1},
    }
    m = file_metrics(stats, converted, 3, {}, prefix)
    assert m.null_value_counts == {1: 1}
    assert m.value_counts == {1: 3}
    return m.lower_bounds.get(1), m.upper_bounds.get(1)


def _micros_of(b: bytes | None) -> int:
    assert b is not None
    return int(struct.unpack("<q", b)[0])


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_timestamp_bounds_cover_values_delta_truncated_to_milliseconds(micros: int) -> None:
    # Delta writes the millisecond floor of the true value; the bounds must still contain the value.
    millis = micros // 1000
    text = (
        (EPOCH + dt.timedelta(milliseconds=millis)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )
    lo, hi = _bounds("timestamp", text, text)
    assert _micros_of(lo) <= micros <= _micros_of(hi)
    ntz = text.removesuffix("Z")
    lo, hi = _bounds("timestamp_ntz", ntz, ntz)
    assert _micros_of(lo) <= micros <= _micros_of(hi)


def test_timestamp_upper_bound_is_widened_not_truncated() -> None:
    lo, hi = _bounds("timestamp", "2024-01-01T10:00:00.123Z", "2024-01-01T10:00:00.123Z")
    real = (dt.datetime(2024, 1, 1, 10, 0, 0, 123456, tzinfo=UTC) - EPOCH) // dt.timedelta(microseconds=1)
    assert _micros_of(hi) == real - 456 + 999
    assert _micros_of(lo) <= real


def test_string_upper_bound_is_dropped_when_delta_may_have_cut_it() -> None:
    long_max = "x" * 32 + "\U0010ffff"  # what Delta writes for a max cut at the 32-character prefix
    lo, hi = _bounds("string", "a" * 32, long_max)
    assert lo == b"a" * 32
    assert hi is None
    lo, hi = _bounds("string", "apple", "pear")
    assert (lo, hi) == (b"apple", b"pear")
    # A table with a longer prefix length keeps longer maxima.
    assert _bounds("string", "a", "y" * 40, prefix=64)[1] == b"y" * 40


def test_float_bounds_respect_signed_zero_and_nan() -> None:
    lo, hi = _bounds("double", Decimal("0.0"), Decimal("0.0"))
    assert lo == struct.pack("<d", -0.0)
    assert hi == struct.pack("<d", 0.0)
    lo, hi = _bounds("double", Decimal("-1.5"), "NaN")
    assert lo == struct.pack("<d", -1.5)
    assert hi is None  # NaN is never a bound
    lo, hi = _bounds("float", Decimal("1.1"), Decimal("1.1"))
    x = struct.unpack("<f", struct.pack("<f", 1.1))[0]
    assert struct.unpack("<f", lo)[0] <= x <= struct.unpack("<f", hi)[0]
    assert struct.unpack("<f", lo)[0] <= 1.1


def test_decimal_and_integer_bounds() -> None:
    lo, hi = _bounds("decimal(10,2)", Decimal("-12.34"), Decimal("99.5"))
    assert int.from_bytes(lo, "big", signed=True) == -1234
    assert int.from_bytes(hi, "big", signed=True) == 9950
    lo, hi = _bounds("long", 2**40, 2**41)
    assert struct.unpack("<q", lo)[0] == 2**40
    # A value out of the column's range is dropped rather than wrapped.
    assert _bounds("integer", 1, 2**40) == (struct.pack("<i", 1), None)


def test_partition_columns_get_exact_bounds_from_the_partition_value() -> None:
    converted, prim = _schema_one("p", "string")
    assert isinstance(prim, Primitive)
    m = file_metrics(parse_stats('{"numRecords":2}'), converted, 2, {1: "x"})
    assert (m.lower_bounds[1], m.upper_bounds[1], m.null_value_counts[1]) == (b"x", b"x", 0)
    m = file_metrics(None, converted, 2, {1: None})
    assert m.null_value_counts[1] == 2 and 1 not in m.lower_bounds


def _ids(schema: object) -> dict[str, int]:
    """field name path -> field-id of every Avro record field that carries one."""
    out: dict[str, int] = {}

    def walk(node: object, prefix: str) -> None:
        if isinstance(node, list):
            for n in node:
                walk(n, prefix)
        elif isinstance(node, dict):
            if node.get("type") == "record":
                for f in node["fields"]:
                    out[prefix + f["name"]] = f["field-id"]
                    walk(f["type"], prefix + f["name"] + ".")
            elif node.get("type") in ("array", "map"):
                walk(node.get("items"), prefix)

    walk(schema, "")
    return out


def test_avro_schemas_carry_the_spec_field_ids() -> None:
    entry = _ids(manifest_entry_schema([PartitionField(1000, "part col", "string")], 3))
    assert entry["status"] == 0 and entry["snapshot_id"] == 1 and entry["data_file"] == 2
    assert entry["data_file.partition"] == 102
    assert entry["data_file.partition.part_x20col"] == 1000
    assert entry["data_file.lower_bounds.key"] == 126 and entry["data_file.lower_bounds.value"] == 127
    assert entry["data_file.first_row_id"] == 142
    assert "data_file.first_row_id" not in _ids(manifest_entry_schema([], 2))
    mlist = _ids(manifest_file_schema(3))
    assert mlist["manifest_path"] == 500 and mlist["added_rows_count"] == 512 and mlist["first_row_id"] == 520
    assert mlist["partitions.contains_null"] == 509


def test_avro_schema_attributes_survive_a_fastavro_round_trip(tmp_path: Path) -> None:
    schema = manifest_file_schema(2)
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [])
    buf.seek(0)
    header = fastavro.reader(buf).metadata["avro.schema"]
    assert '"field-id": 500' in header.replace('"field-id":500', '"field-id": 500')


def test_avro_names_are_legal() -> None:
    assert avro_name("ok_name1") == "ok_name1"
    assert avro_name("1st") == "_1st"
    assert avro_name("a-b c") == "a_x2Db_x20c"


def test_what_only_delta_spark_refuses_does_not_block_the_iceberg_view() -> None:
    """A decimal partition column is refused for delta-spark's writes (DELTA-SPARK-DECIMAL-PARTITION),
    but a table another writer made with one converts: Iceberg partitions by decimals."""
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "d", "type": "decimal(12,5)", "nullable": True, "metadata": {}},
        ],
    }
    planned = plan("v3", Metadata(json.dumps(schema), (), {}, id="t"))
    md = dataclasses.replace(planned.metadata, partition_columns=("d",))
    assert [v.rule for v in validate("v3", md, planned.protocol)] == ["DELTA-SPARK-DECIMAL-PARTITION"]
    converted, problems = table_violations(planned.protocol, md, 3)
    assert problems == [] and converted is not None


def test_metadata_updates_record_snapshots_refs_and_row_lineage() -> None:
    meta = TableMetadata.new(3, "0b4b4f8e-5f0c-4d8a-9f2e-1c7d5b3a2e10", "file:///t")
    meta.apply((AddSchema({"type": "struct", "fields": []}), SetCurrentSchema(0), RaiseLastColumnId(4)))
    meta.apply((RaiseLastColumnId(2), AddPartitionSpec(()), SetDefaultSpec(0)))
    assert (meta.current_schema_id, meta.last_column_id, meta.default_spec_id) == (0, 4, 0)
    first = Snapshot(11, 1, 1000, "file:///t/metadata/snap-11.avro", {}, 0, None, 0, 5)
    second = Snapshot(12, 3, 2000, "file:///t/metadata/snap-12.avro", {}, 0, 11, 5, 2)
    meta.apply((AddSnapshot(first), SetSnapshotRef(11), SetProperties((("a", "1"), ("b", "2")))))
    meta.apply((AddSnapshot(second),))
    # Recorded but not yet current: the ref moves only with its own update.
    assert (meta.current_snapshot_id, meta.last_sequence_number, meta.next_row_id) == (11, 3, 7)
    meta.apply((SetSnapshotRef(12),))
    doc = meta.to_json()
    assert doc["refs"] == {"main": {"snapshot-id": 12, "type": "branch"}} and doc["current-snapshot-id"] == 12
    assert doc["snapshot-log"] == [
        {"timestamp-ms": 1000, "snapshot-id": 11},
        {"timestamp-ms": 2000, "snapshot-id": 12},
    ]
    assert list(doc["properties"]) == ["a", "b"]
    with pytest.raises(ValueError, match="only the main branch"):
        meta.apply((SetSnapshotRef(11, "audit"),))
    with pytest.raises(TableReadError, match="snapshot 99 is not in the table metadata"):
        meta.apply((SetSnapshotRef(99),))
