"""Delta deletion vectors as Iceberg delete files: v3 deletion vectors in Puffin files, v2 position deletes.

For the data files a commit adds (or re-adds: delta-spark's DELETE, UPDATE and MERGE with deletion
vectors commit ``remove`` + ``add`` of the same file with a new DV) whose ``add`` carries a DV, the DVs
are read from Delta (:func:`icecompat_writer.deltalog.deletion_vectors.read_deletion_vectors`: files
read once, each DV verified against its descriptor) and become position deletes (``content`` 1) of the
data file, in its partition:

- format v3: copied into one Puffin file per converted commit under ``metadata/``
  (:class:`.puffin.PuffinWriter`; Delta's ``.bin`` files are never referenced, they are not Puffin
  files), one ``data_file`` each: ``file_format`` ``PUFFIN``, ``referenced_data_file``,
  ``content_offset``/``content_size_in_bytes`` of its blob, ``record_count`` its cardinality;
- format v2: one position-delete Parquet file per DV (:mod:`.posdeletes`); a DV the data file had
  already (a re-add with the same DV) keeps its file.

The snapshot producer (:mod:`.producers`) replaces the data file's previous delete file with it and
drops the delete file of a removed data file.
"""

from __future__ import annotations

from collections.abc import Sequence

from icecompat_writer.deltalog.deletion_vectors import read_deletion_vectors
from icecompat_writer.storage import FileIO

from .avro import deletion_vector_record
from .locations import uri
from .posdeletes import position_delete_files, staying_delete_files
from .producers import DeleteFile
from .puffin import PuffinWriter
from .schema import violation
from .table import IcebergTable, NewFile, refuse

__all__ = ["deletion_vector_files"]


def deletion_vector_files(
    table: IcebergTable, files: Sequence[NewFile], version: int, *, io: FileIO
) -> list[DeleteFile]:
    """The deletion vectors of ``files`` (one commit's new data files, DVs read through ``io``) as
    delete files of the table's format: v3 their bytes written into one new Puffin file, v2 one
    position-delete file each (a DV its data file keeps from before is not read or written again);
    none when no file has a DV. Refuses the commit, naming every data file, when a DV cannot be read
    or disagrees with its log cardinality (``ICEBERG-EMIT-DELETION-VECTOR-READ``)."""
    with_dv = [f for f in files if f.deletion_vector is not None]
    kept: list[DeleteFile] = []
    if with_dv and table.fv < 3:
        staying = staying_delete_files(table, with_dv)
        kept = list(staying.values())
        with_dv = [f for f in with_dv if id(f) not in staying]
    if not with_dv:
        return kept
    read = read_deletion_vectors(
        table.root, [(f.delta_path, f.deletion_vector) for f in with_dv if f.deletion_vector], io=io
    )
    refuse(
        [
            violation(
                "ICEBERG-EMIT-DELETION-VECTOR-READ",
                "",
                observed=p.kind,
                file=p.data_path,
                problem=p.message,
            )
            for p in read.problems
        ],
        f"at Delta version {version}",
    )
    if table.fv < 3:
        verified = [(f, read.vectors[f.delta_path]) for f in with_dv]
        return kept + position_delete_files(table, verified, io=io)
    puffin = PuffinWriter()
    placed = []
    for f in with_dv:
        dv = read.vectors[f.delta_path]
        placed.append((f, puffin.add_deletion_vector(f.path, dv.blob, dv.cardinality)))
    path = table.writer.puffin_path()
    size = puffin.write(path, io=io)
    return [
        DeleteFile(
            deletion_vector_record(
                puffin_path=uri(path),
                puffin_size=size,
                partition=f.data_file["partition"],
                referenced_data_file=blob.referenced_data_file,
                offset=blob.offset,
                length=blob.length,
                cardinality=blob.cardinality,
            )
        )
        for f, blob in placed
    ]
