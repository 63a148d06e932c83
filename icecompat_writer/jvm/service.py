"""The rule service: the session guard's JVM side asks here, so the rules run in one place.

``python -m icecompat_writer.jvm.service`` reads one JSON request per line on stdin and answers one
JSON line on stdout. The JVM (``io.icecompat.shim.guard.RuleService``) starts it once per driver and
sends table states exactly as the Delta log holds them; the answers come from the same planner and
validator that ``compat_write`` and ``icecompat check`` use, so a SQL ``INSERT`` and a Python
``compat_write`` are judged by the same code.

Operations:

``ping``
    ``{"ok": true, "version": ...}``: the service is up (``icecompat doctor`` uses it).
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

A request that fails unexpectedly is answered with ``{"error": ...}`` (the JVM then refuses the
write: a guard that cannot decide never lets a write through).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping
from typing import IO, Any

from icecompat_writer.errors import CompatViolation, Violation

__all__ = ["handle", "main"]

# The property that asks Delta to add a table feature to the protocol (PROTOCOL.md "Table Features").
_FEATURE_PROPERTY = "delta.feature.{}"


def _profile_for(requested: str, *configurations: Mapping[str, str] | None) -> str | None:
    """The session's profile when it names one, else the one the table declares (new, then old)."""
    from icecompat_writer.checking.check import declared_profile

    if requested:
        return requested
    for conf in configurations:
        if conf is not None:
            found = declared_profile(conf)
            if found is not None:
                return found
    return None


def _refusal(
    profile: str, violations: list[Violation], context: str, delete: list[str] | None = None
) -> dict[str, Any]:
    return {
        "ok": False,
        "profile": profile,
        "report": str(CompatViolation(violations, context)),
        "violations": [dataclasses.asdict(v) for v in sorted(violations)],
        "delete": delete or [],
    }


def _plan_metadata(req: Mapping[str, Any]) -> dict[str, Any]:
    from icecompat_writer.deltalog.actions import Metadata, Protocol, TableState
    from icecompat_writer.planning import plan

    proposed = new = Metadata.from_json(req["new_metadata"])
    previous = None
    if req.get("table_exists"):
        previous = TableState(
            Protocol.from_json(req["old_protocol"]), Metadata.from_json(req["old_metadata"])
        )
        if req.get("creating"):
            new = _keep_mapping_mode(new, previous.metadata)
    profile = _profile_for(
        str(req.get("profile") or ""),
        new.configuration,
        previous.metadata.configuration if previous else None,
    )
    if profile is None:
        return {"ok": True, "profile": None, "metadata": None}
    try:
        planned = plan(profile, new, previous.protocol if previous else None, previous)
    except CompatViolation as e:
        return _refusal(profile, list(e.violations), f"in the metadata of {req.get('table')}")
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
    from icecompat_writer.deltalog.paths import table_root_path

    return str(table_root_path(table))


def _supplied_facts(add: Any, supplied: Mapping[str, Any]) -> Any:
    """A new file's facts from the footer bytes the JVM read (tables not on the local disk).

    The footer decoder reads files, so the few footer bytes are framed as a minimal Parquet file
    (magic, footer, length, magic) in a private temporary file; errors name the file's add path.
    """
    import base64
    import dataclasses
    import struct
    import tempfile
    from pathlib import Path

    from icecompat_writer.checking.footers import FooterReadError, file_facts, read_footer

    facts = file_facts("/", add, read_footer=False)
    entry = supplied.get(add.path) or {"error": "the driver sent no footer for this file"}
    if "footer" not in entry:
        return dataclasses.replace(facts, footer_error=str(entry.get("error")))
    footer = base64.b64decode(entry["footer"])
    with tempfile.TemporaryDirectory(prefix="icecompat-footer-") as tmp:
        framed = Path(tmp) / "footer.parquet"
        framed.write_bytes(b"PAR1" + footer + struct.pack("<I", len(footer)) + b"PAR1")
        try:
            return dataclasses.replace(facts, footer=read_footer(framed))
        except FooterReadError as e:
            return dataclasses.replace(facts, footer_error=f"{add.path}: {e.reason}")


def _check_supplied_commit(req: Mapping[str, Any]) -> dict[str, Any]:
    """check_commit for a table the JVM read (``state`` and ``footers`` in the request)."""
    from icecompat_writer.deltalog.actions import Metadata, Protocol, TableState
    from icecompat_writer.deltalog.files import AddFile
    from icecompat_writer.rules.evaluate import validate

    table = str(req["table"])
    version = int(req["version"])
    actions = [json.loads(line) for line in req["actions"] if line.strip()]
    state = req.get("state")
    previous = None
    if state:
        before = (Protocol.from_json(state["protocol"]), Metadata.from_json(state["metadata"]))
        previous = TableState(*before, int(state["version"]))
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
    profile = _profile_for(str(req.get("profile") or ""), metadata.configuration)
    if profile is None:
        return {"ok": True, "profile": None}
    supplied = req.get("footers") or {}
    facts = [_supplied_facts(add, supplied) for add in adds]
    violations = validate(profile, metadata, protocol, previous, files=facts)
    if not violations:
        return {"ok": True, "profile": profile}
    return _refusal(profile, violations, f"in commit {version} of {table}", [add.path for add in adds])


def _check_commit(req: Mapping[str, Any]) -> dict[str, Any]:
    if "footers" in req:
        return _check_supplied_commit(req)
    from icecompat_writer.checking.footers import file_facts
    from icecompat_writer.deltalog import read_snapshot
    from icecompat_writer.deltalog.actions import Metadata, Protocol, TableState
    from icecompat_writer.deltalog.files import AddFile
    from icecompat_writer.deltalog.paths import resolve_data_path
    from icecompat_writer.rules.evaluate import validate

    root = _local_root(str(req["table"]))
    version = int(req["version"])
    actions = [json.loads(line) for line in req["actions"] if line.strip()]
    before = read_snapshot(root, version - 1) if version > 0 else None
    previous = TableState(before.protocol, before.metadata, before.version) if before is not None else None

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
    profile = _profile_for(str(req.get("profile") or ""), metadata.configuration)
    if profile is None:
        return {"ok": True, "profile": None}
    facts = [file_facts(root, add) for add in adds]
    violations = validate(profile, metadata, protocol, previous, files=facts)
    if not violations:
        return {"ok": True, "profile": profile}
    known = {a.path for a in before.add_files} if before is not None else set()
    delete = []
    for add in adds:
        local = resolve_data_path(root, add.path)
        if add.path not in known and local is not None:
            delete.append(str(local))
    return _refusal(profile, violations, f"in commit {version} of {root}", delete)


_OPS = {
    "ping": lambda req: {"ok": True, "version": _version()},
    "plan_metadata": _plan_metadata,
    "check_commit": _check_commit,
}


def _version() -> str:
    from icecompat_writer import __version__

    return __version__


def handle(req: Mapping[str, Any]) -> dict[str, Any]:
    """Answer one request (never raises: failures become ``{"error": ...}``)."""
    op = _OPS.get(str(req.get("op")))
    if op is None:
        return {"error": f"unknown operation {req.get('op')!r}"}
    try:
        return op(req)
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
            answer: dict[str, Any] = {"error": f"request is not JSON: {e}"}
        else:
            answer = handle(req)
        dst.write(json.dumps(answer, separators=(",", ":")) + "\n")
        dst.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
