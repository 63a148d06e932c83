"""Delta deletion vectors as Iceberg format v2 position-delete files: one Parquet file per deletion vector.

Iceberg v2 has no deletion vectors; every v2 reader applies position-delete files instead
(iceberg-spec.md "Position Delete Files"): Parquet files of rows ``file_path`` (field id 2147483546,
string) and ``pos`` (2147483545, long), sorted by ``file_path`` then ``pos``, listed in delete
manifests (``content`` 1). A delete file applies to a data file of its partition whose data sequence
number is at or below its own, and only to the rows its ``file_path`` names.

Each Delta DV becomes one such file holding the DV's positions for its one data file, written under
``metadata/`` next to the manifests. The file is scoped to its data file as Iceberg Java scopes the
deletes it writes for one file: ``referenced_data_file`` is set, and the ``file_path`` bounds are both
the data file's location (readers that predate ``referenced_data_file``, pyiceberg among them, index a
delete file by equal path bounds), so a planner never opens it for another file. One file per DV, not one
per commit, because a DV is replaced or dropped on its own (a later DELETE, a removed data file, OPTIMIZE):
its file leaves the delete manifests with it, and no other data file's deletes are lost.

A DV is written once: its file's name ends with a hash of (data file, DV), and when a commit re-adds a
data file with the DV it already had (new statistics, row tracking backfill) the live file is entered
again under the new snapshot, so its data sequence number stays at or above the re-added data file's,
and no Parquet file is rewritten.
"""

from __future__ import annotations

import hashlib
import io as _io
import struct
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from icecompat_writer.deltalog.deletion_vectors import ReadDeletionVector
from icecompat_writer.deltalog.files import DeletionVectorDescriptor, dv_unique_id
from icecompat_writer.storage import FileIO

from .avro import DataFileRecord, KeyValue
from .locations import uri
from .producers import DeleteFile
from .table import IcebergTable, NewFile

__all__ = [
    "FILE_PATH_FIELD_ID",
    "POSITION_DELETE_SCHEMA",
    "POS_FIELD_ID",
    "deleted_positions",
    "dv_tag",
    "position_delete_bytes",
    "position_delete_files",
    "staying_delete_files",
]

FILE_PATH_FIELD_ID = 2147483546  # iceberg-spec.md "Reserved Field IDs": file_path of a position delete
POS_FIELD_ID = 2147483545  # ... and pos

POSITION_DELETE_SCHEMA = pa.schema(
    [
        pa.field(
            "file_path", pa.string(), nullable=False, metadata={"PARQUET:field_id": str(FILE_PATH_FIELD_ID)}
        ),
        pa.field("pos", pa.int64(), nullable=False, metadata={"PARQUET:field_id": str(POS_FIELD_ID)}),
    ]
)

_WRITE_SCHEMA = pa.schema(
    [
        POSITION_DELETE_SCHEMA.field("file_path").with_type(pa.dictionary(pa.int32(), pa.string())),
        POSITION_DELETE_SCHEMA.field("pos"),
    ]
)

_RUN_COOKIE = 12347  # SERIAL_COOKIE (RoaringFormatSpec): run containers possible
_NO_RUN_COOKIE = 12346  # SERIAL_COOKIE_NO_RUNCONTAINER
_NO_OFFSET_THRESHOLD = 4  # a run-cookie bitmap with fewer containers has no offset header
_BITS = tuple(tuple(b for b in range(8) if v >> b & 1) for v in range(256))  # set bits of each byte value


def dv_tag(data_path: str, dv: DeletionVectorDescriptor) -> str:
    """A short name for one DV of one data file: the end of its position-delete file's name."""
    key = f"{data_path}\0{dv_unique_id(dv.to_json())}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def deleted_positions(framed: bytes) -> list[int]:
    """The row positions of a verified, framed Delta DV (length, magic, portable 64-bit roaring bitmap,
    CRC), ascending: each 32-bit bucket's roaring bitmap (RoaringFormatSpec) walked container by
    container, its high 32 bits the bucket key."""
    view = memoryview(framed)[8:-4]
    buckets = int.from_bytes(view[:8], "little")
    pos = 8
    out: list[int] = []
    for _ in range(buckets):
        high = int.from_bytes(view[pos : pos + 4], "little") << 32
        pos = _roaring32_positions(view, pos + 4, high, out)
    return out


def _roaring32_positions(view: memoryview, pos: int, high: int, out: list[int]) -> int:
    """Append the positions of the 32-bit roaring bitmap at ``pos`` (plus ``high``); its end offset."""
    cookie = int.from_bytes(view[pos : pos + 4], "little")
    pos += 4
    if cookie & 0xFFFF == _RUN_COOKIE:
        size = (cookie >> 16) + 1
        flags_len = (size + 7) // 8
        run_flags = bytes(view[pos : pos + flags_len])
        pos += flags_len
        has_offsets = size >= _NO_OFFSET_THRESHOLD
    elif cookie == _NO_RUN_COOKIE:
        size = int.from_bytes(view[pos : pos + 4], "little")
        pos += 4
        run_flags = b""
        has_offsets = True
    else:
        raise ValueError(f"unknown roaring cookie {cookie}")
    header = struct.unpack_from(f"<{2 * size}H", view, pos)
    pos += 4 * size + (4 * size if has_offsets else 0)
    for i in range(size):
        base = high | (header[2 * i] << 16)
        card = header[2 * i + 1] + 1
        if run_flags and run_flags[i // 8] >> (i % 8) & 1:
            (runs,) = struct.unpack_from("<H", view, pos)
            pairs = struct.unpack_from(f"<{2 * runs}H", view, pos + 2)
            pos += 2 + 4 * runs
            for r in range(runs):
                start = base + pairs[2 * r]
                out.extend(range(start, start + pairs[2 * r + 1] + 1))
        elif card <= 4096:
            out.extend(base + v for v in struct.unpack_from(f"<{card}H", view, pos))
            pos += 2 * card
        else:
            block = view[pos : pos + 8192]  # 65,536 bits, least significant bit of each byte first
            pos += 8192
            for at, byte in enumerate(block):
                if byte:
                    start = base + 8 * at
                    out.extend(start + bit for bit in _BITS[byte])
    return pos


def position_delete_bytes(data_file: str, positions: Sequence[int]) -> bytes:
    """One position-delete Parquet file: every row names ``data_file``, ``positions`` in ascending order.

    ``file_path`` is handed to the writer dictionary-encoded (one value, an index per row) so that it is
    not hashed row by row (a million positions: about 0.5 s instead of 2 s); the file itself is plain
    Parquet, ``file_path`` a required string column (Arrow's own schema is not stored, so every reader
    sees :data:`POSITION_DELETE_SCHEMA`).
    """
    paths = pa.DictionaryArray.from_arrays(
        pa.repeat(pa.scalar(0, pa.int32()), len(positions)), pa.array([data_file], pa.string())
    )
    table = pa.Table.from_arrays([paths, pa.array(positions, pa.int64())], schema=_WRITE_SCHEMA)
    buf = _io.BytesIO()
    pq.write_table(table, buf, store_schema=False)
    return buf.getvalue()


def _kv(values: dict[int, object]) -> list[KeyValue]:
    return [{"key": k, "value": v} for k, v in sorted(values.items())]


def _record(path: str, size: int, f: NewFile, positions: Sequence[int]) -> DataFileRecord:
    """The ``data_file`` of a position-delete file for the data file of ``f``: content 1, Parquet, in
    its data file's partition, scoped to it (``referenced_data_file`` and equal ``file_path`` bounds)."""
    n = len(positions)
    target = f.path.encode("utf-8")
    return {
        "content": 1,
        "file_path": path,
        "file_format": "PARQUET",
        "partition": dict(f.data_file["partition"]),
        "record_count": n,
        "file_size_in_bytes": size,
        "column_sizes": None,
        "value_counts": _kv({FILE_PATH_FIELD_ID: n, POS_FIELD_ID: n}),
        "null_value_counts": _kv({FILE_PATH_FIELD_ID: 0, POS_FIELD_ID: 0}),
        "nan_value_counts": None,
        "lower_bounds": _kv({FILE_PATH_FIELD_ID: target, POS_FIELD_ID: struct.pack("<q", positions[0])}),
        "upper_bounds": _kv({FILE_PATH_FIELD_ID: target, POS_FIELD_ID: struct.pack("<q", positions[-1])}),
        "key_metadata": None,
        "split_offsets": None,
        "equality_ids": None,
        "sort_order_id": None,
        "first_row_id": None,
        "referenced_data_file": f.path,
        "content_offset": None,
        "content_size_in_bytes": None,
    }


def staying_delete_files(table: IcebergTable, files: Sequence[NewFile]) -> dict[int, DeleteFile]:
    """For each of ``files`` (by ``id``) whose data file's live position-delete file holds its DV
    already (the file is re-added with the DV it had): that delete file, entered again as it is."""
    with_dv = [f for f in files if f.deletion_vector is not None]
    if not with_dv:
        return {}
    live = table.files.delete_entries_of(f.path for f in with_dv)
    out: dict[int, DeleteFile] = {}
    for f in with_dv:
        assert f.deletion_vector is not None
        suffix = f"-{dv_tag(f.delta_path, f.deletion_vector)}.parquet"
        for entry in live.get(f.path, []):
            if entry.path.endswith(suffix) and entry.data_file.get("file_format") == "PARQUET":
                record = entry.data_file.copy()
                record["partition"] = dict(f.data_file["partition"])
                out[id(f)] = DeleteFile(record)
                break
    return out


def position_delete_files(
    table: IcebergTable, placed: Sequence[tuple[NewFile, ReadDeletionVector]], *, io: FileIO
) -> list[DeleteFile]:
    """One new position-delete file per (data file, verified DV) of ``placed``, written under
    ``metadata/`` through ``io``; a DV that deletes no row needs none."""
    out = []
    for f, dv in placed:
        assert f.deletion_vector is not None
        positions = deleted_positions(dv.blob)
        if not positions:
            continue
        data = position_delete_bytes(f.path, positions)
        path = table.writer.position_delete_path(dv_tag(f.delta_path, f.deletion_vector))
        if not io.new_output(path).create(data):
            raise FileExistsError(17, f"{path} exists", str(path))
        out.append(DeleteFile(_record(uri(path), len(data), f, positions)))
    return out
