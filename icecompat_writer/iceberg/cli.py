"""``icecompat iceberg TABLE_PATH [--format-version 2|3] [--catalog NAME [--identifier NS.TABLE]]
[--dry-run] [--json]``: one table's Iceberg metadata, and its entry in a pyiceberg catalog.

:func:`add_arguments` fills a (sub)parser and :func:`run` executes parsed arguments, following the exit
codes of ``icecompat_writer.cli.main``: 0 written, already current or (``--dry-run``) would be written,
1 the table is refused (violations printed one per line), 2 a usage error, the log could not be read,
the catalog failed, or another run committed first.

The catalog identifier is found by :func:`resolve_identifier`, the one rule every run uses (one table
here, a whole database in :mod:`icecompat_writer.fleet`): ``--identifier`` when given, else the table
property ``icecompat.iceberg.identifier``, else the table's Spark catalog name when it has one. An
``--identifier`` other than the property registers a second entry, which the syncs after each commit
do not move forward (a note on stderr says so).

``--dry-run`` runs everything a conversion reads (the log, the existing metadata, the same
verification of the data files the real run does) and says what it would write and what it would do
to the catalog; it writes nothing under the table and changes nothing in the catalog.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.deltalog.paths import table_root_path
from icecompat_writer.errors import CompatViolation, IcecompatError
from icecompat_writer.schema import JsonDict, JsonObject
from icecompat_writer.storage import FileIO, io_for

from . import _delta
from .catalogs import catalog_status, sync_catalog
from .emitter import IcebergResult, _adopt, write_iceberg_metadata
from .metadata import METADATA_DIR
from .start import current_metadata, first_version
from .sync import IDENTIFIER_PROPERTY, resolve_identifier
from .verification import verify_full, verify_since

__all__ = [
    "JSON_FORMAT",
    "ConversionPlan",
    "add_arguments",
    "catalog_plan",
    "main",
    "plan_conversion",
    "resolve_identifier",
    "run",
]

EXIT_OK = 0
EXIT_VIOLATIONS = 1
EXIT_ERROR = 2
JSON_FORMAT = "icecompat-iceberg/1"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of the ``iceberg`` subcommand."""
    parser.add_argument(
        "table_path",
        metavar="TABLE_PATH",
        nargs="*",
        help="root of the Delta table: local path, file: URI or s3a://, gs://, abfss:// URI "
        "(several: each in turn, one summary)",
    )
    parser.add_argument(
        "--format-version",
        type=int,
        choices=(2, 3),
        default=None,
        help="Iceberg format version (default: kept for an existing tree; new: 3 if IcebergCompatV3, else 2)",
    )
    parser.add_argument(
        "--catalog",
        metavar="NAME",
        default=None,
        help="also register the table in (or move it forward in) the pyiceberg catalog NAME "
        "(.pyiceberg.yaml or PYICEBERG_CATALOG__NAME__* variables)",
    )
    parser.add_argument(
        "--identifier",
        metavar="NAMESPACE.TABLE",
        default=None,
        help=f"the table's identifier in --catalog (default: its {IDENTIFIER_PROPERTY} property; "
        "one table only)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="verify and say what would be written and what the catalog would get; change nothing",
    )
    parser.add_argument("--json", action="store_true", help="print only JSON on stdout")


@dataclass(frozen=True)
class ConversionPlan:
    """What :func:`write_iceberg_metadata` would do, found without writing anything.

    ``first_version`` is the first Delta version that would get a snapshot (None: the metadata is
    current); ``metadata_location`` the file that would be written (or the current one).
    """

    table: str
    delta_version: int
    converted_version: int | None
    first_version: int | None
    metadata_version: int
    metadata_location: str
    format_version: int
    verification: str

    @property
    def needed(self) -> bool:
        return self.first_version is not None

    def summary(self) -> str:
        if not self.needed:
            return f"Iceberg metadata already at Delta version {self.delta_version}: {self.metadata_location}"
        return (
            f"would write {self.metadata_location} (Iceberg format v{self.format_version}, snapshots for "
            f"Delta versions {self.first_version} to {self.delta_version}; {self.verification} "
            "verification passed); nothing written"
        )


def plan_conversion(
    table_root: str | os.PathLike[str], format_version: int | None = None, *, io: FileIO
) -> ConversionPlan:
    """The dry run of :func:`write_iceberg_metadata`: the same reads and the same verification, and
    the same refusals (:class:`CompatViolation`, :class:`TableReadError`), but no file written."""
    if format_version is not None and format_version not in (2, 3):
        raise ValueError(f"format_version must be 2 or 3, not {format_version!r}")
    root = table_root_path(os.fspath(table_root))
    versions = _delta.commit_versions(root, io=io)
    latest = versions[-1]
    previous = current_metadata(root, io)
    if previous is None:
        start, _, fv, _ = first_version(root, latest, format_version, io)
        target = root / METADATA_DIR / "v1.metadata.json"
        return ConversionPlan(str(root), latest, None, start, 1, str(target), fv, "full")
    raw = json.loads(io.new_input(previous[1]).read().decode("utf-8"))
    meta, last, snap = _adopt(root, previous, raw, latest, format_version, io)
    if last == latest:
        return ConversionPlan(
            str(root), latest, last, None, previous[0], str(previous[1]), meta.format_version, ""
        )
    number = previous[0] + 1
    target = root / METADATA_DIR / f"v{number}.metadata.json"
    if last + 1 < versions[0]:  # the commits in between were cleaned up: one catch-up snapshot
        gone = f"Delta commits {last + 1}..{versions[0] - 1} are gone"
        verify_full(root, latest, meta.format_version, gone, snap, io=io)
        label = f"full (one catch-up snapshot: {gone})"
        fv = meta.format_version
        return ConversionPlan(str(root), latest, last, latest, number, str(target), fv, label)
    commits = list(_delta.iter_commits(root, last + 1, latest, io=io))
    verified = verify_since(root, meta, commits, latest, meta.format_version, snap, io=io)
    kind = "full" if verified.full else "incremental"
    return ConversionPlan(str(root), latest, last, last + 1, number, str(target), meta.format_version, kind)


def catalog_plan(catalog: str, identifier: str, plan: ConversionPlan, *, io: FileIO) -> JsonDict:
    """What ``sync_catalog`` would do after ``plan``: ``action`` is ``would register``, ``would commit``
    or ``current``. Reads the catalog's entry only; raises :class:`IcecompatError` when the catalog
    cannot answer (the real run would fail too)."""
    state = catalog_status(catalog, identifier, plan.metadata_location, io=io)
    if state.get("error"):
        raise IcecompatError(f"catalog {catalog}: {state['error']}")
    held = state.get("delta_version")
    if not state.get("registered"):
        action = "would register"
    elif held is not None and held >= plan.delta_version:
        action = "current"
    else:
        action = "would commit"
    return {
        "catalog": catalog,
        "identifier": identifier,
        "action": action,
        "delta_version": plan.delta_version,
        "catalog_delta_version": held,
    }


def _catalog_plan_text(state: JsonObject) -> str:
    where = f"catalog {state['catalog']}: {state['identifier']}"
    if state["action"] == "would register":
        return f"{where} would be registered at Delta version {state['delta_version']}"
    if state["action"] == "current":
        return f"{where} already at Delta version {state['catalog_delta_version']}; left as it is"
    return (
        f"{where} would move forward from Delta version {state['catalog_delta_version']} to "
        f"{state['delta_version']}"
    )


def _result_json(result: IcebergResult) -> JsonDict:
    return {
        "written": result.written,
        "delta_version": result.delta_version,
        "metadata_version": result.metadata_version,
        "metadata_location": str(result.metadata_path),
        "format_version": result.format_version,
        "verification": result.verification,
        "snapshots": [
            {
                "delta_version": s.delta_version,
                "snapshot_id": s.snapshot_id,
                "operation": s.operation,
                "added_files": s.added_files,
                "deleted_files": s.deleted_files,
            }
            for s in result.snapshots
        ],
    }


def _plan_json(plan: ConversionPlan) -> JsonDict:
    return {
        "written": False,
        "needed": plan.needed,
        "delta_version": plan.delta_version,
        "converted_version": plan.converted_version,
        "first_version": plan.first_version,
        "metadata_version": plan.metadata_version,
        "metadata_location": plan.metadata_location,
        "format_version": plan.format_version,
        "verification": plan.verification,
    }


def _fail(args: argparse.Namespace, path: str, code: int, err: Exception) -> int:
    """The refusal or error on stderr; with --json, stdout gets one JSON document naming it too."""
    print(f"icecompat iceberg: {err}", file=sys.stderr)
    if getattr(args, "json", False):
        if isinstance(err, CompatViolation):
            refused = {
                "type": type(err).__name__,
                "message": str(err).splitlines()[0],
                "violations": [
                    {"profile": v.profile, "rule": v.rule, "path": v.path, "message": v.message, "fix": v.fix}
                    for v in err.violations
                ],
            }
            doc: JsonDict = {
                "format": JSON_FORMAT,
                "table": path,
                "dry_run": bool(getattr(args, "dry_run", False)),
                "refused": refused,
            }
        else:
            doc = {"error": {"type": type(err).__name__, "message": str(err), "table": path}}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    return code


def _usage(args: argparse.Namespace, message: str) -> int:
    """A usage error, exit 2: argparse's message for the subcommand when the caller gave its parser."""
    parser = getattr(args, "command_parser", None)
    if isinstance(parser, argparse.ArgumentParser):
        try:
            parser.error(message)
        except SystemExit as exit_:
            return int(exit_.code or EXIT_ERROR)
    print(f"icecompat iceberg: {message}", file=sys.stderr)
    return EXIT_ERROR


def run(args: argparse.Namespace) -> int:
    """Convert (or, with ``--dry-run``, plan) and report; never raises for the package's own errors
    (they become exit codes)."""
    catalog, given = getattr(args, "catalog", None), getattr(args, "identifier", None)
    dry_run, as_json = bool(getattr(args, "dry_run", False)), bool(getattr(args, "json", False))
    if given is not None and catalog is None:
        return _usage(args, "--identifier names the table in --catalog: give --catalog NAME too")
    path = args.table_path
    if isinstance(path, list):  # the positional takes several paths; this runs exactly one
        if len(path) != 1:
            return _usage(args, "one TABLE_PATH here (`icecompat iceberg` takes several)")
        path = path[0]
    lines: list[str] = []  # what was done before a failure is still said (metadata written, catalog failed)
    try:
        io = io_for(path)  # the environment's store settings (a command line runs no Spark session)
        identifier: str | None = None
        if catalog is not None:
            snapshot = read_snapshot(path, io=io)
            configuration = {str(k): str(v) for k, v in snapshot.metadata.configuration.items()}
            identifier = resolve_identifier(configuration, given)
            prop = configuration.get(IDENTIFIER_PROPERTY)
            if given and prop and given != prop and int(getattr(args, "verbosity", 0) or 0) >= 0:
                print(
                    f"icecompat iceberg: note: {given} is not the table's {IDENTIFIER_PROPERTY} ({prop}); "
                    f"the sync after each commit moves {prop} forward, not {given}",
                    file=sys.stderr,
                )
            if identifier is None:
                return _usage(
                    args,
                    f"--catalog {catalog} needs the table's identifier: give --identifier NAMESPACE.TABLE "
                    f"or set the table property {IDENTIFIER_PROPERTY}",
                )
        doc: JsonDict = {"format": JSON_FORMAT, "table": path, "dry_run": dry_run}
        if dry_run:
            plan = plan_conversion(path, format_version=args.format_version, io=io)
            doc.update(_plan_json(plan))
            lines.append(plan.summary())
            if catalog is not None and identifier is not None:
                state = catalog_plan(catalog, identifier, plan, io=io)
                doc["catalog"] = state
                lines.append(_catalog_plan_text(state))
        else:
            result = write_iceberg_metadata(path, format_version=args.format_version, io=io)
            doc.update(_result_json(result))
            lines.append(result.summary())
            if catalog is not None and identifier is not None:
                synced = sync_catalog(catalog, identifier, str(result.metadata_path), io=io)
                doc["catalog"] = {
                    "catalog": synced.catalog,
                    "identifier": synced.identifier,
                    "action": synced.action,
                    "delta_version": synced.delta_version,
                    "catalog_delta_version": synced.catalog_delta_version,
                    "metadata_location": synced.metadata_location,
                }
                lines.append(synced.summary())
    except CompatViolation as err:
        return _fail(args, path, EXIT_VIOLATIONS, err)
    except IcecompatError as err:
        if lines and not as_json:
            print("\n".join(lines))
        return _fail(args, path, EXIT_ERROR, err)
    if "catalog" not in doc:
        doc["catalog"] = None
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        print("\n".join(lines))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point (``python -m icecompat_writer.iceberg.cli TABLE_PATH``)."""
    parser = argparse.ArgumentParser(
        prog="icecompat iceberg", description="Write Iceberg metadata for a Delta table."
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
