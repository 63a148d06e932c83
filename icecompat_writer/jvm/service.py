"""The rule service: the session guard's JVM side asks here, so the rules run in one place.

``python -m icecompat_writer.jvm.service`` reads one JSON request per line on stdin and answers one
JSON line on stdout. The JVM (``io.icecompat.shim.guard.RuleService``) starts it once per driver and
sends table states exactly as the Delta log holds them; the answers come from the same planner and
validator that ``compat_write`` and ``icecompat check`` use, so a SQL ``INSERT`` and a Python
``compat_write`` are judged by the same code.

Operations:

The messages are defined once, in :mod:`icecompat_writer.jvm.protocol` (a request with an unknown
or missing key is refused, naming it); the first request of every process is ``hello``, the
protocol version handshake.

``hello``
    ``{"ok": true, "protocol": N}``, or an error when the driver's protocol version differs.
``ping``
    ``{"ok": true, "version": ..., "protocol": N}``: the service is up (``icecompat doctor``).
Every answer names the ``profile`` that applied (null: none, the write is not a guarded one).

``plan_metadata``
    Delta is about to update a table's metadata (before any data file is written). Answers the
    compliant metadata to use instead (``metadata``, or null when Delta's proposal already complies
    or no profile applies), or ``ok: false`` with the violations.
``check_commit``
    A commit is about to be written. Answers ``ok: true``, or ``ok: false`` with the violations and
    ``delete``: the data files this commit would have added that no earlier version references.
    Local tables are read here; for a table on any other scheme (s3a, abfss, gs, hdfs) the JVM reads
    through the session's own Hadoop file system and sends ``state`` (the previous version's protocol
    and metadata, Delta's snapshot) and ``footers`` (per new file's ``add.path``: its Parquet footer
    bytes, base64, or an ``error``); ``delete`` then lists add paths, and the JVM deletes those no
    earlier version references.

``sync``
    The commit file of ``version`` exists (the JVM asks only after the delegate log store wrote it,
    and only when the ``check_commit`` answer carried ``sync``: the table's
    ``delta.universalFormat.enabledFormats`` lists ``iceberg``). Runs
    :func:`icecompat_writer.iceberg.sync.sync_after_commit` with the table properties the
    ``check_commit`` answer gave (``configuration``), the session's
    ``spark.icecompat.iceberg.catalog`` (``catalog``) and, for a commit made through the table's
    Spark catalog name, that name (``identifier``, ``db.tbl``: the Iceberg identifier unless the
    table property ``icecompat.iceberg.identifier`` names another). Answers ``ok``, ``converted_version``,
    ``lag``, ``metadata_location``, ``catalog`` (the catalog's action) and, when the sync failed,
    ``warning`` (table, version, cause), which the JVM logs; the Delta commit stands whatever the
    answer, and the next sync converts every version after the last converted one.

    Cost per guarded commit: nothing for a table without the property (the flag rides on the
    ``check_commit`` answer); for a synced table one more request. The JVM sends ``sync`` requests
    to processes of their own (``RuleService.forSync``: one table always to the same process), so a
    sync never delays a guarded commit check, and two syncs of one table never interleave; a sync
    that finds the metadata already at (or past) its version, e.g. because the previous writer's
    sync converted it, writes nothing.
    Writes ``compat_write`` makes are trusted: the JVM neither checks nor syncs them, since
    ``compat_write`` syncs its own commits.

A request about a table outside the local file system carries ``hadoop``: the object-store keys of
the session's Hadoop configuration (``fs.s3a.*``, ``fs.azure.*``, ``fs.gs.*``, secrets resolved
through Hadoop's credential providers). Every operation reads such a table through a
:class:`~icecompat_writer.storage.FileIO` built from them for the request (a ``sync`` writes the
Iceberg metadata and fills the catalog's FileIO properties through the same one), so this process
reaches a bucket with exactly the credentials and endpoint the session's own connectors use,
whatever its environment holds. They are kept in memory for that request only and appear in no answer or log.

A request that fails unexpectedly is answered with ``{"error": ...}`` (the JVM then refuses the
write: a guard that cannot decide never lets a write through; for ``sync``, whose commit already
landed, it logs the error as a failed sync instead).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import sys
import warnings
from collections.abc import Mapping
from typing import IO, Any

from icecompat_writer import storage
from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.deltalog.actions import Metadata, Protocol, TableState
from icecompat_writer.deltalog.files import AddFile
from icecompat_writer.deltalog.paths import resolve_data_path, table_root_path
from icecompat_writer.errors import CompatViolation, Violation
from icecompat_writer.evidence.footers import FooterReadError, decode_footer, file_facts
from icecompat_writer.facts import DataFileFacts
from icecompat_writer.iceberg.sync import (
    CATALOG_PROPERTY,
    ENABLED_FORMATS,
    IDENTIFIER_PROPERTY,
    sync_after_commit,
    sync_requested,
)
from icecompat_writer.jvm import protocol
from icecompat_writer.jvm.protocol import (
    Answer,
    CheckCommit,
    CheckCommitAnswer,
    PingAnswer,
    PlanMetadata,
    PlanMetadataAnswer,
    Refusal,
    Request,
    Sync,
    SyncAnswer,
)
from icecompat_writer.planning import plan
from icecompat_writer.rules.verdict import (
    CommandAhead,
    Declaration,
    GuardedCommit,
    MetadataChange,
    Plan,
    asked_properties,
    awaits_command,
    commit_profile,
    decide,
)
from icecompat_writer.version import __version__

__all__ = ["handle", "main"]

# The property that asks Delta to add a table feature to the protocol (PROTOCOL.md "Table Features").
_FEATURE_PROPERTY = "delta.feature.{}"


def _refusal(
    profile: str, violations: list[Violation], context: str, delete: list[str] | None = None
) -> Refusal:
    return {
        "ok": False,
        "profile": profile,
        "report": str(CompatViolation(violations, context)),
        "violations": [dataclasses.asdict(v) for v in sorted(violations)],
        "delete": delete or [],
    }


def _plan_metadata(req: PlanMetadata, io: storage.FileIO) -> PlanMetadataAnswer | Refusal:
    proposed = new = Metadata.from_json(req.new_metadata)
    previous = None
    if req.table_exists:
        previous = TableState(
            Protocol.from_json(_present(req, "old_protocol", req.old_protocol)),
            Metadata.from_json(_present(req, "old_metadata", req.old_metadata)),
        )
        if req.creating:
            new = _keep_mapping_mode(new, previous.metadata)
    where = f"in the metadata of {req.table}"
    change = decide(MetadataChange(req.profile, new, previous, req.creating))
    if change.refused:
        return _refusal(str(change.profile), list(change.violations), where)
    profile = change.profile
    if profile is None:
        return {"ok": True, "profile": None, "metadata": None}
    try:
        planned = plan(profile, new, previous.protocol if previous else None, previous)
    except CompatViolation as e:
        return _refusal(profile, list(e.violations), where)
    if change.declares and previous is not None:
        facts = _live_facts(str(req.table), io)
        stale = decide(Declaration(profile, planned.metadata, planned.protocol, previous, facts))
        if stale.refused:
            return _refusal(profile, list(stale.violations), where)
    # Delta's write rules on the planned state, as compat_write's; an ALTER TABLE ... SET TBLPROPERTIES
    # (the JVM sends its properties) is also held to what delta-spark refuses of that command.
    judged = decide(
        Plan(
            None,
            planned.metadata,
            planned.protocol,
            previous,
            asked=asked_properties(new, previous),
            alter=req.command_properties is not None,
        )
    )
    if judged.refused:
        return _refusal(profile, list(judged.violations), where)
    if not planned.changed and new == proposed:
        return {"ok": True, "profile": profile, "metadata": None}
    # Delta derives the protocol from the metadata after this point; the features the plan needs
    # beyond what the table had are requested the way Delta reads such requests, as properties.
    had = previous.protocol.writer_features or frozenset() if previous else frozenset()
    configuration = dict(planned.metadata.configuration)
    for feature in sorted((planned.protocol.writer_features or frozenset()) - had):
        configuration.setdefault(_FEATURE_PROPERTY.format(feature), "supported")
    metadata = planned.metadata.with_configuration(configuration)
    return {
        "ok": True,
        "profile": profile,
        "metadata": metadata.to_json(),
        "changes": [str(c) for c in planned.changes],
    }


def _live_facts(table: str, io: storage.FileIO) -> list[DataFileFacts]:
    """The facts of every live file of ``table`` (footers and AddFiles), for a metadata-only change
    that declares a profile: the verdict holds them to it."""
    root = _local_root(table)
    adds = list(read_snapshot(root, io=io).add_files)
    if not adds:
        return []
    # an object store's reads overlap (latency-bound); local footers use few threads or none
    return list(
        storage.map_bounded(
            lambda add: file_facts(root, add, io=io),
            adds,
            storage.footer_readers(io, len(adds)),
        )
    )


def _keep_mapping_mode(new: Any, old: Any) -> Any:
    """A REPLACE keeps the table's column mapping mode.

    delta-spark fills in a default mode for a replaced IcebergCompat table (``name``) even when the
    table it replaces uses ``id``; planning that as a mode change would refuse every REPLACE of an
    id-mode table. Keeping the old mode keeps the columns' ids and physical names meaningful to
    Iceberg readers across the replace.
    """
    key = "delta.columnMapping.mode"
    old_mode = str(old.configuration.get(key, "")).strip().lower()
    if old_mode in ("", "none") or str(new.configuration.get(key, "")).strip().lower() == old_mode:
        return new
    return new.with_configuration({**new.configuration, key: old_mode})


def _local_root(table: str) -> str:
    return str(table_root_path(table))


def _supplied_facts(add: Any, supplied: Mapping[str, Any], io: storage.FileIO) -> Any:
    """A new file's facts from the footer bytes the JVM read (tables not on the local disk), decoded
    by the one footer decoder every reader uses; errors name the file's add path."""
    facts = file_facts("/", add, read_footer=False, io=io)
    entry = supplied.get(add.path) or {"error": "the driver sent no footer for this file"}
    if "footer" not in entry:
        return dataclasses.replace(facts, footer_error=str(entry.get("error")))
    try:
        return dataclasses.replace(facts, footer=decode_footer(base64.b64decode(entry["footer"]), add.path))
    except FooterReadError as e:
        return dataclasses.replace(facts, footer_error=f"{add.path}: {e.reason}")


def _check_commit(req: CheckCommit, io: storage.FileIO) -> CheckCommitAnswer | Refusal:
    """The last check before a commit file is written: the same rules whatever the table's store.

    A local table's previous state and new footers are read here; for a table on an object store the
    JVM read them through the session's own file system and sent them (``state``, ``footers``), and
    it keeps to itself which refused files are the attempt's own (files version N-1 does not have).
    """
    version = req.version
    actions = [json.loads(line) for line in req.actions if line.strip()]
    supplied = req.footers is not None
    previous = None
    known: set[str] = set()
    if supplied:
        root: Any = req.table
        state = req.state
        if state:
            before_state = (Protocol.from_json(state["protocol"]), Metadata.from_json(state["metadata"]))
            previous = TableState(*before_state, int(state["version"]))
    else:
        root = _local_root(req.table)
        before = read_snapshot(root, version - 1, io=io) if version > 0 else None
        if before is not None:
            previous = TableState(before.protocol, before.metadata, before.version)
            known = {a.path for a in before.add_files}

    protocol = previous.protocol if previous else None
    metadata = previous.metadata if previous else None
    adds: list[AddFile] = []
    for action in actions:
        if "protocol" in action:
            protocol = Protocol.from_json(action["protocol"])
        elif "metaData" in action:
            metadata = Metadata.from_json(action["metaData"])
        elif "add" in action:
            adds.append(AddFile.from_json(action["add"]))
    if protocol is None or metadata is None:
        return {"ok": True, "profile": None}

    def delete() -> list[str]:
        if supplied:  # add paths: the JVM resolves them and keeps only the attempt's own
            return [add.path for add in adds]
        out = []
        for add in adds:
            local = resolve_data_path(root, add.path)
            if add.path not in known and local is not None:
                out.append(str(local))
        return out

    synced: CheckCommitAnswer = {} if req.opted_out else _sync_wanted(metadata.configuration)
    pending = _declared_later(req, previous, metadata, delete, io)
    if pending is not None:
        return pending
    # no file is read for a commit no profile applies to, nor for a session that switched the guard off
    if commit_profile(req.profile, metadata, protocol, previous) is None:
        return {"ok": True, "profile": None, **synced}
    if req.opted_out:
        unjudged = decide(GuardedCommit(req.profile, metadata, protocol, previous, opted_out=True))
        if not unjudged.refused:
            return {"ok": True, "profile": None}
        return {"ok": False, "profile": unjudged.profile, "report": "", "violations": [], "delete": delete()}
    context = f"in commit {version} of {root}"
    outside = [a.path for a in adds if resolve_data_path(root, a.path) is None]
    if supplied:
        footers = req.footers or {}
        facts = [_supplied_facts(add, footers, io) for add in adds]
    else:
        facts = [file_facts(root, add, io=io) for add in adds]
    verdict = decide(GuardedCommit(req.profile, metadata, protocol, previous, facts, outside))
    profile = str(verdict.profile)
    if not verdict.refused:
        return {"ok": True, "profile": profile, **synced}
    return _refusal(profile, list(verdict.violations), context, delete())


def _sync_wanted(configuration: Mapping[str, str]) -> CheckCommitAnswer:
    """``{"sync": {...}}`` when the committed table asks for Iceberg, else ``{}``.

    The JVM sends the value back in its ``sync`` request once the commit file exists: the table
    properties the sync needs (the formats, the catalog and identifier), as this commit leaves them.
    """
    if not sync_requested(configuration):
        return {}
    keys = (ENABLED_FORMATS, CATALOG_PROPERTY, IDENTIFIER_PROPERTY)
    return {"sync": {k: str(configuration[k]) for k in keys if k in configuration}}


def _sync(req: Sync, io: storage.FileIO) -> SyncAnswer:
    """Iceberg metadata (and catalog) after a guarded commit: :func:`.iceberg.sync.sync_after_commit`.

    Its warning is not printed here but answered (``warning``), for the JVM to log in the driver; and
    whatever the Iceberg libraries might print goes to stderr, never onto the answer channel.
    """
    with (
        warnings.catch_warnings(record=True),
        contextlib.redirect_stdout(sys.stderr),
    ):
        warnings.simplefilter("ignore")
        synced = sync_after_commit(
            req.table,
            req.version,
            dict(req.configuration or {}),
            req.catalog or None,
            req.identifier or None,
            io=io,
        )
    answer: SyncAnswer = {
        "ok": synced.error is None,
        "profile": None,
        "converted_version": synced.converted_version,
        "lag": synced.lag,
        "metadata_location": synced.metadata_location,
        "catalog": None if synced.catalog is None else synced.catalog.action,
    }
    if synced.error is not None:
        answer["warning"] = synced.error
    return answer


def _declared_later(
    req: CheckCommit, previous: Any, metadata: Any, delete: Any, io: storage.FileIO
) -> Refusal | None:
    """A commit made before the metadata its command sets: judged by what that metadata will be.

    delta-spark turns row tracking on in several commits (the protocol upgrade, the backfill that
    gives every live file its row ids, then the metadata with the command's properties). When the
    properties also declare a profile, only the last commit shows it, and refusing there would leave
    the first ones landed. The JVM sends the running command's properties (``command_properties``):
    a commit that does not yet carry them is refused when the command's metadata would be, with the
    same violations, except the row ids the command's own backfill assigns.
    """
    asked = req.command_properties or {}
    if previous is None or req.opted_out or not awaits_command(asked, metadata.configuration):
        return None  # no command ahead, or the command's own metadata commit: plan_metadata judged it
    answer = _plan_metadata(
        PlanMetadata(
            table=req.table,
            profile=req.profile,
            creating=False,
            table_exists=True,
            old_protocol=previous.protocol.to_json(),
            old_metadata=previous.metadata.to_json(),
            new_metadata=previous.metadata.with_configuration(
                {**previous.metadata.configuration, **{str(k): str(v) for k, v in asked.items()}}
            ).to_json(),
            command_properties=asked,
        ),
        io,
    )
    if answer.get("ok") or not answer.get("violations"):
        return None
    refused = [Violation(**v) for v in answer["violations"]]
    verdict = decide(CommandAhead(asked, str(answer.get("profile")), refused))
    if not verdict.refused:
        return None
    context = (
        f"in commit {req.version} of {req.table}, the first of a command that sets "
        + ", ".join(sorted(str(k) for k in asked))
    )
    return _refusal(str(verdict.profile), list(verdict.violations), context, delete())


def _present(req: Request, key: str, value: Any) -> Any:
    """A key optional in general that this request needs (a PlanMetadata about an existing table)."""
    if value is None:
        raise protocol.ProtocolError(f"rule service request {req.op!r}: missing key {key!r}")
    return value


def _answer(req: Request, io: storage.FileIO) -> Answer:
    """The answer to one parsed request, its files read through ``io`` (the operation's failures
    propagate to :func:`handle`)."""
    if isinstance(req, protocol.Hello):
        return protocol.check_hello(req)
    if isinstance(req, protocol.Ping):
        pong: PingAnswer = {"ok": True, "version": __version__, "protocol": protocol.PROTOCOL_VERSION}
        return pong
    if isinstance(req, PlanMetadata):
        return _plan_metadata(req, io)
    if isinstance(req, CheckCommit):
        return _check_commit(req, io)
    return _sync(req, io)


def _io(req: Request) -> storage.FileIO:
    """The FileIO of the request's table, with the Hadoop settings the driver sent with it (used for
    this request only). A request that names no table reads no file; nor does one for a table on a
    store the storage layer does not serve (``hdfs:``: the JVM sends the state and footers it read),
    and any read of such a location fails on its scheme, as it always did."""
    table = getattr(req, "table", None)
    try:
        return storage.io_for(table, req.hadoop) if table else storage.LocalFileIO()
    except storage.UnsupportedSchemeError:
        return storage.LocalFileIO()


def handle(raw: Any) -> Answer:
    """Answer one decoded request (never raises: failures become ``{"error": ...}``)."""
    try:
        req = protocol.parse_request(raw)
    except protocol.ProtocolError as e:
        return {"error": str(e)}
    try:
        return _answer(req, _io(req))
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}


def main(stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> int:
    """Serve requests until stdin closes."""
    src = stdin or sys.stdin
    dst = stdout or sys.stdout
    for line in src:
        if not line.strip():
            continue
        op = None
        try:
            req = json.loads(line)
        except json.JSONDecodeError as e:
            answer: Answer = {"error": f"request is not JSON: {e}"}
        else:
            answer = handle(req)
            op = req.get("op") if isinstance(req, dict) and isinstance(req.get("op"), str) else None
        # each operation's answer is held to its own type (protocol.ANSWERS)
        dst.write(protocol.serialize_answer(answer, op) + "\n")
        dst.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
