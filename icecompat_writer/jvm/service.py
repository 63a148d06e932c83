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
from icecompat_writer.iceberg.sync import (
    CATALOG_PROPERTY,
    ENABLED_FORMATS,
    IDENTIFIER_PROPERTY,
    sync_after_commit,
    sync_requested,
)
from icecompat_writer.jvm import protocol
from icecompat_writer.jvm.protocol import Answer, CheckCommit, PlanMetadata, Request, Sync
from icecompat_writer.planning import judge, plan, validate
from icecompat_writer.rules.detection import WRITER_PROFILES, declared_profile, held_profile
from icecompat_writer.rules.evaluate import finding_violation
from icecompat_writer.rules.model import Finding, Scope
from icecompat_writer.rules.writes import check_properties
from icecompat_writer.version import __version__

__all__ = ["handle", "main"]

# The property that asks Delta to add a table feature to the protocol (PROTOCOL.md "Table Features").
_FEATURE_PROPERTY = "delta.feature.{}"


def _profile_for(requested: str, *configurations: Mapping[str, str] | None) -> str | None:
    """The session's profile when it names one, else the one the table declares (new, then old)."""
    if requested:
        return requested
    for conf in configurations:
        if conf is not None:
            found = declared_profile(conf)
            if found is not None:
                return found
    return None


def _held_profile(state: Any) -> str | None:
    """The profile a table state is held to: the one its properties declare, else the writer
    profile its protocol lists (a table keeps a writer-compat feature whatever its properties say)."""
    if state is None:
        return None
    return held_profile(state.metadata.configuration, state.protocol)


def _refusal(
    profile: str, violations: list[Violation], context: str, delete: list[str] | None = None
) -> Answer:
    return {
        "ok": False,
        "profile": profile,
        "report": str(CompatViolation(violations, context)),
        "violations": [dataclasses.asdict(v) for v in sorted(violations)],
        "delete": delete or [],
    }


def _plan_metadata(req: PlanMetadata, io: storage.FileIO) -> Answer:
    proposed = new = Metadata.from_json(req.new_metadata)
    previous = None
    if req.table_exists:
        previous = TableState(
            Protocol.from_json(_present(req, "old_protocol", req.old_protocol)),
            Metadata.from_json(_present(req, "old_metadata", req.old_metadata)),
        )
        if req.creating:
            new = _keep_mapping_mode(new, previous.metadata)
    held = _held_profile(previous)
    requested = req.profile
    target = _switch_target(held, declared_profile(new.configuration))
    profile = requested or target or held
    if profile is None:
        return {"ok": True, "profile": None, "metadata": None}
    where = f"in the metadata of {req.table}"
    if previous is not None and not req.creating and held is not None and target is None:
        # An ALTER that switches the table's profile off or down (SET ... 'false', UNSET): refused,
        # never planned back (a planned-back property would make the UNSET a silent no-op).
        dropped = validate(held, new, previous.protocol, previous)
        enabling = [v for v in dropped if v.rule.endswith("-ENABLED")]
        if dropped:
            return _refusal(held, enabling or dropped, where)
    problems = _write_rule_violations(new, previous)
    if problems:
        return _refusal(profile, problems, where)
    try:
        planned = plan(profile, new, previous.protocol if previous else None, previous)
    except CompatViolation as e:
        return _refusal(profile, list(e.violations), where)
    if previous is not None and not req.creating and profile != held:
        stale = _files_below(profile, planned, previous, str(req.table), io)
        if stale:
            return _refusal(profile, stale, where)
    # Delta's write rules on the planned state, as compat_write's; an ALTER TABLE ... SET TBLPROPERTIES
    # (the JVM sends its properties) is also held to what delta-spark refuses of that command.
    problems = judge(
        None,
        planned.metadata,
        planned.protocol,
        previous,
        asked=_asked(new, previous),
        set_properties=req.command_properties is not None,
    )
    if problems:
        return _refusal(profile, problems, where)
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


# Profile moves a metadata change may make (the files permitting): from no profile to any, and from
# v3 to writer-v3 (which holds everything v3 holds). Any other change of the declared profile drops
# requirements the table's readers rely on.
_UPGRADES = frozenset({("v3", "writer-v3")})


def _switch_target(held: str | None, declared: str | None) -> str | None:
    """The profile a metadata change moves the table to, or None when it moves it to none or down."""
    if declared is None or held is None or declared == held or (held, declared) in _UPGRADES:
        return declared
    return None


def _asked(new: Any, previous: Any) -> dict[str, str]:
    """The properties this metadata change sets (new keys and changed values)."""
    old = previous.metadata.configuration if previous is not None else {}
    return {k: v for k, v in new.configuration.items() if old.get(k) != v}


def _write_rule_violations(new: Any, previous: Any) -> list[Violation]:
    """Delta's own write rules (``DELTA-WRITE-*``, as compat_write runs them) on a guarded
    metadata change: table properties that would reach the Hadoop configuration of every write."""
    problems: list[Violation] = []
    check_properties(_asked(new, previous), problems)
    return problems


def _files_below(
    profile: str, planned: Any, previous: Any, table: str, io: storage.FileIO
) -> list[Violation]:
    """A metadata-only switch to ``profile``: the live files must already meet it.

    Declaring a profile changes no data file, so every live file (its footer and its AddFile) is
    held to the profile before the declaration may land; otherwise the table would declare what its
    files do not meet. The fix is a rewrite of the files, which ``icecompat upgrade`` does.
    """
    root = _local_root(table)
    snapshot = read_snapshot(root, io=io)
    adds = list(snapshot.add_files)
    if not adds:
        return []
    # an object store's reads overlap (latency-bound); local footers use few threads or none
    facts = list(
        storage.map_bounded(
            lambda add: file_facts(root, add, io=io),
            adds,
            storage.footer_readers(io, len(adds)),
        )
    )
    found = validate(profile, planned.metadata, planned.protocol, previous, files=facts, scopes=[Scope.FILE])
    hint = (
        "this change declares the profile without rewriting a file: run `icecompat upgrade` on the table "
        f"(profile {profile}) to rewrite its files, then the files meet it"
    )
    return [dataclasses.replace(v, fix=f"{v.fix}; {hint}") for v in found]


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


def _check_commit(req: CheckCommit, io: storage.FileIO) -> Answer:
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
    state_after = TableState(protocol, metadata)
    held = _held_profile(previous)
    requested = req.profile
    profile = _profile_for(requested, metadata.configuration) or _held_profile(state_after) or held

    def delete() -> list[str]:
        if supplied:  # add paths: the JVM resolves them and keeps only the attempt's own
            return [add.path for add in adds]
        out = []
        for add in adds:
            local = resolve_data_path(root, add.path)
            if add.path not in known and local is not None:
                out.append(str(local))
        return out

    synced: Answer = {} if req.opted_out else _sync_wanted(metadata.configuration)
    pending = _declared_later(req, previous, metadata, delete, io)
    if pending is not None:
        return pending
    if profile is None:
        return {"ok": True, "profile": None, **synced}
    if req.opted_out:
        if profile not in WRITER_PROFILES:
            return {"ok": True, "profile": None}
        return {"ok": False, "profile": profile, "report": "", "violations": [], "delete": delete()}
    context = f"in commit {version} of {root}"
    outside = [a.path for a in adds if resolve_data_path(root, a.path) is None]
    if supplied:
        footers = req.footers or {}
        facts = [_supplied_facts(add, footers, io) for add in adds]
    else:
        facts = [file_facts(root, add, io=io) for add in adds]
    violations = _features_ahead(profile, protocol, previous)
    violations += judge(
        profile, metadata, protocol, previous, facts, outside=outside, footers_required=True
    )
    if not violations:
        return {"ok": True, "profile": profile, **synced}
    return _refusal(profile, violations, context, delete())


def _sync_wanted(configuration: Mapping[str, str]) -> Answer:
    """``{"sync": {...}}`` when the committed table asks for Iceberg, else ``{}``.

    The JVM sends the value back in its ``sync`` request once the commit file exists: the table
    properties the sync needs (the formats, the catalog and identifier), as this commit leaves them.
    """
    if not sync_requested(configuration):
        return {}
    keys = (ENABLED_FORMATS, CATALOG_PROPERTY, IDENTIFIER_PROPERTY)
    return {"sync": {k: str(configuration[k]) for k in keys if k in configuration}}


def _sync(req: Sync, io: storage.FileIO) -> Answer:
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
    answer: Answer = {
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
) -> Answer | None:
    """A commit made before the metadata its command sets: judged by what that metadata will be.

    delta-spark turns row tracking on in several commits (the protocol upgrade, the backfill that
    gives every live file its row ids, then the metadata with the command's properties). When the
    properties also declare a profile, only the last commit shows it, and refusing there would leave
    the first ones landed. The JVM sends the running command's properties (``command_properties``):
    a commit that does not yet carry them is refused when the command's metadata would be, with the
    same violations, except the row ids the command's own backfill assigns.
    """
    asked = req.command_properties or {}
    if not asked or previous is None or req.opted_out:
        return None
    if all(_same(metadata.configuration.get(k), v) for k, v in asked.items()):
        return None  # the command's own metadata commit: plan_metadata judged it
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
    backfill = _same(asked.get("delta.enableRowTracking"), "true")
    violations = [
        Violation(**v)
        for v in answer["violations"]
        if not (backfill and v["rule"] == "ICV3-ROW-IDS-ASSIGNED")
    ]
    if not violations:
        return None
    context = (
        f"in commit {req.version} of {req.table}, the first of a command that sets "
        + ", ".join(sorted(str(k) for k in asked))
    )
    return _refusal(str(answer.get("profile")), violations, context, delete())


def _same(value: Any, wanted: Any) -> bool:
    return value is not None and str(value).strip().lower() == str(wanted).strip().lower()


def _features_ahead(profile: str, protocol: Any, previous: Any) -> list[Violation]:
    """A commit that adds ``rowTracking`` to a ``writer-v1`` table's protocol is refused.

    IcebergWriterCompatV1 allows the feature only inactive, and delta-spark adds it as the first of
    the commits that turn row tracking on (protocol, backfill, then the property). Refusing the
    property at the last commit would leave the first two landed; refusing the feature here keeps
    the table as it was.
    """
    if profile != "writer-v1" or previous is None:
        return []
    added = set(protocol.writer_features or ()) - set(previous.protocol.writer_features or ())
    if "rowTracking" not in added:
        return []
    added_feature = Finding(
        observed="the commit adds the rowTracking table feature",
        expected="no rowTracking",
        values={"key": "delta.enableRowTracking"},
    )
    return [finding_violation(profile, "IWC1-NO-ROW-TRACKING", added_feature)]


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
        return {"ok": True, "version": __version__, "protocol": protocol.PROTOCOL_VERSION}
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
        try:
            req = json.loads(line)
        except json.JSONDecodeError as e:
            answer: Answer = {"error": f"request is not JSON: {e}"}
        else:
            answer = handle(req)
        dst.write(protocol.serialize_answer(answer) + "\n")
        dst.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
