"""Reading Delta deletion vectors (DVs) into the serialized form Iceberg's ``deletion-vector-v1`` uses.

A DV descriptor (PROTOCOL.md "Deletion Vector Descriptor Schema") says where the serialized bitmap
lives: ``u`` a file under the table root whose name is derived from a Z85-encoded UUID (with an
optional random prefix directory), ``p`` a file named by an absolute path, ``i`` inline in the log as
Z85 text. A DV in a file is stored as ``[dataSize: 4 bytes big-endian][magic + 64-bit portable roaring
bitmap][CRC-32 of those bytes: 4 bytes big-endian]`` starting at the descriptor's ``offset``
("Deletion Vector File Storage Format"); an inline DV holds only the middle part.

Those framed bytes are exactly the Puffin blob ``deletion-vector-v1`` (iceberg-puffin-spec.md: a 4-byte
big-endian length of magic plus vector, the magic ``D1 D3 39 64`` -- Delta's 1681511377 in little
endian --, the portable bitmap, a big-endian CRC-32 of magic plus vector). :func:`read_deletion_vectors`
therefore returns the blob bytes as they are on disk for ``u``/``p``, and frames inline DVs (adds the
length prefix and the CRC). Every DV is verified before it is trusted: length, magic, CRC, the bitmap's
structure, and its cardinality against the descriptor's.

Reads go through :mod:`icecompat_writer.storage`: the DVs of one file are read with one ranged read per
run of nearby DVs (delta-spark packs many DVs into one file), so a file holding many DVs is read once,
and object-store reads run in a bounded pool.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from icecompat_writer import storage
from icecompat_writer.storage import FileIO, Location

from .files import DeletionVectorDescriptor
from .paths import resolve_data_path

__all__ = [
    "DV_MAGIC",
    "DeletionVectorProblem",
    "DeletionVectorRead",
    "ReadDeletionVector",
    "bitmap_cardinality",
    "dv_location",
    "frame_inline",
    "read_deletion_vectors",
    "z85_decode",
    "z85_encode",
]

DV_MAGIC = 1681511377
_MAGIC_BYTES = struct.pack("<I", DV_MAGIC)
# Delta's other serialization of a bitmap array (big-endian fields); PROTOCOL.md's inline example uses it.
NATIVE_MAGIC = 1681511376
_NATIVE_MAGIC_BYTES = struct.pack(">I", NATIVE_MAGIC)
_UUID_CHARS = 20  # a 16-byte UUID in Z85
_COALESCE_GAP = 1 << 16  # DVs of one file closer than this are read with one request
_MAX_DV_BYTES = (1 << 31) - 1  # sizeInBytes is a Java int

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_VALUE = {c: i for i, c in enumerate(_Z85)}

# Problem kinds (the checker turns them into its findings).
UNREADABLE = "unreadable"
CARDINALITY = "cardinality"


class _Malformed(ValueError):
    """A DV's bytes do not have the serialized form the protocol describes."""


def z85_decode(text: str) -> bytes:
    """Z85 text to bytes (5 characters -> 4 bytes, big-endian); ValueError on a bad length or character."""
    if len(text) % 5:
        raise ValueError(f"Z85 text has {len(text)} characters, not a multiple of 5")
    out = bytearray()
    for i in range(0, len(text), 5):
        value = 0
        for ch in text[i : i + 5]:
            digit = _Z85_VALUE.get(ch)
            if digit is None:
                raise ValueError(f"{ch!r} is not a Z85 character")
            value = value * 85 + digit
        if value > 0xFFFFFFFF:
            raise ValueError("Z85 group out of range")
        out += value.to_bytes(4, "big")
    return bytes(out)


def z85_encode(data: bytes) -> str:
    """Bytes to Z85 text, zero-padded to a multiple of 4 bytes (Delta pads inline DVs the same way)."""
    padded = data + b"\0" * (-len(data) % 4)
    chars: list[str] = []
    for i in range(0, len(padded), 4):
        value = int.from_bytes(padded[i : i + 4], "big")
        group = []
        for _ in range(5):
            value, digit = divmod(value, 85)
            group.append(_Z85[digit])
        chars.extend(reversed(group))
    return "".join(chars)


def dv_location(root: Location, dv: DeletionVectorDescriptor) -> Location | None:
    """Where a ``u``/``p`` DV is stored; None for a path outside the table root.

    ``u``: ``<root>/<random prefix>/deletion_vector_<uuid>.bin``, the UUID being the last 20 Z85
    characters of ``pathOrInlineDv`` and the prefix whatever precedes them. ``p``: the absolute path,
    resolved like a data file's path (a path leaving the table root is never opened). ValueError for an
    inline DV or a malformed descriptor.
    """
    if dv.storage_type == "u":
        text = dv.path_or_inline_dv
        if len(text) < _UUID_CHARS:
            raise ValueError(f"pathOrInlineDv {text!r} is shorter than a Z85-encoded UUID")
        prefix, encoded = text[:-_UUID_CHARS], text[-_UUID_CHARS:]
        name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
        if not prefix.isascii() or not (prefix.isalnum() or prefix == ""):
            raise ValueError(f"the random prefix {prefix!r} is not alphanumeric")
        return resolve_data_path(root, f"{prefix}/{name}" if prefix else name)
    if dv.storage_type == "p":
        return resolve_data_path(root, dv.path_or_inline_dv)
    raise ValueError(f"storage type {dv.storage_type!r} has no file")


def bitmap_cardinality(data: bytes | memoryview) -> int:
    """The number of positions in a portable 64-bit roaring bitmap that fills ``data`` exactly.

    Walks the structure (bucket count, ascending keys with a 0 high bit, each 32-bit roaring bitmap's
    header and containers) without materialising positions; raises ``_Malformed`` when the bytes are
    not such a bitmap or do not end where it ends.
    """
    view = memoryview(data)
    if len(view) < 8:
        raise _Malformed("the bitmap is shorter than its bucket count")
    buckets = int.from_bytes(view[:8], "little")
    pos, total, last_key = 8, 0, -1
    for _ in range(buckets):
        if pos + 4 > len(view):
            raise _Malformed("the bitmap ends inside a bucket key")
        key = int.from_bytes(view[pos : pos + 4], "little")
        if key & 0x80000000:
            raise _Malformed(f"bucket key {key} has its most significant bit set")
        if key <= last_key:
            raise _Malformed("bucket keys are not in ascending order")
        last_key = key
        count, pos = _roaring32(view, pos + 4)
        total += count
    if pos != len(view):
        raise _Malformed(f"{len(view) - pos} bytes follow the bitmap")
    return total


def _u16(view: memoryview, pos: int) -> int:
    if pos + 2 > len(view):
        raise _Malformed("the bitmap ends inside a container")
    return int.from_bytes(view[pos : pos + 2], "little")


def _roaring32(view: memoryview, pos: int) -> tuple[int, int]:
    """(cardinality, end offset) of the 32-bit roaring bitmap (RoaringFormatSpec) at ``pos``."""
    if pos + 4 > len(view):
        raise _Malformed("the bitmap ends inside a bucket header")
    cookie = int.from_bytes(view[pos : pos + 4], "little")
    pos += 4
    if cookie & 0xFFFF == 12347:  # SERIAL_COOKIE: run containers possible, count in the cookie
        size = (cookie >> 16) + 1
        flags_len = (size + 7) // 8
        if pos + flags_len > len(view):
            raise _Malformed("the bitmap ends inside its run flags")
        run_flags = bytes(view[pos : pos + flags_len])
        pos += flags_len
        has_offsets = size >= 4
    elif cookie == 12346:  # SERIAL_COOKIE_NO_RUNCONTAINER
        if pos + 4 > len(view):
            raise _Malformed("the bitmap ends inside its container count")
        size = int.from_bytes(view[pos : pos + 4], "little")
        pos += 4
        run_flags = b""
        has_offsets = True
    else:
        raise _Malformed(f"unknown roaring cookie {cookie}")
    cards = []
    for i in range(size):
        _u16(view, pos + 4 * i)
        cards.append(_u16(view, pos + 4 * i + 2) + 1)
    pos += 4 * size
    if has_offsets:
        pos += 4 * size
    total = 0
    for i, card in enumerate(cards):
        if run_flags and run_flags[i // 8] >> (i % 8) & 1:
            runs = _u16(view, pos)
            pos += 2
            if pos + 4 * runs > len(view):
                raise _Malformed("the bitmap ends inside a run container")
            counted = sum(_u16(view, pos + 4 * r + 2) + 1 for r in range(runs))
            if counted != card:
                raise _Malformed("a run container's runs disagree with its cardinality")
            pos += 4 * runs
        elif card <= 4096:
            pos += 2 * card
        else:
            pos += 8192
        if pos > len(view):
            raise _Malformed("the bitmap ends inside a container")
        total += card
    return total, pos


def frame_inline(data: bytes) -> bytes:
    """An inline DV's bytes (magic + bitmap) framed as on disk: length prefix and CRC-32 added."""
    return struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))


@dataclass(frozen=True)
class ReadDeletionVector:
    """One verified DV: ``blob`` is the framed form (length, magic + bitmap, CRC), ``deletion-vector-v1``."""

    data_path: str
    descriptor: DeletionVectorDescriptor
    blob: bytes
    cardinality: int


@dataclass(frozen=True)
class DeletionVectorProblem:
    """A DV that cannot be used: ``kind`` is ``unreadable`` or ``cardinality`` (disagrees with the log)."""

    data_path: str
    kind: str
    message: str


@dataclass(frozen=True)
class DeletionVectorRead:
    """The result of :func:`read_deletion_vectors`: verified DVs by data file path, and the problems."""

    vectors: dict[str, ReadDeletionVector]
    problems: tuple[DeletionVectorProblem, ...]
    files_read: int
    requests: int


def _verify(data_path: str, dv: DeletionVectorDescriptor, framed: bytes) -> ReadDeletionVector:
    """Check a framed DV against its descriptor; ValueError (``_Malformed``) says what is wrong."""
    size = dv.size_in_bytes
    if len(framed) != size + 8:
        raise _Malformed(f"the file ends {size + 8 - len(framed)} bytes before the DV does")
    declared = int.from_bytes(framed[:4], "big")
    if declared != size:
        raise _Malformed(f"its length prefix says {declared} bytes, the descriptor's sizeInBytes {size}")
    body = framed[4 : 4 + size]
    if body[:4] == _NATIVE_MAGIC_BYTES:
        raise _Malformed(
            f"it is in the bitmap-array format of magic number {NATIVE_MAGIC} (big endian), not the portable "
            f"format of {DV_MAGIC} that Iceberg readers share; rewrite it (REORG TABLE ... APPLY (PURGE))"
        )
    if body[:4] != _MAGIC_BYTES:
        raise _Malformed(f"magic number {int.from_bytes(body[:4], 'little')} is not {DV_MAGIC}")
    crc = int.from_bytes(framed[4 + size :], "big")
    if zlib.crc32(body) != crc:
        raise _Malformed("its CRC-32 does not match its bytes")
    count = bitmap_cardinality(memoryview(body)[4:])
    return ReadDeletionVector(data_path, dv, framed, count)


def _ranges(wanted: list[tuple[int, int]]) -> list[tuple[int, int, list[int]]]:
    """Coalesce (offset, length) reads into (start, end, member indices) requests."""
    order = sorted(range(len(wanted)), key=lambda i: wanted[i][0])
    out: list[tuple[int, int, list[int]]] = []
    for i in order:
        start, length = wanted[i]
        end = start + length
        if out and start <= out[-1][1] + _COALESCE_GAP:
            s, e, members = out[-1]
            out[-1] = (s, max(e, end), [*members, i])
        else:
            out.append((start, end, [i]))
    return out


class _Verified:
    """The DVs read so far and the problems met, each DV verified as it comes in."""

    def __init__(self) -> None:
        self.vectors: dict[str, ReadDeletionVector] = {}
        self.problems: list[DeletionVectorProblem] = []

    def problem(self, data_path: str, message: str, kind: str = UNREADABLE) -> None:
        self.problems.append(DeletionVectorProblem(data_path, kind, message))

    def accept(self, data_path: str, dv: DeletionVectorDescriptor, framed: bytes, where: str) -> None:
        """Keep the DV framed in ``framed`` (found ``where``) if it is well formed and its cardinality
        is the log's."""
        try:
            got = _verify(data_path, dv, framed)
        except ValueError as e:
            self.problem(data_path, f"the deletion vector {where} is malformed: {e}")
            return
        if got.cardinality != dv.cardinality:
            self.problem(
                data_path,
                f"the deletion vector {where} deletes {got.cardinality} rows but the log's "
                f"cardinality says {dv.cardinality}",
                CARDINALITY,
            )
            return
        self.vectors[data_path] = got


# A ranged read of one DV file: its location, the byte range, and the DVs in it (data file path,
# descriptor, offset of its framed bytes).
_Request = tuple[Location, int, int, list[tuple[str, DeletionVectorDescriptor, int]]]


def read_deletion_vectors(
    root: Location, items: Sequence[tuple[str, DeletionVectorDescriptor]], *, io: FileIO
) -> DeletionVectorRead:
    """Read and verify the DVs of ``items`` (data file path as in the log, its DV descriptor) through
    ``io``.

    Never raises for a bad DV: each one that cannot be read, is malformed, or whose cardinality
    disagrees with its descriptor is a :class:`DeletionVectorProblem` naming its data file.
    """
    out = _Verified()
    by_file: dict[Location, list[tuple[str, DeletionVectorDescriptor]]] = {}
    for data_path, dv in items:
        if not 0 <= dv.size_in_bytes <= _MAX_DV_BYTES or (dv.offset or 0) < 0:
            out.problem(
                data_path,
                f"its deletion vector descriptor has offset {dv.offset} and sizeInBytes {dv.size_in_bytes}",
            )
        elif dv.storage_type == "i":
            _read_inline(data_path, dv, out)
        else:
            location = _stored_location(root, data_path, dv, io, out)
            if location is not None:
                by_file.setdefault(location, []).append((data_path, dv))

    requests = _plan_reads(by_file)
    fetched = storage.map_bounded(lambda req: _fetch(io, req), requests)
    for (where, start, _, placed), data in zip(requests, fetched, strict=True):
        for data_path, dv, offset in placed:
            if isinstance(data, str):
                out.problem(data_path, f"the deletion vector: {data}")
                continue
            framed = data[offset - start : offset - start + dv.size_in_bytes + 8]
            out.accept(data_path, dv, framed, f"in {where} at offset {offset}")
    return DeletionVectorRead(out.vectors, tuple(out.problems), len(by_file), len(requests))


def _read_inline(data_path: str, dv: DeletionVectorDescriptor, out: _Verified) -> None:
    """An inline DV (``i``): Z85 text in the log, framed as a file-stored one would be."""
    try:
        raw = z85_decode(dv.path_or_inline_dv)
    except ValueError as e:
        out.problem(data_path, f"the inline deletion vector is not Z85: {e}")
        return
    if len(raw) < dv.size_in_bytes or dv.size_in_bytes < 4:
        out.problem(
            data_path,
            f"the inline deletion vector holds {len(raw)} bytes, sizeInBytes says {dv.size_in_bytes}",
        )
        return
    out.accept(data_path, dv, frame_inline(raw[: dv.size_in_bytes]), "stored inline")


def _stored_location(
    root: Location, data_path: str, dv: DeletionVectorDescriptor, io: FileIO, out: _Verified
) -> Location | None:
    """The file holding a ``u``/``p`` DV, or None (a problem recorded) when it must not be opened:
    a malformed descriptor, a file outside the table root, or one a link leads out of it."""
    try:
        location = dv_location(root, dv)
    except ValueError as e:
        out.problem(data_path, f"its deletion vector descriptor: {e}")
        return None
    if location is None:
        out.problem(
            data_path,
            f"its deletion vector ({dv.path_or_inline_dv!r}) is stored outside the table root; "
            "it was not opened",
        )
        return None
    if io.escapes(root, location):
        out.problem(
            data_path,
            f"its deletion vector file {location} is a symbolic link (or lies under one) leading "
            "outside the table root; it was not opened",
        )
        return None
    return location


def _plan_reads(by_file: dict[Location, list[tuple[str, DeletionVectorDescriptor]]]) -> list[_Request]:
    """One ranged read per run of nearby DVs in each file (:func:`_ranges`)."""
    requests: list[_Request] = []
    for location, members in by_file.items():
        wanted = [(dv.offset or 0, dv.size_in_bytes + 8) for _, dv in members]
        for start, end, idx in _ranges(wanted):
            requests.append((location, start, end, [(*members[i], wanted[i][0]) for i in idx]))
    return requests


def _fetch(io: FileIO, req: _Request) -> bytes | str:
    """The bytes of one ranged read, or why they cannot be read (a local file must be a regular file)."""
    location, start, end, _ = req
    try:
        return io.new_input(location).read_range(start, end - start)
    except FileNotFoundError:
        return f"its file {location} does not exist"
    except OSError as e:  # NotRegularFileError included
        return f"its file {location} cannot be read: {e}"
