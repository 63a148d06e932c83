"""Delta deletion vectors read into ``deletion-vector-v1`` blobs: bytes built per the protocol's format.

The DV files here are written byte by byte from delta-PROTOCOL.md ("Deletion Vector Format", "Deletion
Vector File Storage Format"), the bitmaps by pyroaring (the roaring library pyiceberg reads DVs with),
and every blob is read back with pyiceberg's own deletion-vector decoder. DVs written by delta-spark are
covered in test_deletion_vectors_spark.py.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.table.deletion_vector import DeletionVector
from pyroaring import BitMap

from icecompat_writer.deltalog.deletion_vectors import (
    DV_MAGIC,
    bitmap_cardinality,
    dv_location,
    read_deletion_vectors,
    z85_decode,
    z85_encode,
)
from icecompat_writer.deltalog.files import DeletionVectorDescriptor
from icecompat_writer.storage import io_for


def portable_bitmap(positions: list[int], *, run_optimize: bool = False) -> bytes:
    """The portable 64-bit roaring format: bucket count, then (key, 32-bit roaring bitmap) per bucket."""
    buckets: dict[int, list[int]] = {}
    for p in positions:
        buckets.setdefault(p >> 32, []).append(p & 0xFFFFFFFF)
    out = struct.pack("<Q", len(buckets))
    for key in sorted(buckets):
        bm = BitMap(buckets[key])
        if run_optimize:
            bm.run_optimize()
        out += struct.pack("<I", key) + bm.serialize()
    return out


def dv_data(positions: list[int], **kw: bool) -> bytes:
    """What Delta serializes for one DV: magic (little endian) + the portable bitmap."""
    return struct.pack("<I", DV_MAGIC) + portable_bitmap(positions, **kw)


def framed(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))


def write_dv_file(path: Path, datas: list[bytes]) -> list[int]:
    """A DV file (version byte 1, then each DV framed); returns each DV's offset."""
    path.parent.mkdir(parents=True, exist_ok=True)
    content, offsets = b"\x01", []
    for d in datas:
        offsets.append(len(content))
        content += framed(d)
    path.write_bytes(content)
    return offsets


def positions_of(blob: bytes) -> list[int]:
    """pyiceberg's reading of a deletion-vector-v1 blob."""
    length = int.from_bytes(blob[:4], "big")
    assert blob[4:8] == bytes.fromhex("D1D33964")  # the Puffin spec's magic
    bitmaps = DeletionVector._deserialize_bitmap(blob[8 : 4 + length])
    return DeletionVector("x", bitmaps).to_vector().to_pylist()


def u_descriptor(
    dv_uuid: uuid.UUID, prefix: str, offset: int, data: bytes, card: int
) -> DeletionVectorDescriptor:
    return DeletionVectorDescriptor("u", prefix + z85_encode(dv_uuid.bytes), len(data), card, offset)


def test_z85_round_trip_and_protocol_example() -> None:
    # PROTOCOL.md "JSON Example 1": this UUID text is the one its path derives.
    assert uuid.UUID(bytes=z85_decode("^-aqEH.-t@S}K{vb[*k^")) == uuid.UUID(
        "d2c639aa-8816-431a-aaf6-d3fe2512ff61"
    )
    data = bytes(range(37))
    assert z85_decode(z85_encode(data))[:37] == data
    with pytest.raises(ValueError, match="multiple of 5"):
        z85_decode("abcd")


def test_inline_dv_gets_length_prefix_and_crc() -> None:
    data = dv_data([3, 4, 7, 11, 18, 29])
    dv = DeletionVectorDescriptor("i", z85_encode(data), len(data), 6)
    got = read_deletion_vectors(Path("/nonexistent"), [("f.parquet", dv)], io=io_for(Path("/nonexistent")))
    assert got.problems == ()
    blob = got.vectors["f.parquet"].blob
    assert blob == framed(data)  # exactly the on-disk framing
    assert positions_of(blob) == [3, 4, 7, 11, 18, 29]
    assert got.requests == 0


def test_inline_example_of_the_protocol_is_the_other_bitmap_format() -> None:
    # PROTOCOL.md "JSON Example 3" is serialized with magic 1681511376 (big-endian fields), not the
    # portable format the protocol's "Deletion Vector Format" and Iceberg describe: refused, named.
    dv = DeletionVectorDescriptor("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 40, 6)
    got = read_deletion_vectors(Path("/nonexistent"), [("f.parquet", dv)], io=io_for(Path("/nonexistent")))
    assert got.vectors == {}
    assert [p.kind for p in got.problems] == ["unreadable"]
    assert "1681511376" in got.problems[0].message


def test_uuid_path_with_prefix_and_many_dvs_in_one_file_read_once(tmp_path: Path) -> None:
    dv_uuid = uuid.uuid4()
    sets = [[0, 5, 9], list(range(0, 200_000, 3)), [1, 2, 3, (1 << 32) + 7, (5 << 32) + 1]]
    datas = [dv_data(sets[0]), dv_data(sets[1], run_optimize=True), dv_data(sets[2])]
    offsets = write_dv_file(tmp_path / "ab" / f"deletion_vector_{dv_uuid}.bin", datas)
    items = [
        (f"f{i}.parquet", u_descriptor(dv_uuid, "ab", offsets[i], datas[i], len(sets[i]))) for i in range(3)
    ]
    got = read_deletion_vectors(tmp_path, items, io=io_for(tmp_path))
    assert got.problems == ()
    assert (got.files_read, got.requests) == (1, 1)
    content = (tmp_path / "ab" / f"deletion_vector_{dv_uuid}.bin").read_bytes()
    for i in range(3):
        v = got.vectors[f"f{i}.parquet"]
        assert v.cardinality == len(sets[i])
        assert v.blob == content[offsets[i] : offsets[i] + len(datas[i]) + 8]  # Delta's bytes, unchanged
        assert positions_of(v.blob) == sets[i]


def test_absolute_path_and_location_rules(tmp_path: Path) -> None:
    path = tmp_path / "dvs" / "x.bin"
    data = dv_data([4])
    (offset,) = write_dv_file(path, [data])
    dv = DeletionVectorDescriptor("p", f"file:{path}", len(data), 1, offset)
    assert dv_location(tmp_path, dv) == path
    got = read_deletion_vectors(tmp_path, [("f.parquet", dv)], io=io_for(tmp_path))
    assert positions_of(got.vectors["f.parquet"].blob) == [4]
    outside = DeletionVectorDescriptor("p", "file:/etc/passwd", 10, 1, 0)
    bad = read_deletion_vectors(tmp_path, [("g.parquet", outside)], io=io_for(tmp_path))
    assert bad.vectors == {}
    assert [p.kind for p in bad.problems] == ["unreadable"]
    assert "outside the table root" in bad.problems[0].message
    no_prefix = DeletionVectorDescriptor("u", z85_encode(uuid.UUID(int=1).bytes), 10, 1, 1)
    assert dv_location(tmp_path, no_prefix) == tmp_path / f"deletion_vector_{uuid.UUID(int=1)}.bin"


def test_damaged_dvs_are_problems_naming_their_data_file(tmp_path: Path) -> None:
    dv_uuid = uuid.uuid4()
    good = dv_data([1, 2, 3])
    wrong_magic = struct.pack("<I", DV_MAGIC + 1) + portable_bitmap([1])
    offsets = write_dv_file(tmp_path / f"deletion_vector_{dv_uuid}.bin", [good, wrong_magic, good])
    path = tmp_path / f"deletion_vector_{dv_uuid}.bin"
    content = bytearray(path.read_bytes())
    content[offsets[2] + 10] ^= 0xFF  # a flipped bit in the third DV: its CRC no longer matches
    path.write_bytes(bytes(content))
    items = [
        ("card.parquet", u_descriptor(dv_uuid, "", offsets[0], good, 4)),
        ("magic.parquet", u_descriptor(dv_uuid, "", offsets[1], wrong_magic, 1)),
        ("crc.parquet", u_descriptor(dv_uuid, "", offsets[2], good, 3)),
        (
            "size.parquet",
            DeletionVectorDescriptor("u", z85_encode(dv_uuid.bytes), len(good) + 1, 3, offsets[0]),
        ),
        ("gone.parquet", u_descriptor(uuid.uuid4(), "", 1, good, 3)),
        ("short.parquet", u_descriptor(dv_uuid, "", len(content) - 5, good, 3)),
        ("huge.parquet", DeletionVectorDescriptor("u", z85_encode(dv_uuid.bytes), 1 << 40, 3, 1)),
        ("negative.parquet", DeletionVectorDescriptor("u", z85_encode(dv_uuid.bytes), 10, 3, -4)),
    ]
    got = read_deletion_vectors(tmp_path, items, io=io_for(tmp_path))
    assert got.vectors == {}
    problems = {p.data_path: p for p in got.problems}
    assert problems["card.parquet"].kind == "cardinality"
    assert "deletes 3 rows but the log's cardinality says 4" in problems["card.parquet"].message
    assert "magic number" in problems["magic.parquet"].message
    assert "CRC-32" in problems["crc.parquet"].message
    assert "length prefix" in problems["size.parquet"].message
    assert "does not exist" in problems["gone.parquet"].message
    assert "ends" in problems["short.parquet"].message
    assert "sizeInBytes 1099511627776" in problems["huge.parquet"].message
    assert "offset -4" in problems["negative.parquet"].message
    assert {p.kind for k, p in problems.items() if k != "card.parquet"} == {"unreadable"}


def test_bitmap_cardinality_walks_every_container_kind() -> None:
    dense = list(range(10_000))  # a bitmap container once > 4096, a run container once optimised
    sparse = [7, 70_000, 1 << 20]
    for positions in (dense, sparse, dense + [(3 << 32) + p for p in sparse], []):
        for run in (False, True):
            assert bitmap_cardinality(portable_bitmap(positions, run_optimize=run)) == len(positions)
    with pytest.raises(ValueError, match="follow the bitmap"):
        bitmap_cardinality(portable_bitmap([1]) + b"\0")
    with pytest.raises(ValueError, match="most significant bit"):
        bitmap_cardinality(struct.pack("<QI", 1, 1 << 31) + BitMap([1]).serialize())


def test_dvs_on_an_object_store_are_read_with_one_ranged_read_per_file(s3_env: Any) -> None:
    """A table on S3 (moto on 127.0.0.1, reached through the AWS variables): the same bytes come back."""
    from icecompat_writer import storage
    from icecompat_writer.storage import ObjectPath, parse_location

    root = parse_location(f"s3a://{s3_env.new_bucket()}/t")
    assert isinstance(root, ObjectPath)
    dv_uuid = uuid.uuid4()
    sets = [[0, 1], [7], list(range(100))]
    datas = [dv_data(p) for p in sets]
    content, offsets = b"\x01", []
    for d in datas:
        offsets.append(len(content))
        content += framed(d)
    storage.io_for(root).new_output(root / "xy" / f"deletion_vector_{dv_uuid}.bin").write(content)
    items = [
        (f"f{i}.parquet", u_descriptor(dv_uuid, "xy", offsets[i], datas[i], len(sets[i]))) for i in range(3)
    ]
    items.append(("gone.parquet", u_descriptor(uuid.uuid4(), "", 1, datas[0], 2)))
    got = read_deletion_vectors(root, items, io=io_for(root))
    assert (got.files_read, got.requests) == (2, 2)
    assert {k: positions_of(v.blob) for k, v in got.vectors.items()} == {
        f"f{i}.parquet": sets[i] for i in range(3)
    }
    assert [(p.data_path, p.kind) for p in got.problems] == [("gone.parquet", "unreadable")]
    assert "does not exist" in got.problems[0].message
