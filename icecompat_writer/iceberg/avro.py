"""Manifests and manifest lists as Avro files (fastavro), with Iceberg's field ids in the schema.

Iceberg readers match Avro fields by the ``field-id`` attributes of the writer schema, so the schemas
below carry the ids of the spec's ``manifest_entry``/``data_file`` and ``manifest_file`` structs. The
record names follow the reference implementation (``r2``, ``r102``, ``k117_v118``, ...) because some
readers look records up by name. Encoding is fastavro's; nothing here writes Avro bytes by hand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from io import BytesIO
from typing import Any, TypedDict, cast

import fastavro

from icecompat_writer.schema import JsonDict, JsonObject, iceberg_decimal_params
from icecompat_writer.storage import FileIO, Location

__all__ = [
    "CODEC",
    "DataFileRecord",
    "KeyValue",
    "ManifestEntryRecord",
    "PartitionField",
    "avro_name",
    "deletion_vector_record",
    "manifest_entry_schema",
    "manifest_file_schema",
    "read_avro",
    "write_manifest",
    "write_manifest_list",
]

CODEC = "deflate"

_AVRO_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def avro_name(name: str) -> str:
    """An Avro-legal record field name for any column name (invalid characters become ``_x<HEX>``)."""
    if _AVRO_NAME.match(name):
        return name
    out = []
    for i, ch in enumerate(name):
        if ch == "_" or (ch.isascii() and ch.isalpha()) or (i > 0 and ch.isascii() and ch.isdigit()):
            out.append(ch)
        elif i == 0 and ch.isascii() and ch.isdigit():
            out.append("_" + ch)
        else:
            out.append(f"_x{ord(ch):X}")
    return "".join(out) or "_"


def _opt(avro_type: object) -> list[object]:
    return ["null", avro_type]


def _field(name: str, avro_type: object, field_id: int, optional: bool = False) -> JsonDict:
    out: JsonDict = {
        "name": name,
        "type": _opt(avro_type) if optional else avro_type,
        "field-id": field_id,
    }
    if optional:
        out["default"] = None
    return out


def _kv_map(key_id: int, value_id: int, value_type: str) -> JsonDict:
    """Iceberg's int-keyed map as Avro: an array of key/value records with ``logicalType: map``."""
    return {
        "type": "array",
        "logicalType": "map",
        "items": {
            "type": "record",
            "name": f"k{key_id}_v{value_id}",
            "fields": [
                {"name": "key", "type": "int", "field-id": key_id},
                {"name": "value", "type": value_type, "field-id": value_id},
            ],
        },
    }


def primitive_avro_type(iceberg_type: str, unique: str) -> str | JsonDict:
    """Avro type of an Iceberg primitive (spec Appendix A); ``unique`` names fixed types apart."""
    simple = {
        "boolean": "boolean",
        "int": "int",
        "long": "long",
        "float": "float",
        "double": "double",
        "string": "string",
        "binary": "bytes",
    }
    if iceberg_type in simple:
        return simple[iceberg_type]
    if iceberg_type == "date":
        return {"type": "int", "logicalType": "date"}
    if iceberg_type in ("timestamp", "timestamptz"):
        return {
            "type": "long",
            "logicalType": "timestamp-micros",
            "adjust-to-utc": iceberg_type == "timestamptz",
        }
    params = iceberg_decimal_params(iceberg_type)
    if params is not None:
        precision, scale = params
        size = 1
        while 2 ** (8 * size - 1) < 10**precision:
            size += 1
        return {
            "type": "fixed",
            "name": f"decimal_{precision}_{scale}_{unique}",
            "size": size,
            "logicalType": "decimal",
            "precision": precision,
            "scale": scale,
        }
    raise ValueError(f"no Avro mapping for partition type {iceberg_type}")


class PartitionField:
    """One field of a partition spec as the manifest's ``partition`` struct needs it."""

    def __init__(self, field_id: int, name: str, result_type: str) -> None:
        self.field_id = field_id
        self.name = name
        self.result_type = result_type


def manifest_entry_schema(partition: Sequence[PartitionField], format_version: int) -> JsonDict:
    """The Avro schema of ``manifest_entry`` for one partition spec (spec "Manifests")."""
    part_fields = [
        _field(
            avro_name(p.name), primitive_avro_type(p.result_type, str(p.field_id)), p.field_id, optional=True
        )
        for p in partition
    ]
    data_file: list[JsonDict] = [
        _field("content", "int", 134),
        _field("file_path", "string", 100),
        _field("file_format", "string", 101),
        _field("partition", {"type": "record", "name": "r102", "fields": part_fields}, 102),
        _field("record_count", "long", 103),
        _field("file_size_in_bytes", "long", 104),
        _field("column_sizes", _kv_map(117, 118, "long"), 108, optional=True),
        _field("value_counts", _kv_map(119, 120, "long"), 109, optional=True),
        _field("null_value_counts", _kv_map(121, 122, "long"), 110, optional=True),
        _field("nan_value_counts", _kv_map(138, 139, "long"), 137, optional=True),
        _field("lower_bounds", _kv_map(126, 127, "bytes"), 125, optional=True),
        _field("upper_bounds", _kv_map(129, 130, "bytes"), 128, optional=True),
        _field("key_metadata", "bytes", 131, optional=True),
        _field("split_offsets", {"type": "array", "items": "long", "element-id": 133}, 132, optional=True),
        _field("equality_ids", {"type": "array", "items": "int", "element-id": 136}, 135, optional=True),
        _field("sort_order_id", "int", 140, optional=True),
    ]
    if format_version >= 3:
        data_file.append(_field("first_row_id", "long", 142, optional=True))
    data_file.append(_field("referenced_data_file", "string", 143, optional=True))
    if format_version >= 3:  # where a deletion vector's blob lies in its Puffin file
        data_file.append(_field("content_offset", "long", 144, optional=True))
        data_file.append(_field("content_size_in_bytes", "long", 145, optional=True))
    return {
        "type": "record",
        "name": "manifest_entry",
        "fields": [
            _field("status", "int", 0),
            _field("snapshot_id", "long", 1, optional=True),
            _field("sequence_number", "long", 3, optional=True),
            _field("file_sequence_number", "long", 4, optional=True),
            _field("data_file", {"type": "record", "name": "r2", "fields": data_file}, 2),
        ],
    }


def manifest_file_schema(format_version: int) -> JsonDict:
    """The Avro schema of ``manifest_file``, the rows of a manifest list (spec "Manifest Lists")."""
    summary = {
        "type": "record",
        "name": "r508",
        "fields": [
            _field("contains_null", "boolean", 509),
            _field("contains_nan", "boolean", 518, optional=True),
            _field("lower_bound", "bytes", 510, optional=True),
            _field("upper_bound", "bytes", 511, optional=True),
        ],
    }
    fields = [
        _field("manifest_path", "string", 500),
        _field("manifest_length", "long", 501),
        _field("partition_spec_id", "int", 502),
        _field("content", "int", 517),
        _field("sequence_number", "long", 515),
        _field("min_sequence_number", "long", 516),
        _field("added_snapshot_id", "long", 503),
        _field("added_files_count", "int", 504),
        _field("existing_files_count", "int", 505),
        _field("deleted_files_count", "int", 506),
        _field("added_rows_count", "long", 512),
        _field("existing_rows_count", "long", 513),
        _field("deleted_rows_count", "long", 514),
        _field("partitions", {"type": "array", "items": summary, "element-id": 508}, 507, optional=True),
        _field("key_metadata", "bytes", 519, optional=True),
    ]
    if format_version >= 3:
        fields.append(_field("first_row_id", "long", 520, optional=True))
    return {"type": "record", "name": "manifest_file", "fields": fields}


class KeyValue(TypedDict):
    """One entry of an Avro map keyed by field id (Iceberg writes such maps as key/value lists)."""

    key: int
    value: Any  # an int (counts) or bytes (bounds)


class _DataFileRequired(TypedDict):
    """The keys of :class:`DataFileRecord` that every manifest has."""

    content: int
    file_path: str
    file_format: str
    partition: dict[str, Any]
    record_count: int
    file_size_in_bytes: int


class DataFileRecord(_DataFileRequired, total=False):
    """The spec's ``data_file`` struct as the manifests hold it (one Avro record).

    The six keys of :class:`_DataFileRequired` are in every manifest; the rest are optional in the Avro
    schema and may be absent from a record read back from a manifest of an older format version (e.g.
    ``first_row_id`` under format 2), hence ``total=False`` (what ``typing.NotRequired`` says from
    Python 3.11 on; the package supports 3.10). ``partition`` maps the partition field's Avro name to
    its raw value.
    """

    column_sizes: list[KeyValue] | None
    value_counts: list[KeyValue] | None
    null_value_counts: list[KeyValue] | None
    nan_value_counts: list[KeyValue] | None
    lower_bounds: list[KeyValue] | None
    upper_bounds: list[KeyValue] | None
    key_metadata: bytes | None
    split_offsets: list[int] | None
    equality_ids: list[int] | None
    sort_order_id: int | None
    first_row_id: int | None
    referenced_data_file: str | None
    content_offset: int | None
    content_size_in_bytes: int | None


class ManifestEntryRecord(TypedDict):
    """The spec's ``manifest_entry`` as written: a None sequence number is inherited from the
    manifest list (the entries a snapshot adds), any other value is explicit."""

    status: int
    snapshot_id: int
    sequence_number: int | None
    file_sequence_number: int | None
    data_file: DataFileRecord


def _kv(d: Mapping[int, Any] | None) -> list[KeyValue] | None:
    if d is None:
        return None
    return [{"key": int(k), "value": v} for k, v in sorted(d.items())]


def data_file_record(
    *,
    file_path: str,
    partition: Mapping[str, Any],
    record_count: int,
    file_size: int,
    value_counts: Mapping[int, int] | None,
    null_value_counts: Mapping[int, int] | None,
    lower_bounds: Mapping[int, bytes] | None,
    upper_bounds: Mapping[int, bytes] | None,
    first_row_id: int | None = None,
) -> DataFileRecord:
    """A ``data_file`` record for a Parquet data file (content 0), maps as key/value lists."""
    return {
        "content": 0,
        "file_path": file_path,
        "file_format": "PARQUET",
        "partition": dict(partition),
        "record_count": int(record_count),
        "file_size_in_bytes": int(file_size),
        "column_sizes": None,
        "value_counts": _kv(value_counts),
        "null_value_counts": _kv(null_value_counts),
        "nan_value_counts": None,
        "lower_bounds": _kv(lower_bounds),
        "upper_bounds": _kv(upper_bounds),
        "key_metadata": None,
        "split_offsets": None,
        "equality_ids": None,
        "sort_order_id": None,
        "first_row_id": first_row_id,
        "referenced_data_file": None,
        "content_offset": None,
        "content_size_in_bytes": None,
    }


def deletion_vector_record(
    *,
    puffin_path: str,
    puffin_size: int,
    partition: Mapping[str, Any],
    referenced_data_file: str,
    offset: int,
    length: int,
    cardinality: int,
) -> DataFileRecord:
    """A ``data_file`` record for a deletion vector (content 1, position deletes, format PUFFIN).

    ``partition`` is the referenced data file's (a DV applies only within its data file's partition);
    ``offset``/``length`` are the blob's in the Puffin footer, ``cardinality`` its deleted-row count.
    """
    return {
        "content": 1,
        "file_path": puffin_path,
        "file_format": "PUFFIN",
        "partition": dict(partition),
        "record_count": int(cardinality),
        "file_size_in_bytes": int(puffin_size),
        "column_sizes": None,
        "value_counts": None,
        "null_value_counts": None,
        "nan_value_counts": None,
        "lower_bounds": None,
        "upper_bounds": None,
        "key_metadata": None,
        "split_offsets": None,
        "equality_ids": None,
        "sort_order_id": None,
        "first_row_id": None,
        "referenced_data_file": referenced_data_file,
        "content_offset": int(offset),
        "content_size_in_bytes": int(length),
    }


def _write(
    path: Location,
    schema: JsonDict,
    records: Iterable[Mapping[str, Any]],
    meta: Mapping[str, str],
    io: FileIO,
) -> int:
    """Write an Avro file (schema ids kept as attributes) and return its length in bytes."""
    parsed = fastavro.parse_schema(schema)
    buf = BytesIO()
    fastavro.writer(buf, parsed, list(records), metadata=dict(meta), codec=CODEC)
    data = buf.getvalue()
    # Names carry a run id: an existing file is a bug, never overwritten.
    if not io.new_output(path).create(data):
        raise FileExistsError(17, f"{path} exists", str(path))
    return len(data)


def write_manifest(
    path: Location,
    entries: Sequence[ManifestEntryRecord],
    *,
    partition: Sequence[PartitionField],
    partition_spec_json: Sequence[JsonObject],
    spec_id: int,
    schema_json: JsonObject,
    format_version: int,
    content: str = "data",
    io: FileIO,
) -> int:
    """Write one manifest (``content`` ``data`` or ``deletes``); the key/value metadata is what spec
    "Manifests" requires for v2/v3."""
    schema = manifest_entry_schema(partition, format_version)
    meta = {
        "schema": json.dumps(schema_json, separators=(",", ":")),
        "schema-id": str(schema_json.get("schema-id", 0)),
        "partition-spec": json.dumps(list(partition_spec_json), separators=(",", ":")),
        "partition-spec-id": str(spec_id),
        "format-version": str(format_version),
        "content": content,
    }
    records: list[ManifestEntryRecord] = []
    for e in entries:
        df = e["data_file"].copy()
        if format_version < 3:  # fields format 2 does not define
            df.pop("first_row_id", None)
            df.pop("content_offset", None)
            df.pop("content_size_in_bytes", None)
        records.append({**e, "data_file": df})
    return _write(path, schema, records, meta, io)


def write_manifest_list(
    path: Location,
    manifests: Sequence[Mapping[str, Any]],
    *,
    snapshot_id: int,
    parent_snapshot_id: int | None,
    sequence_number: int,
    format_version: int,
    first_row_id: int | None = None,
    io: FileIO,
) -> int:
    """Write a snapshot's manifest list."""
    meta = {
        "snapshot-id": str(snapshot_id),
        "parent-snapshot-id": "null" if parent_snapshot_id is None else str(parent_snapshot_id),
        "sequence-number": str(sequence_number),
        "format-version": str(format_version),
    }
    if format_version >= 3 and first_row_id is not None:
        meta["first-row-id"] = str(first_row_id)
    records = []
    for m in manifests:
        rec = dict(m)
        if format_version < 3:
            rec.pop("first_row_id", None)
        records.append(rec)
    return _write(path, manifest_file_schema(format_version), records, meta, io)


Record = dict[str, Any]
"""One decoded Avro record (fastavro's values are untyped; readers narrow what they use)."""


def _record(r: object) -> Record:
    return dict(cast(Mapping[str, Any], r))


def read_avro(path: Location, *, io: FileIO) -> tuple[list[Record], dict[str, str]]:
    """All records of an Avro file and its key/value metadata (logical types converted by fastavro);
    ``io``: the table's FileIO."""
    reader = fastavro.reader(BytesIO(io.new_input(path).read()))
    meta = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in reader.metadata.items()}
    return [_record(r) for r in reader], meta


def read_manifest_index(path: Location, *, io: FileIO) -> list[Record]:
    """The records of a manifest with only what a live-file index needs: ``status`` and, of
    ``data_file``, ``content``, ``file_path``, ``record_count``, ``file_size_in_bytes``,
    ``referenced_data_file`` and ``content_offset`` (a reader schema drops the rest, which fastavro
    then skips instead of decoding: about twice as fast on manifests with column metrics)."""
    data = io.new_input(path).read()
    schema = json.loads(json.dumps(fastavro.reader(BytesIO(data)).writer_schema))  # a copy to narrow
    schema["fields"] = [f for f in schema["fields"] if f["name"] in ("status", "data_file")]
    for f in schema["fields"]:
        if f["name"] == "data_file":
            f["type"]["fields"] = [x for x in f["type"]["fields"] if x["name"] in _INDEX_FIELDS]
    return [_record(r) for r in fastavro.reader(BytesIO(data), reader_schema=schema)]


_INDEX_FIELDS = frozenset(
    {"content", "file_path", "record_count", "file_size_in_bytes", "referenced_data_file", "content_offset"}
)
