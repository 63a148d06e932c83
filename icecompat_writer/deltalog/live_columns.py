"""The live files of a snapshot, held as the Arrow columns reconciliation left them.

:class:`LiveFiles` builds an :class:`AddFile` only when one is asked for, and answers the checker's
questions about all of them (which lack ``numRecords``, which have deletion vectors, which leave the
table root) from the columns; :func:`build_live_files` makes one from the reconciled file actions of
:mod:`.columnar`. Every AddFile it builds equals ``AddFile.from_json`` of the action it came from.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from types import MappingProxyType
from typing import overload

import pyarrow as pa
import pyarrow.compute as pc

from icecompat_writer.compat import indices_nonzero
from icecompat_writer.perf import gc_paused
from icecompat_writer.schema import JsonDict

from .columnar import CONTENT_FIELDS, FILE_ACTIONS_SCHEMA
from .files import AddFile, DeletionVectorDescriptor, parse_num_records
from .findings import FindingCode, LogFinding
from .paths import resolve_data_path_text

__all__ = ["LiveFiles", "build_live_files"]

_CONTENT_NAMES = tuple(f.name for f in CONTENT_FIELDS)
_EMPTY: MappingProxyType[str, str | None] = MappingProxyType({})
_NUM_RECORDS = r'^\{\s*"numRecords"\s*:\s*(?P<n>-?\d{1,18})\s*[,}]'
# Paths resolve_data_path_text may refuse (or resolve in a non-trivial way); every other path is a
# plain relative path that stays inside the table root. A superset: the resolver has the last word.
_SUSPECT_PATH = r"^$|^[A-Za-z][A-Za-z0-9+.\-]*:|^/|%|\.\.|\\|\./|//|\x00|[/.]$"


def _num_records(stats: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """``numRecords`` where the stats string starts with it (as writers put it), else null."""
    return pc.struct_field(pc.extract_regex(stats, _NUM_RECORDS), "n").cast(pa.int64())


def _drop_none(obj: JsonDict) -> JsonDict:
    return {k: v for k, v in obj.items() if v is not None}


def _indices(mask: pa.ChunkedArray | pa.Array) -> list[int]:
    indices: list[int] = indices_nonzero(pc.fill_null(mask, False)).to_pylist()
    return indices


class LiveFiles(Sequence[AddFile]):
    """The live AddFiles of a snapshot, in log order, held as Arrow columns.

    A sequence of :class:`AddFile`: indexing builds the one object asked for, iterating builds all of
    them once. The query methods answer from the columns without building any, which is what lets
    the checker look at 100,000 files' claims in milliseconds.
    """

    def __init__(
        self, table: pa.Table, num_records: pa.ChunkedArray, objects: dict[int, AddFile], outside: list[int]
    ) -> None:
        self._table = table
        self._num_records = num_records
        self._objects = objects  # rows whose AddFile was built while reading (raw actions, odd stats)
        self._outside = outside
        self._all: tuple[AddFile, ...] | None = None

    @classmethod
    def empty(cls) -> LiveFiles:
        table = FILE_ACTIONS_SCHEMA.empty_table()
        return cls(table, pa.chunked_array([], pa.int64()), {}, [])

    def __len__(self) -> int:
        return int(self._table.num_rows)

    @overload
    def __getitem__(self, index: int) -> AddFile: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[AddFile, ...]: ...

    def __getitem__(self, index: int | slice) -> AddFile | tuple[AddFile, ...]:
        if isinstance(index, slice):
            return self.to_tuple()[index]
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError(f"live file index {index} out of range ({n} files)")
        if self._all is not None:
            return self._all[i]
        obj = self._objects.get(i)
        return obj if obj is not None else self._build([i])[0]

    def __iter__(self) -> Iterator[AddFile]:
        return iter(self.to_tuple())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LiveFiles):
            return NotImplemented
        return len(self) == len(other) and self.to_tuple() == other.to_tuple()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LiveFiles({len(self)} files)"

    def to_tuple(self) -> tuple[AddFile, ...]:
        """Every live AddFile (built once, then kept)."""
        if self._all is None:
            # 100,000 AddFiles and their mappings are acyclic: collecting meanwhile frees nothing
            with gc_paused():
                self._all = tuple(self._build(None))
        return self._all

    def get_many(self, indices: Sequence[int]) -> list[AddFile]:
        """The AddFiles at ``indices`` (built in one pass over the columns of just those rows)."""
        if self._all is not None or len(indices) * 4 >= len(self):
            everything = self.to_tuple()
            return [everything[i] for i in indices]
        return self._build(indices)

    def batches(self, size: int) -> Iterator[list[AddFile]]:
        """Every live AddFile in order, ``size`` at a time, each batch built when it is reached and
        not kept (a caller that drops a batch before taking the next holds ``size`` objects at most)."""
        n = len(self)
        for start in range(0, n, size):
            stop = min(n, start + size)
            if self._all is not None:
                yield list(self._all[start:stop])
            else:
                yield self._build(range(start, stop))

    def missing_num_records(self) -> list[int]:
        """Indices of the files whose AddFile has no ``numRecords`` (no stats, or none in them)."""
        unknown = _indices(pc.is_null(self._num_records))
        return [i for i in unknown if (obj := self._objects.get(i)) is None or obj.num_records is None]

    def with_deletion_vectors(self) -> list[int]:
        """Indices of the files whose AddFile carries a deletion vector."""
        from_columns = _indices(self._table.column("deletionVector").is_valid())
        from_objects = [i for i, obj in self._objects.items() if obj.deletion_vector is not None]
        return sorted(set(from_columns).union(from_objects))

    def missing_row_ids(self) -> list[int]:
        """Indices of the files whose AddFile lacks ``baseRowId`` or ``defaultRowCommitVersion``."""
        from_columns = set(_indices(self._table.column("baseRowId").is_null())) | set(
            _indices(self._table.column("defaultRowCommitVersion").is_null())
        )
        for i, obj in self._objects.items():
            if obj.base_row_id is None or obj.default_row_commit_version is None:
                from_columns.add(i)
            else:
                from_columns.discard(i)
        return sorted(from_columns)

    def _build(self, indices: Sequence[int] | None) -> list[AddFile]:
        return _build_add_files(self._table, self._num_records, indices, self._objects)

    def outside_root(self) -> list[int]:
        """Indices (ascending) of the files whose path, or absolute deletion vector path, resolves
        outside the table root (the files of the snapshot's ``path_outside_table`` findings)."""
        return list(self._outside)


def _build_add_files(
    table: pa.Table,
    num_records: pa.ChunkedArray,
    indices: Sequence[int] | None,
    objects: dict[int, AddFile],
) -> list[AddFile]:
    """AddFiles for the rows ``indices`` of ``table`` (every row when None), exactly as
    ``AddFile.from_json`` builds them from the actions' JSON objects; rows in ``objects`` are taken
    as already built."""
    if indices is None:
        indices = range(table.num_rows)
        nums = num_records.to_pylist()
    else:
        rows = pa.array(indices, pa.int64())
        table = table.take(rows)
        nums = num_records.take(rows).to_pylist()
    columns = table.select(list(_CONTENT_NAMES)).to_pydict()
    out: list[AddFile] = []
    append = out.append
    from_dv = DeletionVectorDescriptor.from_json
    for i, path, pv, size, mtime, change, stats, tags, dv, base, default, provider, num in zip(
        indices, *(columns[name] for name in _CONTENT_NAMES), nums, strict=True
    ):
        obj = objects.get(i)
        if obj is not None:
            append(obj)
            continue
        append(
            AddFile(
                path,
                MappingProxyType(dict(pv)) if pv else _EMPTY,
                size or 0,
                mtime or 0,
                True if change is None else change,
                stats,
                num,
                None if tags is None else MappingProxyType(dict(tags)),
                None if dv is None else from_dv(_drop_none(dv)),
                base,
                default,
                provider,
            )
        )
    return out


def build_live_files(
    live: pa.Table, raw_adds: Sequence[JsonDict], root_text: str
) -> tuple[LiveFiles, list[LogFinding]]:
    """The snapshot's live files from reconciled rows, and the findings about them.

    Findings, in file order, as reading every AddFile one by one gives them: a live raw add that
    ``AddFile.from_json`` refuses is left out; stats that are not a JSON object; a path, or an
    absolute deletion vector path, outside the table root. Only the rows that can have one are
    looked at one by one: raw rows, stats that do not start with ``numRecords``, suspect paths.
    """
    n = live.num_rows
    if n == 0:
        return LiveFiles.empty(), []
    stats = live.column("stats")
    num_records = _num_records(stats)
    if not isinstance(num_records, pa.ChunkedArray):
        num_records = pa.chunked_array([num_records])
    objects: dict[int, AddFile] = {}
    malformed: dict[int, str] = {}
    raw = live.column("raw")
    if raw.null_count < n:
        where = indices_nonzero(raw.is_valid())
        for i, r in zip(where.to_pylist(), raw.take(where).to_pylist(), strict=True):
            action = raw_adds[r]
            try:
                objects[i] = AddFile.from_json(action)
            except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
                # OverflowError: a size or offset of 1e400 (JSON's infinity) has no integer value
                malformed[i] = f"live add for {action.get('path')!r} is malformed ({e}); it was left out"
    # Raw rows have no stats column (their objects are built), so these are rows of the columns.
    odd_stats = _indices(pc.and_(pc.is_null(num_records), _non_empty(stats)))

    def build(indices: list[int]) -> list[AddFile]:
        return _build_add_files(live, num_records, indices, objects) if indices else []

    for i, add in zip(odd_stats, build(odd_stats), strict=True):
        # numRecords not at the start: parse as AddFile.from_json does (and keep the object)
        num, _ = parse_num_records(add.stats)
        objects[i] = AddFile(
            add.path,
            add.partition_values,
            add.size,
            add.modification_time,
            add.data_change,
            add.stats,
            num,
            add.tags,
            add.deletion_vector,
            add.base_row_id,
            add.default_row_commit_version,
            add.clustering_provider,
        )
    path_suspects = _indices(pc.match_substring_regex(live.column("path"), _SUSPECT_PATH))
    dv = live.column("deletionVector")
    dv_suspects = _indices(pc.equal(pc.struct_field(dv, "storageType"), "p")) if dv.null_count < n else []
    candidates = sorted(set(objects).union(malformed, path_suspects, dv_suspects))
    findings: list[LogFinding] = []
    outside_rows: list[int] = []
    built = dict(zip(candidates, build(candidates), strict=True))
    for i in candidates:
        if i in malformed:
            findings.append(LogFinding(FindingCode.INVALID_ACTION, malformed[i]))
            continue
        add = built[i]
        if add.stats and add.num_records is None and not parse_num_records(add.stats)[1]:
            findings.append(
                LogFinding(
                    FindingCode.UNPARSEABLE_STATS,
                    f"stats of {add.path!r} are not a JSON object; numRecords unknown",
                )
            )
        outside = False
        if resolve_data_path_text(root_text, add.path) is None:
            outside = True
            findings.append(
                LogFinding(
                    FindingCode.PATH_OUTSIDE_TABLE,
                    f"data file path {add.path!r} resolves outside the table root; it will not be opened",
                )
            )
        d = add.deletion_vector
        if (
            d is not None
            and d.storage_type == "p"
            and resolve_data_path_text(root_text, d.path_or_inline_dv) is None
        ):
            outside = True
            findings.append(
                LogFinding(
                    FindingCode.PATH_OUTSIDE_TABLE,
                    f"deletion vector of {add.path!r} is stored outside the table root "
                    f"({d.path_or_inline_dv!r}); it will not be opened",
                )
            )
        if outside:
            outside_rows.append(i)
    if malformed:
        keep = [i for i in range(n) if i not in malformed]
        shift = {old: new for new, old in enumerate(keep)}
        take = pa.array(keep, pa.int64())
        live = live.take(take)
        num_records = num_records.take(take)
        objects = {shift[i]: obj for i, obj in objects.items()}
        outside_rows = [shift[i] for i in outside_rows]
    return LiveFiles(live, num_records, objects, outside_rows), findings


def _non_empty(strings: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    return pc.fill_null(pc.greater(pc.binary_length(strings), 0), False)
