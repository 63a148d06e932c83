"""Puffin files of deletion vectors, read back by pyiceberg's own Puffin reader and DV decoder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
from pyiceberg.table.puffin import PuffinFile

from icecompat_writer.iceberg.puffin import DV_BLOB_TYPE, ROW_POSITION_FIELD_ID, PuffinWriter
from icecompat_writer.storage import io_for
from tests.deltalog.test_deletion_vectors import dv_data, framed


def test_many_deletion_vectors_in_one_file_read_by_pyiceberg(tmp_path: Path) -> None:
    sets = {f"file:///t/f{i}.parquet": list(range(i, 10 * i + 1, 3)) for i in range(1, 40)}
    sets["file:///t/wide.parquet"] = [0, (1 << 32) + 1, (7 << 32) + 9]
    writer = PuffinWriter()
    placed = [writer.add_deletion_vector(f, framed(dv_data(p)), len(p)) for f, p in sets.items()]
    path = tmp_path / "dvs.puffin"
    size = writer.write(path, io=io_for(path))
    content = path.read_bytes()
    assert size == len(content)
    assert content[:4] == b"PFA1" and content[-4:] == b"PFA1"
    assert content[-8:-4] == b"\0\0\0\0"  # flags: footer not compressed

    puffin = PuffinFile(content)
    assert len(puffin.footer.blobs) == len(sets)
    for blob, p in zip(puffin.footer.blobs, placed, strict=True):
        assert blob.type == DV_BLOB_TYPE
        assert blob.fields == [ROW_POSITION_FIELD_ID]
        assert (blob.snapshot_id, blob.sequence_number) == (-1, -1)
        assert blob.compression_codec is None
        assert (blob.offset, blob.length) == (p.offset, p.length)
        assert blob.properties == {
            "referenced-data-file": p.referenced_data_file,
            "cardinality": str(len(sets[p.referenced_data_file])),
        }
        assert puffin.get_blob_payload(blob) == framed(dv_data(sets[p.referenced_data_file]))
    decoded = {
        dv.referenced_data_file: dv.to_vector().to_pylist()
        for dv in deletion_vectors_from_puffin_file(puffin)
    }
    assert decoded == sets
    # the footer: magic, JSON payload, its length (little endian), flags, magic
    payload_size = int.from_bytes(content[-12:-8], "little")
    footer_start = len(content) - 12 - payload_size - 4
    assert content[footer_start : footer_start + 4] == b"PFA1"
    assert json.loads(content[footer_start + 4 : -12])["properties"]["created-by"]
    assert footer_start == placed[-1].offset + placed[-1].length  # blobs end where the footer starts

    with pytest.raises(FileExistsError):
        writer.write(path, io=io_for(path))


def test_empty_writer_is_a_valid_puffin_file(tmp_path: Path) -> None:
    assert PuffinFile(PuffinWriter().to_bytes()).footer.blobs == []
