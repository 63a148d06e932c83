"""Manifests and manifest lists: entries with every inherited value resolved, writing, reading back.

An :class:`Entry` holds a manifest entry with its snapshot id, data and file sequence numbers and (v3)
first row id resolved, so that it can be re-written explicitly into another manifest. A
:class:`Manifest` is one row of a manifest list (``record``) plus, once read or written, its entries.
:class:`LiveFiles` is the set of live files of the current snapshot, read from the manifests only when
a producer needs it (an append does not: see :mod:`.producers`).

Manifests carry a ``content`` (spec "Manifest Lists"): ``0`` data files, ``1`` delete files. Entries
of a delete manifest are delete files (``data_file.content`` ``1`` for position deletes); they are
written by the same writer with ``content=DELETES``.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, cast

from icecompat_writer.schema import iceberg_decimal_params
from icecompat_writer.storage import FileIO, Location

from .avro import (
    DataFileRecord,
    ManifestEntryRecord,
    PartitionField,
    avro_name,
    read_avro,
    read_manifest_index,
    write_manifest,
    write_manifest_list,
)
from .locations import local, owned, uri
from .metadata import PartitionSpec
from .values import serialize, to_raw

__all__ = [
    "ADDED",
    "DATA",
    "DELETED",
    "DELETES",
    "EXISTING",
    "Entry",
    "LiveFiles",
    "Manifest",
    "ManifestWriter",
    "read_entries",
]

EXISTING, ADDED, DELETED = 0, 1, 2
DATA, DELETES = 0, 1  # manifest content (spec "Manifest Lists")

PartitionFieldsOf = Callable[[int], list[PartitionField]]


@dataclass
class Entry:
    """A manifest entry with every inherited value resolved (so it can be re-written explicitly)."""

    status: int
    snapshot_id: int
    sequence_number: int
    file_sequence_number: int
    data_file: DataFileRecord

    @property
    def path(self) -> str:
        return str(self.data_file["file_path"])

    @property
    def key(self) -> str:
        """What identifies the file among the live ones: its path, and for a deletion vector (one blob
        of a Puffin file that holds many) its path and blob offset."""
        return delete_file_key(self.data_file)

    def explicit(self) -> ManifestEntryRecord:
        """The Avro row with nothing left to inheritance."""
        return {
            "status": self.status,
            "snapshot_id": self.snapshot_id,
            "sequence_number": self.sequence_number,
            "file_sequence_number": self.file_sequence_number,
            "data_file": self.data_file,
        }


@dataclass
class Manifest:
    """One manifest file: its manifest-list row and, once known, its resolved entries."""

    record: dict[str, Any]
    entries: list[Entry] | None = None

    @property
    def uri(self) -> str:
        return str(self.record["manifest_path"])

    @property
    def content(self) -> int:
        return int(self.record.get("content") or DATA)

    @property
    def has_live_files(self) -> bool:
        """Whether any entry is ADDED or EXISTING (the list row's counts say so without reading it)."""
        return int(self.record["added_files_count"]) + int(self.record["existing_files_count"]) > 0


def delete_file_key(data_file: DataFileRecord) -> str:
    """``file_path``, with ``#<content_offset>`` for a deletion vector (many share one Puffin file)."""
    offset = data_file.get("content_offset")
    path = str(data_file["file_path"])
    return path if offset is None else f"{path}#{int(offset)}"


def partition_avro_value(raw: Any, iceberg_type: str) -> Any:  # noqa: ANN401  # fastavro/pyarrow values, untyped
    """Raw partition value in the form fastavro encodes for the partition field's Avro type."""
    params = iceberg_decimal_params(iceberg_type)
    if raw is not None and params is not None:
        return Decimal(raw).quantize(Decimal(1).scaleb(-params[1]))
    return raw


def summaries(entries: Iterable[Entry], fields: Sequence[PartitionField]) -> list[dict[str, Any]]:
    """``field_summary`` per partition field over the manifest's entries."""
    out = []
    entries = list(entries)
    for pf in fields:
        key = avro_name(pf.name)
        values = [e.data_file["partition"].get(key) for e in entries]
        contains_null = any(v is None for v in values)
        is_float = pf.result_type in ("float", "double")
        contains_nan = any(isinstance(v, float) and math.isnan(v) for v in values)
        present = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
        lo = hi = None
        if present:
            lo = serialize(min(present), pf.result_type)
            hi = serialize(max(present), pf.result_type)
            if is_float and min(present) == 0.0:
                lo = serialize(-0.0, pf.result_type)
            if is_float and max(present) == 0.0:
                hi = serialize(0.0, pf.result_type)
        out.append(
            {
                "contains_null": contains_null,
                "contains_nan": contains_nan if is_float else False,
                "lower_bound": lo,
                "upper_bound": hi,
            }
        )
    return out


def _sequence(value: Any, inherit: bool, m: Manifest) -> int:  # noqa: ANN401  # fastavro/pyarrow values, untyped
    """An entry's sequence number: its own, else (only where the spec lets it inherit) its manifest's."""
    if value is not None:
        return int(value)
    if inherit:
        return int(m.record["sequence_number"])
    raise ValueError(f"manifest {m.uri}: an entry that is not new has no sequence number")


def read_entries(
    root: Location,
    m: Manifest,
    partition_fields: PartitionFieldsOf,
    format_version: int,
    *,
    io: FileIO,
) -> list[Entry]:
    """Entries of a manifest, inherited snapshot ids, sequence numbers and first row ids resolved."""
    if m.entries is not None:
        return m.entries
    records, _ = read_avro(owned(root, local(m.uri, root), "manifest", io=io), io=io)
    types = {avro_name(p.name): p.result_type for p in partition_fields(int(m.record["partition_spec_id"]))}
    next_id = m.record.get("first_row_id")
    out = []
    for r in records:
        status = int(r["status"])
        inherit = status == ADDED or int(m.record["sequence_number"]) == 0
        seq = r.get("sequence_number")
        fseq = r.get("file_sequence_number")
        df = cast(DataFileRecord, dict(r["data_file"]))  # fastavro's record, as the schema says
        df["partition"] = {k: to_raw(v, types.get(k, "")) for k, v in (df.get("partition") or {}).items()}
        if format_version >= 3 and m.content == DATA:
            first = df.get("first_row_id")
            if first is None and next_id is not None:
                first = int(next_id)
                next_id = int(next_id) + int(df["record_count"])
            df["first_row_id"] = first
        out.append(
            Entry(
                status=status,
                snapshot_id=int(
                    r["snapshot_id"] if r.get("snapshot_id") is not None else m.record["added_snapshot_id"]
                ),
                sequence_number=_sequence(seq, inherit, m),
                file_sequence_number=_sequence(fseq, inherit, m),
                data_file=df,
            )
        )
    m.entries = out
    return out


class ManifestWriter:
    """Writes one run's manifests and manifest lists under ``metadata/`` and remembers them.

    Names carry a run id, so concurrent or failed runs never collide; :meth:`discard` removes what a
    run that did not commit wrote (nothing references those files). Every file goes through ``io``.
    """

    def __init__(self, root: Location, meta_dir: Location, format_version: int, *, io: FileIO) -> None:
        self.root = root
        self.meta_dir = meta_dir
        self.fv = format_version
        self.io = io
        self.run_id = uuid.uuid4().hex
        self.counter = 0
        self.written: list[Location] = []

    def _manifest_path(self) -> Location:
        self.counter += 1
        return self.meta_dir / f"{self.run_id}-m{self.counter}.avro"

    def puffin_path(self) -> Location:
        """A fresh Puffin file name for this run's deletion vectors, removed by :meth:`discard` too."""
        self.counter += 1
        path = self.meta_dir / f"{self.run_id}-dv{self.counter}.puffin"
        self.written.append(path)
        return path

    def position_delete_path(self, tag: str) -> Location:
        """A fresh name for one position-delete Parquet file (format v2) of this run, removed by
        :meth:`discard` too; ``tag`` (the deletion vector it holds, hashed) ends the name, so a later
        run finds the file of a deletion vector that stays (:meth:`LiveFiles.delete_entries_of`)."""
        self.counter += 1
        path = self.meta_dir / f"{self.run_id}-pd{self.counter}-{tag}.parquet"
        self.written.append(path)
        return path

    def write(
        self,
        entries: list[Entry],
        spec: PartitionSpec,
        fields: list[PartitionField],
        schema_json: dict[str, Any],
        *,
        snapshot_id: int,
        sequence_number: int,
        explicit: list[ManifestEntryRecord],
        content: int = DATA,
    ) -> Manifest:
        """Write ``explicit`` (avro-shaped entries) and describe the file by the resolved ``entries``."""
        types = {avro_name(p.name): p.result_type for p in fields}
        rows: list[ManifestEntryRecord] = []
        for rec in explicit:
            df = rec["data_file"].copy()
            df["partition"] = {k: partition_avro_value(v, types[k]) for k, v in df["partition"].items()}
            rows.append({**rec, "data_file": df})
        path = self._manifest_path()
        length = write_manifest(
            path,
            rows,
            partition=fields,
            partition_spec_json=spec.fields_json(),
            spec_id=spec.spec_id,
            schema_json=schema_json,
            format_version=self.fv,
            content="deletes" if content == DELETES else "data",
            io=self.io,
        )
        self.written.append(path)
        live = [e for e in entries if e.status != DELETED]
        counts = {s: [e for e in entries if e.status == s] for s in (ADDED, EXISTING, DELETED)}
        record = {
            "manifest_path": uri(path),
            "manifest_length": length,
            "partition_spec_id": spec.spec_id,
            "content": content,
            "sequence_number": sequence_number,
            "min_sequence_number": min((e.sequence_number for e in live), default=sequence_number),
            "added_snapshot_id": snapshot_id,
            "added_files_count": len(counts[ADDED]),
            "existing_files_count": len(counts[EXISTING]),
            "deleted_files_count": len(counts[DELETED]),
            "added_rows_count": sum(int(e.data_file["record_count"]) for e in counts[ADDED]),
            "existing_rows_count": sum(int(e.data_file["record_count"]) for e in counts[EXISTING]),
            "deleted_rows_count": sum(int(e.data_file["record_count"]) for e in counts[DELETED]),
            "partitions": summaries(entries, fields),
            "key_metadata": None,
            "first_row_id": None,
        }
        return Manifest(record, entries)

    def write_list(
        self,
        snapshot_id: int,
        manifests: Sequence[Manifest],
        *,
        parent_snapshot_id: int | None,
        sequence_number: int,
        first_row_id: int | None,
    ) -> Location:
        path = self.meta_dir / f"snap-{snapshot_id}-1-{self.run_id}.avro"
        write_manifest_list(
            path,
            [m.record for m in manifests],
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent_snapshot_id,
            sequence_number=sequence_number,
            format_version=self.fv,
            first_row_id=first_row_id,
            io=self.io,
        )
        self.written.append(path)
        return path

    def mark(self) -> int:
        """How many files this run has written so far (:meth:`written_since` takes it back)."""
        return len(self.written)

    def written_since(self, mark: int) -> tuple[Location, ...]:
        """The files written after :meth:`mark` returned ``mark``."""
        return tuple(self.written[mark:])

    def discard(self) -> None:
        """Remove the files of a run that did not commit (they are referenced by nothing)."""
        self.io.delete(self.written)


class LiveFiles:
    """The current snapshot's manifests and, read on demand, which files are live in which manifest.

    ``manifests`` comes from the manifest list alone (one small Avro file). The per-file index (data
    file URI -> manifest and (records, bytes); delete file URI -> manifest, referenced data file and
    position count) needs every manifest read, so it is built only when :meth:`index` is first called:
    by producers that remove files or add delete files, and by the emitter to find re-added files
    unless the Delta log proves there are none. Totals are kept without the index from the previous
    snapshot's summary (``total-*``), so a producer that never reads the index still writes exact totals.
    """

    def __init__(
        self,
        root: Location,
        format_version: int,
        partition_fields: PartitionFieldsOf,
        manifests: list[Manifest] | None = None,
        totals: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0),
        *,
        io: FileIO,
    ) -> None:
        self.root = root
        self.io = io
        self.fv = format_version
        self.partition_fields = partition_fields
        self.manifests: list[Manifest] = list(manifests or [])
        self._data: dict[str, tuple[Manifest, int, int]] | None = None if manifests else {}
        self._deletes: dict[str, tuple[Manifest, str, int]] | None = None if manifests else {}
        # (data files, records, bytes, delete files, position deletes) live now, while not indexed
        self._totals = totals

    @classmethod
    def read(
        cls,
        root: Location,
        format_version: int,
        partition_fields: PartitionFieldsOf,
        manifest_list: str,
        totals: tuple[int, int, int, int, int],
        *,
        io: FileIO,
    ) -> LiveFiles:
        records, _ = read_avro(owned(root, local(manifest_list, root), "manifest list", io=io), io=io)
        manifests = [Manifest(dict(r)) for r in records]
        return cls(root, format_version, partition_fields, manifests, totals, io=io)

    @property
    def loaded(self) -> bool:
        return self._data is not None

    def entries(self, m: Manifest) -> list[Entry]:
        return read_entries(self.root, m, self.partition_fields, self.fv, io=self.io)

    def _load(self) -> tuple[dict[str, tuple[Manifest, int, int]], dict[str, tuple[Manifest, str, int]]]:
        if self._data is None or self._deletes is None:
            data: dict[str, tuple[Manifest, int, int]] = {}
            deletes: dict[str, tuple[Manifest, str, int]] = {}
            for m in self.manifests:
                # only the index's fields are read, and no entry is kept: the index is all a pass
                # over every manifest of a large table leaves behind
                for status, df in self._index_rows(m):
                    if status == DELETED:
                        continue
                    if m.content == DATA:
                        data[str(df["file_path"])] = (
                            m,
                            int(df["record_count"]),
                            int(df["file_size_in_bytes"]),
                        )
                    else:
                        deletes[delete_file_key(cast(DataFileRecord, df))] = (
                            m,
                            str(df.get("referenced_data_file") or ""),
                            int(df["record_count"]),
                        )
            self._data, self._deletes = data, deletes
        return self._data, self._deletes

    def _index_rows(self, m: Manifest) -> Iterator[tuple[int, Mapping[str, Any]]]:
        """(status, data_file) of each entry of ``m``: its entries when known, else the fields the
        index needs read from the file (:func:`.avro.read_manifest_index`)."""
        if m.entries is not None:
            for e in m.entries:
                yield e.status, e.data_file
            return
        path = owned(self.root, local(m.uri, self.root), "manifest", io=self.io)
        for r in read_manifest_index(path, io=self.io):
            yield int(r["status"]), r["data_file"]

    def index(self) -> tuple[dict[str, Manifest], dict[str, tuple[int, int]]]:
        """Live data file URI -> its manifest, and -> (record count, size in bytes)."""
        data, _ = self._load()
        return {p: v[0] for p, v in data.items()}, {p: (v[1], v[2]) for p, v in data.items()}

    def delete_index(self) -> dict[str, tuple[str, int]]:
        """Live delete file key (:attr:`Entry.key`) -> (the data file it references, its number of
        deleted positions)."""
        _, deletes = self._load()
        return {p: (v[1], v[2]) for p, v in deletes.items()}

    def delete_entries_of(self, data_files: Iterable[str]) -> dict[str, list[Entry]]:
        """The live delete-file entries that reference each of ``data_files`` (one pass over the index;
        only the manifests holding them are read)."""
        wanted = set(data_files)
        _, deletes = self._load()
        out: dict[str, list[Entry]] = {}
        for key, (m, ref, _) in deletes.items():
            if ref in wanted:
                out.setdefault(ref, []).extend(
                    e for e in self.entries(m) if e.status != DELETED and e.key == key
                )
        return out

    def owners(self) -> dict[int, set[str]]:
        """id(manifest) -> the live files (data and delete) it holds."""
        data, deletes = self._load()
        out: dict[int, set[str]] = {}
        for p, dv in data.items():
            out.setdefault(id(dv[0]), set()).add(p)
        for p, de in deletes.items():
            out.setdefault(id(de[0]), set()).add(p)
        return out

    @property
    def totals(self) -> tuple[int, int, int]:
        """(data files, records, bytes) live now."""
        if self._data is not None:
            v = self._data.values()
            return len(self._data), sum(r for _, r, _ in v), sum(s for _, _, s in v)
        return self._totals[:3]

    @property
    def delete_totals(self) -> tuple[int, int]:
        """(delete files, position deletes) live now."""
        if self._deletes is not None:
            return len(self._deletes), sum(n for _, _, n in self._deletes.values())
        return self._totals[3], self._totals[4]

    def appended(
        self, manifests: list[Manifest], added: tuple[int, int, int], delete_manifests: Iterable[Manifest]
    ) -> LiveFiles:
        """The live files after a snapshot that only adds: ``added`` (files, records, bytes) streamed
        into data manifests whose entries are not kept, and ``delete_manifests`` (entries kept). The
        result is not indexed (its totals are kept); an index, when a later snapshot needs one, is
        read from the manifests."""
        files, records, size = self.totals
        delete_files, positions = self.delete_totals
        for m in delete_manifests:
            for e in m.entries or []:
                delete_files += 1
                positions += int(e.data_file["record_count"])
        out = LiveFiles(self.root, self.fv, self.partition_fields, None, self._totals, io=self.io)
        out.manifests = manifests
        out._data = out._deletes = None
        out._totals = (files + added[0], records + added[1], size + added[2], delete_files, positions)
        return out

    def replaced(
        self,
        manifests: list[Manifest],
        removed: Iterable[str],
        added: Iterable[Manifest],
        rewritten: Iterable[Manifest],
    ) -> LiveFiles:
        """The live files after a snapshot (the new manifest set, and the index or the totals), as a
        new object: this one stays as it is, so a snapshot that is never applied changes nothing."""
        removed = list(removed)
        out = LiveFiles(self.root, self.fv, self.partition_fields, None, self._totals, io=self.io)
        out.manifests = manifests
        if self._data is not None and self._deletes is not None:
            data, deletes = dict(self._data), dict(self._deletes)
            for p in removed:
                data.pop(p, None)
                deletes.pop(p, None)
            for m in [*added, *rewritten]:
                for e in m.entries or []:
                    if e.status == DELETED:
                        continue
                    df = e.data_file
                    if m.content == DATA:
                        data[e.path] = (m, int(df["record_count"]), int(df["file_size_in_bytes"]))
                    else:
                        deletes[e.key] = (
                            m,
                            str(df.get("referenced_data_file") or ""),
                            int(df["record_count"]),
                        )
            out._data, out._deletes = data, deletes
        else:
            assert not removed, "files cannot be removed without the live-file index"
            files, records, size, delete_files, positions = self._totals
            for m in added:
                for e in m.entries or []:
                    if m.content == DATA:
                        files += 1
                        records += int(e.data_file["record_count"])
                        size += int(e.data_file["file_size_in_bytes"])
                    else:
                        delete_files += 1
                        positions += int(e.data_file["record_count"])
            out._data = out._deletes = None
            out._totals = (files, records, size, delete_files, positions)
        return out
