"""Reading Parquet footers (never data) into the facts the file-level rules check.

Iceberg resolves columns by field id, so the checker must see every id a file carries, on every node:
struct fields, LIST elements, MAP keys and values. pyarrow's Arrow schema keeps ids only on the nodes
Arrow has (it folds the LIST/MAP wrapper levels away) and its ``ParquetSchema`` lists leaf columns
only, so neither shows the file's real tree. The schema tree is therefore decoded here from the
footer's Thrift ``FileMetaData`` (compact protocol, the ``schema`` list only), which is exactly what the
file says, including legacy two-level lists and ids on repeated groups. pyarrow still opens the footer
first: it validates the file and provides the row count, ``created_by``, the key-value metadata and
the leaf logical-type text (so that text is identical to what pyarrow prints elsewhere).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icecompat_writer.deltalog.files import AddFile
from icecompat_writer.deltalog.paths import resolve_data_path, table_root_path
from icecompat_writer.errors import TableReadError
from icecompat_writer.facts import DataFileFacts, ParquetField, ParquetFooter
from icecompat_writer.storage import FileIO, Location, ObjectPath
from icecompat_writer.storage.local import NotRegularFileError, open_regular_file

__all__ = [
    "TAIL_BYTES",
    "FooterReadError",
    "decode_footer",
    "file_facts",
    "read_footer",
    "read_listed_footer",
    "read_object_footer",
]

TAIL_BYTES = 64 * 1024
"""How much of an object's end one ranged read fetches for its footer: most footers fit (a file with
hundreds of columns and row groups may not, and is then read once more, exactly the footer)."""

_MAGIC = b"PAR1"
_ENCRYPTED_MAGIC = b"PARE"
_PHYSICAL = (
    "BOOLEAN",
    "INT32",
    "INT64",
    "INT96",
    "FLOAT",
    "DOUBLE",
    "BYTE_ARRAY",
    "FIXED_LEN_BYTE_ARRAY",
)
_REPETITION = ("REQUIRED", "OPTIONAL", "REPEATED")
# parquet.thrift ConvertedType values that annotate groups.
_GROUP_CONVERTED = {1: "MAP", 2: "MAP_KEY_VALUE", 3: "LIST"}
# parquet.thrift LogicalType union members that annotate groups.
_GROUP_LOGICAL = {2: "MAP", 3: "LIST", 16: "VARIANT"}


class FooterReadError(TableReadError):
    """A data file's footer could not be read: missing, not Parquet, truncated, encrypted.

    The checker turns it into a finding for that one file; the rest of the table is still checked.
    """

    def __init__(self, path: str | os.PathLike[str] | ObjectPath, reason: str) -> None:
        super().__init__(f"cannot read the Parquet footer of {path}: {reason}")
        self.path = str(path)
        self.reason = reason


def decode_footer(footer: bytes, where: str | os.PathLike[str] | ObjectPath) -> ParquetFooter:
    """The facts of one Parquet footer from its bytes: the Thrift ``FileMetaData`` a file ends with
    (before its 4-byte length and end magic), however it was read.

    Every reader comes here: a local file, an object's ranged tail read, the footer bytes the session
    guard's JVM sent. ``where`` names the file in errors. Raises :class:`FooterReadError` when the
    bytes are not a footer pyarrow and the schema decoder accept.
    """
    raw_schema = _decode_schema(where, footer)
    try:  # framed as a minimal Parquet file, which is what pyarrow's reader takes
        meta = pq.read_metadata(pa.BufferReader(_MAGIC + footer + struct.pack("<I", len(footer)) + _MAGIC))
    except (OSError, pa.ArrowException, ValueError) as e:
        raise FooterReadError(where, f"pyarrow cannot open it ({e})") from e
    try:
        return _footer(where, raw_schema, meta)
    except RecursionError:  # groups nested deeper than the tree builder recurses
        raise FooterReadError(where, "the footer's schema is nested too deeply") from None


def read_footer(path: str | os.PathLike[str] | ObjectPath, *, io: FileIO) -> ParquetFooter:
    """The footer of one Parquet file: row count, writer, key-value metadata and the schema tree.

    Only the footer is read, through ``io``. Raises :class:`FooterReadError` for a missing, empty,
    truncated, encrypted or non-Parquet file. A file in an object store is read by
    :func:`read_object_footer`; a local one with one open (its start magic checked too).
    """
    location = io.new_input(path).location
    if io.remote:
        return read_object_footer(location, io=io)[0]
    local = Path(str(location))
    return decode_footer(_local_footer_bytes(local), local)


def read_object_footer(path: Location, *, io: FileIO) -> tuple[ParquetFooter, int]:
    """The footer of a Parquet object and the object's size, from one ranged read of its tail.

    The last :data:`TAIL_BYTES` are fetched at once; only a footer longer than that costs a second
    ranged read of exactly the footer. The start magic is not fetched (that would be another request):
    a file is accepted as Parquet by its end magic and a footer pyarrow can decode.
    """
    source = io.new_input(path)
    try:
        tail, size = source.read_tail(TAIL_BYTES)
        _check_end(path, tail[-8:], size)
        (length,) = struct.unpack("<I", tail[-8:-4])
        if length + 8 > len(tail):
            footer = source.read_range(size - 8 - length, length)
        else:
            footer = tail[len(tail) - 8 - length : len(tail) - 8]
    except FileNotFoundError:
        raise FooterReadError(path, "the file does not exist") from None
    except OSError as e:
        raise FooterReadError(path, str(e)) from e
    return decode_footer(footer, path), size


def read_listed_footer(path: Location, size: int, *, io: FileIO) -> ParquetFooter:
    """The footer of a Parquet object whose size a listing gave: one ranged read, no size request.

    pyarrow fetches the footer (from the last 64 KiB; a longer one costs one more ranged read) and
    serialises the same Thrift ``FileMetaData`` back, whose bytes are decoded as any other footer's.
    """
    if size < 12:
        raise FooterReadError(path, f"{size} bytes is too small for a Parquet file")
    try:
        meta = io.new_input(path, size).parquet_metadata()
    except FileNotFoundError:
        raise FooterReadError(path, "the file does not exist") from None
    except (OSError, pa.ArrowException, ValueError) as e:
        text = str(e)
        if "encrypted" in text.lower() or "PARE" in text:
            raise FooterReadError(path, "the footer is encrypted") from e
        if "magic" in text.lower():
            raise FooterReadError(path, "no Parquet magic at the end (not Parquet, or truncated)") from e
        raise FooterReadError(path, f"pyarrow cannot open it ({e})") from e
    sink = pa.BufferOutputStream()
    meta.write_metadata_file(sink)
    data = sink.getvalue().to_pybytes()
    (length,) = struct.unpack("<I", data[-8:-4])
    return decode_footer(data[-8 - length : -8], path)


def _check_end(path: Any, tail: bytes, size: int) -> None:  # noqa: ANN401  # Thrift compact values, decoded untyped
    """A file's last 8 bytes (footer length, end magic) fit a Parquet file of ``size`` bytes."""
    if size < 12:
        raise FooterReadError(path, f"{size} bytes is too small for a Parquet file")
    if tail[4:] == _ENCRYPTED_MAGIC:
        raise FooterReadError(path, "the footer is encrypted")
    if tail[4:] != _MAGIC:
        raise FooterReadError(path, "no Parquet magic at the end (not Parquet, or truncated)")
    (length,) = struct.unpack("<I", tail[:4])
    if length <= 0 or length > size - 12:
        raise FooterReadError(path, f"footer length {length} does not fit a {size}-byte file")


def _footer(path: Any, raw_schema: list[dict[int, Any]], meta: pq.FileMetaData) -> ParquetFooter:  # noqa: ANN401  # Thrift compact values, decoded untyped
    leaves = meta.schema
    kv = meta.metadata or {}
    key_value = {
        k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in kv.items() if v is not None
    }
    fields = _SCHEMAS.tree(raw_schema)
    if fields is None:
        fields = _build_tree(path, raw_schema, leaves)
        _SCHEMAS.store_tree(raw_schema, fields)
    return ParquetFooter(
        num_rows=meta.num_rows,
        fields=fields,
        created_by=meta.created_by,
        key_value_metadata=MappingProxyType(key_value),
    )


def file_facts(
    table_root: str | Path | ObjectPath,
    add_file: AddFile,
    read_footer: bool = True,
    *,
    io: FileIO,
) -> DataFileFacts:
    """Facts of one live data file: its AddFile's claims and, if asked, its footer (read through ``io``).

    A path that resolves outside the table root is never opened; like an unreadable footer it ends
    up in ``footer_error``, so one bad file never stops the audit of the others.
    """
    footer: ParquetFooter | None = None
    error: str | None = None
    if read_footer:
        root = table_root_path(table_root)
        local = resolve_data_path(root, add_file.path)
        if local is None:
            error = f"path {add_file.path!r} resolves outside the table root {root}; not opened"
        else:
            try:
                footer = _read_footer(local, io=io)
            except FooterReadError as e:
                error = str(e)
    return DataFileFacts(
        path=add_file.path,
        partition_values=add_file.partition_values,
        num_records=add_file.num_records,
        has_stats=bool(add_file.stats),
        base_row_id=add_file.base_row_id,
        default_row_commit_version=add_file.default_row_commit_version,
        has_deletion_vector=add_file.deletion_vector is not None,
        footer=footer,
        footer_error=error,
    )


_read_footer = read_footer  # file_facts's parameter shadows the function's name


# --- the footer's schema list ----------------------------------------------------------------------


def _local_footer_bytes(path: Path) -> bytes:
    """The footer bytes of a local file, its start and end magic checked (a local read is cheap)."""
    try:
        with open_regular_file(path) as fh:  # a named pipe would block, a device never end
            size = os.fstat(fh.fileno()).st_size
            if size >= 8:
                fh.seek(size - 8)
            tail = fh.read(8)
            _check_end(path, tail, size)
            (length,) = struct.unpack("<I", tail[:4])
            fh.seek(0)
            if fh.read(4) != _MAGIC:
                raise FooterReadError(path, "no Parquet magic at the start")
            fh.seek(size - 8 - length)
            return fh.read(length)
    except FileNotFoundError:
        raise FooterReadError(path, "the file does not exist") from None
    except NotRegularFileError as e:
        raise FooterReadError(path, f"it is {e.kind}, not a regular file; it was not opened") from None
    except OSError as e:
        raise FooterReadError(path, str(e)) from e


class _SchemaCache:
    """Decoded schema lists (and the trees built from them) by the exact bytes that encode them.

    The files of one table are mostly written with one schema by one writer, so their footers start
    with the same bytes (FileMetaData's version and schema list come first); decoding those bytes and
    rebuilding the tree is deterministic, so identical bytes are decoded once. Bounded: a few schemas.
    """

    SIZE = 16

    def __init__(self) -> None:
        self.schemas: dict[bytes, list[dict[int, Any]]] = {}
        self.trees: dict[int, tuple[list[dict[int, Any]], tuple[ParquetField, ...]]] = {}

    def lookup(self, data: bytes) -> list[dict[int, Any]] | None:
        for prefix, schema in list(self.schemas.items()):
            if data.startswith(prefix):
                return schema
        return None

    def store(self, prefix: bytes, schema: list[dict[int, Any]]) -> None:
        if len(self.schemas) >= self.SIZE:
            self.schemas.clear()
            self.trees.clear()
        self.schemas[prefix] = schema

    def tree(self, schema: list[dict[int, Any]]) -> tuple[ParquetField, ...] | None:
        hit = self.trees.get(id(schema))
        return hit[1] if hit is not None and hit[0] is schema else None

    def store_tree(self, schema: list[dict[int, Any]], tree: tuple[ParquetField, ...]) -> None:
        if any(s is schema for s in self.schemas.values()):  # only cached lists, which stay alive
            self.trees[id(schema)] = (schema, tree)


_SCHEMAS = _SchemaCache()


def _decode_schema(path: Any, data: bytes) -> list[dict[int, Any]]:  # noqa: ANN401  # Thrift compact values, decoded untyped
    cached = _SCHEMAS.lookup(data)
    if cached is not None:
        return cached
    try:
        reader = _CompactReader(data)
        schema = reader.file_metadata_schema()
        _SCHEMAS.store(bytes(data[: reader.pos]), schema)
        return schema
    except (IndexError, ValueError, TypeError, struct.error) as e:
        # TypeError: a map keyed by lists or structs (unhashable), which no Parquet footer has
        raise FooterReadError(path, f"the footer is damaged ({e})") from e
    except RecursionError:
        raise FooterReadError(path, "the footer is damaged (structures nested too deeply)") from None


class _CompactReader:
    """Just enough of Thrift's compact protocol to walk FileMetaData up to its schema list.

    FileMetaData's fields are written in id order (1 version, 2 schema, 3 num_rows, 4 row_groups,
    ...), so decoding stops once field 2 is read: row-group metadata, the large part of a big footer,
    is never decoded.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 70:
                raise ValueError("varint too long")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def binary(self) -> bytes:
        n = self.varint()
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("binary length beyond the footer")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def value(self, ttype: int) -> Any:  # noqa: ANN401  # Thrift compact values, decoded untyped
        if ttype == 1:
            return True
        if ttype == 2:
            return False
        if ttype == 3:
            b = self.byte()
            return b - 256 if b > 127 else b
        if ttype in (4, 5, 6):
            return self.zigzag()
        if ttype == 7:
            out = struct.unpack("<d", self.data[self.pos : self.pos + 8])[0]
            self.pos += 8
            return out
        if ttype == 8:
            return self.binary()
        if ttype in (9, 10):
            return self.list_()
        if ttype == 11:
            return self.map_()
        if ttype == 12:
            return self.struct_()
        raise ValueError(f"unknown thrift type {ttype}")

    def count(self, size: int, min_bytes: int) -> int:
        """A container's declared element count, refused when the bytes left cannot hold it.

        Every element takes at least ``min_bytes`` bytes, so a larger count is damage; checking it
        up front keeps a forged count (up to 2^70 from a varint) from driving a loop that would
        otherwise run for a very long time before the data ran out.
        """
        if size * min_bytes > len(self.data) - self.pos:
            raise ValueError(f"container of {size} elements is longer than the footer")
        return size

    def element(self, etype: int) -> Any:  # noqa: ANN401  # Thrift compact values, decoded untyped
        """One element of a list or map: unlike a struct field's, a boolean here is a byte of its own."""
        if etype in (1, 2):
            return self.byte() == 1
        return self.value(etype)

    def list_(self) -> list[Any]:
        header = self.byte()
        size, etype = header >> 4, header & 0x0F
        if size == 15:
            size = self.varint()
        return [self.element(etype) for _ in range(self.count(size, 1))]

    def map_(self) -> dict[Any, Any]:
        size = self.varint()
        if size == 0:
            return {}
        types = self.byte()
        ktype, vtype = types >> 4, types & 0x0F
        return {self.element(ktype): self.element(vtype) for _ in range(self.count(size, 2))}

    def field_header(self, last_id: int) -> tuple[int, int] | None:
        header = self.byte()
        if header == 0:
            return None
        delta, ttype = header >> 4, header & 0x0F
        field_id = last_id + delta if delta else self.zigzag()
        return field_id, ttype

    def struct_(self) -> dict[int, Any]:
        out: dict[int, Any] = {}
        last = 0
        while (header := self.field_header(last)) is not None:
            last, ttype = header
            out[last] = self.value(ttype)
        return out

    def file_metadata_schema(self) -> list[dict[int, Any]]:
        last = 0
        while (header := self.field_header(last)) is not None:
            last, ttype = header
            if last == 2:
                if ttype != 9:
                    raise ValueError("FileMetaData.schema is not a list")
                schema = self.list_()
                if not schema or not all(isinstance(e, dict) for e in schema):
                    raise ValueError("FileMetaData.schema is empty or malformed")
                return schema
            self.value(ttype)
        raise ValueError("FileMetaData has no schema")


def _build_tree(
    path: Path, elements: list[dict[int, Any]], leaves: pq.ParquetSchema
) -> tuple[ParquetField, ...]:
    """Rebuild the tree from the flattened (pre-order, ``num_children``) schema list.

    Leaf nodes take their logical-type text from pyarrow's column descriptors, matched by position
    (both enumerate leaves depth-first); the counts must agree or the footer is not what pyarrow saw.
    """
    leaf_types: list[str | None] = []
    for i in range(len(leaves)):
        col = leaves.column(i)
        text = str(col.logical_type)
        leaf_types.append(None if text in ("None", "") else text)
    pos = 1  # element 0 is the root
    leaf_index = 0

    def node() -> ParquetField:
        nonlocal pos, leaf_index
        if pos >= len(elements):
            raise FooterReadError(path, "the schema list ends inside a group")
        el = elements[pos]
        pos += 1
        name_raw = el.get(4, b"")
        name = name_raw.decode("utf-8", "replace") if isinstance(name_raw, bytes) else str(name_raw)
        repetition = _enum(_REPETITION, el.get(3))
        field_id = el.get(9)
        num_children = el.get(5)
        if num_children is not None and el.get(1) is None:
            children = tuple(node() for _ in range(num_children))
            return ParquetField(
                name=name,
                field_id=field_id,
                physical_type=None,
                logical_type=_group_logical(el),
                repetition=repetition,
                children=children,
            )
        if leaf_index >= len(leaf_types):
            raise FooterReadError(path, "the footer has more leaf columns than pyarrow reports")
        logical = leaf_types[leaf_index]
        leaf_index += 1
        return ParquetField(
            name=name,
            field_id=field_id,
            physical_type=_enum(_PHYSICAL, el.get(1)),
            logical_type=logical,
            repetition=repetition,
        )

    root_children = elements[0].get(5) or 0
    fields = tuple(node() for _ in range(root_children))
    if leaf_index != len(leaf_types) or pos != len(elements):
        raise FooterReadError(path, "the footer's schema list does not match its column count")
    return fields


def _enum(names: tuple[str, ...], value: Any) -> str | None:  # noqa: ANN401  # Thrift compact values, decoded untyped
    if isinstance(value, int) and 0 <= value < len(names):
        return names[value]
    return None if value is None else f"UNKNOWN({value})"


def _group_logical(el: Mapping[int, Any]) -> str | None:
    logical = el.get(10)
    if isinstance(logical, dict) and logical:
        member = next(iter(logical))
        if member in _GROUP_LOGICAL:
            return _GROUP_LOGICAL[member]
    converted = el.get(6)
    if isinstance(converted, int):
        return _GROUP_CONVERTED.get(converted)
    return None
