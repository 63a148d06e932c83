"""Puffin files holding Iceberg v3 deletion vectors (iceberg-puffin-spec.md).

A Puffin file is ``Magic Blob_1 ... Blob_n Footer``, the footer being ``Magic FooterPayload
FooterPayloadSize Flags Magic``: the payload is UTF-8 JSON listing every blob's type, fields, snapshot
id, sequence number, offset and length; the size is a 4-byte little-endian integer, the flags 4 bytes
(all 0: the footer is not compressed) and ``Magic`` is ``PFA1``.

Each blob here is a ``deletion-vector-v1``: the framed bytes of a deletion vector (length, magic,
portable roaring bitmap, CRC), which for a Delta DV are exactly the bytes Delta stored (see
:mod:`icecompat_writer.deltalog.deletion_vectors`). Its metadata lists the row-position field
(2147483645), ``snapshot-id`` and ``sequence-number`` -1 (the spec: they are not known when the file is
written; Iceberg inherits them from the manifest entry), and the properties ``referenced-data-file``
(the data file's location exactly as the manifests write it) and ``cardinality``. Blobs are never
compressed. Offsets are assigned as blobs are added, so manifest entries (``content_offset``,
``content_size_in_bytes``) can be built before the file is written.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

from icecompat_writer.storage import FileIO, Location

__all__ = [
    "DV_BLOB_TYPE",
    "MAGIC",
    "ROW_POSITION_FIELD_ID",
    "PlacedBlob",
    "PuffinWriter",
]

MAGIC = b"PFA1"
DV_BLOB_TYPE = "deletion-vector-v1"
ROW_POSITION_FIELD_ID = 2147483645  # the reserved field id of _pos (iceberg-spec.md "Reserved Field IDs")
CREATED_BY = "icecompat_writer"


@dataclass(frozen=True)
class PlacedBlob:
    """Where one deletion vector sits in the Puffin file: what its delete-file entry records."""

    referenced_data_file: str
    offset: int
    length: int
    cardinality: int


class PuffinWriter:
    """Collects deletion vectors, then writes them as one Puffin file (:meth:`to_bytes`, :meth:`write`)."""

    def __init__(self) -> None:
        self._parts: list[bytes] = [MAGIC]
        self._end = len(MAGIC)
        self.blobs: list[PlacedBlob] = []

    def __len__(self) -> int:
        return len(self.blobs)

    def add_deletion_vector(self, referenced_data_file: str, framed: bytes, cardinality: int) -> PlacedBlob:
        """Append one ``deletion-vector-v1`` blob (``framed``: length, magic + bitmap, CRC)."""
        placed = PlacedBlob(referenced_data_file, self._end, len(framed), int(cardinality))
        self._parts.append(framed)
        self._end += len(framed)
        self.blobs.append(placed)
        return placed

    def footer_payload(self) -> bytes:
        payload = {
            "blobs": [
                {
                    "type": DV_BLOB_TYPE,
                    "fields": [ROW_POSITION_FIELD_ID],
                    "snapshot-id": -1,
                    "sequence-number": -1,
                    "offset": b.offset,
                    "length": b.length,
                    "properties": {
                        "referenced-data-file": b.referenced_data_file,
                        "cardinality": str(b.cardinality),
                    },
                }
                for b in self.blobs
            ],
            "properties": {"created-by": CREATED_BY},
        }
        return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    def to_bytes(self) -> bytes:
        """The whole file: header magic, blobs, footer."""
        payload = self.footer_payload()
        footer = MAGIC + payload + struct.pack("<i", len(payload)) + b"\0\0\0\0" + MAGIC
        return b"".join([*self._parts, footer])

    def write(self, path: Location, *, io: FileIO) -> int:
        """Create the file at ``path`` (it must not exist: names carry a run id) and return its size;
        ``io``: the store settings to write with (None: the storage layer's default)."""
        data = self.to_bytes()
        if not io.new_output(path).create(data):
            raise FileExistsError(17, f"{path} exists", str(path))
        return len(data)
