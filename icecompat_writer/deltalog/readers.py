"""Reading the two file formats of a Delta log: newline-delimited JSON and checkpoint Parquet.

Actions other than ``add``/``remove`` come back in the JSON shape (``{"txn": {...}}`` becomes
``("txn", {...})``). File actions, nearly all of a big log, come back as Arrow rows of
:data:`~.columnar.FILE_ACTIONS_SCHEMA` wherever that is exact, so that replay never builds a Python
object per file:

Files are read through :mod:`icecompat_writer.storage`, so a log on S3, GCS or Azure reads like a
local one; local files are opened only when they are regular files (never a named pipe or a device).

* checkpoint Parquet is read with pyarrow, projecting only the action columns replay needs and, inside
  ``add``, only the fields an AddFile has. ``stats_parsed``/``partitionValues_parsed``, which can be
  wider than everything else together, are read in a second pass only when some ``add`` lacks the
  string form they stand for (a table with ``delta.checkpoint.writeStatsAsJson=false``); replay
  renders them once it knows the table schema (:mod:`.parsed`). The ``add`` column is cast to the
  canonical types; only a checkpoint whose types cannot be held exactly there is converted to
  dicts, column by column.
  ``remove`` rows of a checkpoint are tombstones for VACUUM and are not read at all;
* in a JSON file with many ``add``/``remove`` lines, those lines are parsed by pyarrow.json and the
  others by ``json.loads``. Whatever the columnar parse cannot reproduce exactly (a damaged line, an
  unusual value: see :func:`~.columnar.json_file_actions`) sends the whole file down the line-by-line
  path, which is the reference and turns damaged lines into findings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icecompat_writer.storage import FileIO, Location
from icecompat_writer.storage.local import (
    NotRegularFileError,
    check_regular_file,
    file_kind,
    open_regular_file,
)

from .columnar import CONTENT_FIELDS, checkpoint_adds, json_file_actions
from .findings import FindingCode, LogFinding
from .parsed import ParsedColumns

__all__ = [
    "ADD_FIELDS",
    "COLUMNAR_MIN_LINES",
    "NON_FILE_ACTIONS",
    "JsonActions",
    "NotRegularFileError",
    "ParquetActions",
    "check_regular_file",
    "file_kind",
    "iter_json_lines",
    "open_regular_file",
    "read_json_actions",
    "read_parquet_actions",
]

# Fields of ``add`` that AddFile carries; read from checkpoints when present in the file's schema.
ADD_FIELDS: tuple[str, ...] = tuple(f.name for f in CONTENT_FIELDS)
# Checkpoint columns that hold one action each and are few per file.
NON_FILE_ACTIONS: tuple[str, ...] = (
    "protocol",
    "metaData",
    "txn",
    "domainMetadata",
    "checkpointMetadata",
    "sidecar",
)
_BATCH_ROWS = 65_536
COLUMNAR_MIN_LINES = 200
"""A JSON file with at least this many ``add``/``remove`` lines has them parsed by pyarrow.json;
below that, ``json.loads`` per line costs no more and the actions are kept as dicts."""
# How Delta writers start a line holding one add or remove; other lines are read with json.loads.
_FILE_ACTION_PREFIXES = (b'{"add":{', b'{"remove":{')


@dataclass
class JsonActions:
    """The actions of one JSON log file, in file order, and the lines that could not be used.

    When ``files`` is set, it holds the file's ``add``/``remove`` actions (in file order) and
    ``actions`` every other action; otherwise ``actions`` holds all of them.
    """

    actions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    findings: list[LogFinding] = field(default_factory=list)
    files: pa.RecordBatch | None = None


@dataclass
class ParquetActions:
    """The actions of one checkpoint Parquet file: non-file actions, then the ``add`` rows.

    ``adds`` holds, in file order, batches of file-action rows or, for a file whose ``add`` types
    the canonical schema cannot hold exactly, lists of ``add`` objects as dicts. ``parsed`` is None,
    or holds for each entry of ``adds`` the ``stats_parsed``/``partitionValues_parsed`` values of its
    rows (read when some add lacks ``stats`` or ``partitionValues`` and the file has the struct).
    """

    non_file: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    adds: list[pa.RecordBatch | list[dict[str, Any]]] = field(default_factory=list)
    parsed: list[ParsedColumns] | None = None
    stats_dropped: bool = False
    """The file holds adds but neither ``add.stats`` nor ``add.stats_parsed``: its writer dropped
    every file's statistics (both ``delta.checkpoint.writeStatsAs*`` properties false)."""


def iter_json_lines(path: Location, *, io: FileIO) -> Iterator[tuple[int, bytes]]:
    """``(line_number, raw_line)`` for every non-blank line, 1-based. Opening errors propagate
    (:class:`NotRegularFileError` for a named pipe, device or directory)."""
    data = io.new_input(path).read()
    for number, raw in enumerate(BytesIO(data), start=1):
        if raw.strip():
            yield number, raw


def read_json_actions(path: Location, display_name: str, *, io: FileIO) -> JsonActions:
    """All actions of a JSON commit / compaction / V2 checkpoint file.

    A line that is not a JSON object becomes a finding and is skipped: one torn write must not hide
    the rest of the log. A line may in principle carry several actions; each key is one action.
    ``OSError`` from opening the file propagates (the caller decides what a missing file means),
    :class:`NotRegularFileError` included.
    """
    data = io.new_input(path).read()
    # Lines exactly as iterating the open file gives them (split after b"\n" only).
    lines = [(number, raw) for number, raw in enumerate(BytesIO(data), start=1) if raw.strip()]
    routed: list[bytes] = []
    others: list[tuple[int, bytes]] = []
    for number, raw in lines:
        if raw.startswith(_FILE_ACTION_PREFIXES):
            routed.append(raw)
        else:
            others.append((number, raw))
    if len(routed) >= COLUMNAR_MIN_LINES:
        columnar = _read_columnar(routed, others, display_name)
        if columnar is not None:
            return columnar
    return _read_lines(lines, display_name)


def _read_columnar(
    routed: list[bytes], others: list[tuple[int, bytes]], display_name: str
) -> JsonActions | None:
    """File-action lines through pyarrow.json, the rest line by line; None: read it all line by line."""
    data = b"".join(routed)
    if b'"stats_parsed"' in data:
        return None  # a JSON checkpoint's typed stats: the line reader keeps them for the replay
    if not data.isascii():
        try:
            data.decode("utf-8")  # pyarrow does not check; json.loads refuses what this refuses
        except UnicodeDecodeError:
            return None
    files = json_file_actions(data, len(routed))
    if files is None:
        return None
    out = _read_lines(others, display_name)
    if any(name == "add" or name == "remove" for name, _ in out.actions):
        return None  # a file action on a line of another shape: keep the order of file actions exact
    out.files = files
    return out


def _read_lines(lines: Iterable[tuple[int, bytes]], display_name: str) -> JsonActions:
    out = JsonActions()
    append = out.actions.append
    loads = json.loads
    for number, raw in lines:
        try:
            obj = loads(raw)
        except RecursionError:
            # json.loads recurses once per nesting level: a line of 5,000 brackets is damage, not a
            # reason to stop reading the log
            out.findings.append(
                LogFinding(
                    FindingCode.CORRUPT_LINE,
                    "line is JSON nested too deeply to decode; the line was skipped",
                    display_name,
                    number,
                )
            )
            continue
        except ValueError as e:
            truncated = not raw.endswith(b"\n")
            out.findings.append(
                LogFinding(
                    FindingCode.CORRUPT_LINE,
                    ("truncated line (no newline at end of file)" if truncated else "line is not valid JSON")
                    + f": {_short(e)}; the line was skipped",
                    display_name,
                    number,
                )
            )
            continue
        if not isinstance(obj, dict):
            out.findings.append(
                LogFinding(
                    FindingCode.CORRUPT_LINE,
                    f"line is JSON but not an object ({type(obj).__name__}); the line was skipped",
                    display_name,
                    number,
                )
            )
            continue
        for name, action in obj.items():
            if not isinstance(action, dict):
                out.findings.append(
                    LogFinding(
                        FindingCode.INVALID_ACTION,
                        f"action {name!r} is not an object; it was skipped",
                        display_name,
                        number,
                    )
                )
                continue
            append((name, action))
    return out


def read_parquet_actions(path: Location, *, io: FileIO, with_adds: bool = True) -> ParquetActions:
    """The actions of one checkpoint part, V2 checkpoint or sidecar file.

    Raises whatever pyarrow raises for an unreadable file (``OSError``, ``pyarrow.ArrowException``),
    and :class:`NotRegularFileError` for a named pipe, device or directory (pyarrow would block on a
    pipe, uninterruptibly); the caller turns it into a finding and a fallback.
    """
    out = ParquetActions()
    as_dicts = False
    pf = pq.ParquetFile(io.new_input(path).parquet_source())
    try:
        schema = pf.schema_arrow
        names = set(schema.names)
        non_file = [c for c in NON_FILE_ACTIONS if c in names]
        columns: list[str] = list(non_file)
        add_fields: list[str] = []
        if with_adds and "add" in names:
            add_type = schema.field("add").type
            if pa.types.is_struct(add_type):
                present = {add_type.field(i).name for i in range(add_type.num_fields)}
                add_fields = [f for f in ADD_FIELDS if f in present]
                columns.extend(f"add.{f}" for f in add_fields)
        if not columns:
            return out
        # per entry of out.adds: its rows in the file (first, count) and which add rows they keep
        spans: list[tuple[int, int, pa.Array | None]] = []
        wants: set[str] = set()
        start = 0
        has_adds = False
        for batch in pf.iter_batches(columns=columns, batch_size=_BATCH_ROWS, use_threads=True):
            for name in non_file:
                arr = batch.column(name)
                if arr.null_count == len(arr):
                    continue
                valid = arr.filter(arr.is_valid())
                for row in valid.to_pylist():
                    out.non_file.append((name, _maps_to_dicts(row, valid.type)))
            if add_fields:
                column = batch.column("add")
                rows = None if as_dicts else checkpoint_adds(column)
                if rows is None:  # a type the canonical schema cannot hold exactly: dicts, as JSON reads
                    as_dicts = True
                    out.adds.append(_adds_from_column(column, add_fields))
                    spans.append((start, len(column), column.is_valid()))
                else:
                    out.adds.append(rows)
                    spans.append((start, len(column), None))
                wants |= _missing_forms(column, add_fields)
                has_adds = has_adds or column.null_count < len(column)
            start += batch.num_rows
        present_fields = _present_add_fields(schema)
        parsed_fields = [f for f in _PARSED_FORMS if f in wants and f in present_fields]
        out.stats_dropped = has_adds and not present_fields & {"stats", "stats_parsed"}
        if parsed_fields:
            out.parsed = _read_parsed(pf, parsed_fields, spans)
    finally:
        pf.close()
    return out


# The string form each typed checkpoint column stands in for (PROTOCOL.md "Checkpoints").
_PARSED_FORMS = {"stats_parsed": "stats", "partitionValues_parsed": "partitionValues"}


def _present_add_fields(schema: pa.Schema) -> set[str]:
    """The fields of a checkpoint's ``add`` struct (empty when it has none)."""
    if "add" not in schema.names:
        return set()
    add_type = schema.field("add").type
    if not pa.types.is_struct(add_type):
        return set()
    return {add_type.field(i).name for i in range(add_type.num_fields)}


def _missing_forms(column: pa.Array, add_fields: list[str]) -> set[str]:
    """The typed columns some add of ``column`` needs: its string form is absent (or null)."""
    out: set[str] = set()
    valid = column.is_valid()
    for typed, text in _PARSED_FORMS.items():
        if text not in add_fields:
            if column.null_count < len(column):
                out.add(typed)
            continue
        missing = pc.and_(valid, pc.is_null(pc.struct_field(column, text)))
        if pc.any(missing).as_py():
            out.add(typed)
    return out


def _read_parsed(
    pf: pq.ParquetFile, fields: list[str], spans: list[tuple[int, int, pa.Array | None]]
) -> list[ParsedColumns]:
    """The typed columns ``fields`` of ``add``, cut to the rows of each entry ``spans`` describes."""
    table = pf.read(columns=[f"add.{f}" for f in fields], use_threads=True)
    add = table.column("add").combine_chunks()
    if isinstance(add, pa.ChunkedArray):  # an empty file: no chunk to combine
        add = pa.concat_arrays(add.chunks) if add.num_chunks else pa.nulls(0, add.type)
    columns = {f: pc.struct_field(add, f) for f in fields}
    out: list[ParsedColumns] = []
    for first, count, keep in spans:
        cut = {f: arr.slice(first, count) for f, arr in columns.items()}
        if keep is not None:  # the dicts hold the valid add rows only
            cut = {f: arr.filter(keep) for f, arr in cut.items()}
        out.append(ParsedColumns(cut.get("stats_parsed"), cut.get("partitionValues_parsed")))
    return out


def _adds_from_column(arr: pa.StructArray, add_fields: list[str]) -> list[dict[str, Any]]:
    """Valid rows of an ``add`` struct column as JSON-shaped dicts, converted column by column."""
    if arr.null_count == len(arr):
        return []
    if arr.null_count:
        arr = arr.filter(arr.is_valid())
    columns: list[list[Any]] = []
    for name in add_fields:
        child = arr.field(name)
        values = child.to_pylist()
        if pa.types.is_map(child.type):
            values = [None if v is None else dict(v) for v in values]
        elif name == "deletionVector":
            values = [None if v is None else _drop_none(v) for v in values]
        columns.append(values)
    names = add_fields
    result: list[dict[str, Any]] = []
    append = result.append
    for row in zip(*columns, strict=True):
        append({k: v for k, v in zip(names, row, strict=True) if v is not None})
    return result


def _drop_none(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if v is not None}


def _maps_to_dicts(value: Any, type_: pa.DataType) -> Any:  # noqa: ANN401  # pyarrow's to_pylist values, untyped
    """Turn pyarrow's list-of-pairs map values back into dicts, recursively (JSON shape)."""
    if value is None:
        return None
    if pa.types.is_map(type_):
        return {k: _maps_to_dicts(v, type_.item_type) for k, v in value}
    if pa.types.is_struct(type_):
        return {
            type_.field(i).name: _maps_to_dicts(value.get(type_.field(i).name), type_.field(i).type)
            for i in range(type_.num_fields)
        }
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return [_maps_to_dicts(v, type_.value_type) for v in value]
    return value


def _short(e: Exception) -> str:
    text = str(e)
    return text if len(text) <= 120 else text[:117] + "..."
