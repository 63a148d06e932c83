"""The verdict: the one place that decides whether a table state may be written, whoever asks.

compat_write, the upgrade, the session guard's rule service, the checker and the Iceberg emitter hold
a table state to a profile. They differ only in what they know and when they ask, so each asks with
the *moment* it is at, a frozen dataclass carrying exactly what that moment knows, and
:func:`decide` answers a :class:`Verdict`. No caller builds its own list of checks or filters the
answer; each raises the violations once, with its own context, as before:

- :class:`DataFrameSchema`: a DataFrame's own schema, before it is composed with the table's
  (compat_write): names Delta takes for one column, structs without fields;
- :class:`TableProperties`: the table properties a write or command would commit (compat_write):
  none may reach the Hadoop configuration of later writes;
- :class:`Plan`: a planned state before any data file exists (compat_write, the upgrade's plan, the
  guard's planned metadata). Delta's write rules on the properties the write asks for, and for an
  ``ALTER TABLE ... SET TBLPROPERTIES`` what delta-spark refuses of that command;
- :class:`PreCommit`: the new data files of a write are written, the commit is not (compat_write, the
  upgrade's rewrite): the rules Delta satisfies at commit time are not held yet, and every new file
  must have a readable footer;
- :class:`KeptFiles`: which live files fall short of a planned state (the upgrade's rewrite list);
- :class:`Rewrite`: what delta-spark would refuse in a commit that rewrites data files (the upgrade);
- :class:`MetadataChange`: the guard sees Delta about to change a table's metadata: which profile
  applies (a move to another profile, or a drop), before the planner runs;
- :class:`Declaration`: a metadata-only change that declares a profile: the live files must meet it;
- :class:`GuardedCommit`: a commit file is about to be written by a guarded session, with what came
  from outside (the session's files, paths outside the table, the state before);
- :class:`CommandAhead`: a commit made before the metadata of the command it belongs to;
- :class:`Audit`: a committed table as it is (``icecompat check``);
- :class:`IcebergRead`: a committed table as an Iceberg reader meets it (the emitter): delta-spark's
  own limits on writing it are not the reader's;
- :class:`IcebergFiles`: a batch of such a table's live files, held to the file rules alone (each
  judges one file), so that a first conversion judges a big table batch by batch.

Pure: no file is read here; the callers bring the facts of the data files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from icecompat_writer.errors import CompatViolation, Violation
from icecompat_writer.facts import DataFileFacts
from icecompat_writer.model import Metadata, Protocol, TableStateLike
from icecompat_writer.rules.catalog import ASSIGNED_AT_COMMIT, DELTA_SPARK_RULES
from icecompat_writer.rules.catalog.transitions import FEATURES_AHEAD, PROFILE_UPGRADES
from icecompat_writer.rules.detection import WRITER_PROFILES, declared_profile, held_profile
from icecompat_writer.rules.evaluate import finding_violation, validate
from icecompat_writer.rules.model import Finding, Scope
from icecompat_writer.rules.profiles import PROFILES, Profile, get_profile
from icecompat_writer.rules.writes import (
    alter_violations,
    check_properties,
    data_schema_violations,
    enable_v3_by_upgrade,
    runtime_violations,
    shallow_clone_violations,
    unread_footer_violations,
    variant_violations,
)
from icecompat_writer.schema import Schema

__all__ = [
    "Audit",
    "CommandAhead",
    "DataFrameSchema",
    "Declaration",
    "GuardedCommit",
    "IcebergFiles",
    "IcebergRead",
    "KeptFiles",
    "MetadataChange",
    "Moment",
    "Plan",
    "PreCommit",
    "Rewrite",
    "TableProperties",
    "Verdict",
    "asked_properties",
    "awaits_command",
    "commit_profile",
    "decide",
    "state_profile",
]

ProfileName = str | Profile


@dataclass(frozen=True)
class Verdict:
    """What :func:`decide` found: the violations (full column paths, catalog wording), and the
    profile that applied (None: no profile, the state is not a guarded one).

    ``unjudged``: refused without judging (a session that switched the guard off writing a table that
    declares a writer profile). ``declares``: a metadata change declaring ``profile`` without rewriting
    a file, whose live files must then meet it (:class:`Declaration`). ``candidates``: for an audit
    without a profile, each profile's violation count.
    """

    violations: tuple[Violation, ...] = ()
    profile: str | None = None
    unjudged: bool = False
    declares: bool = False
    candidates: Mapping[str, int] = field(default_factory=dict)

    @property
    def refused(self) -> bool:
        """Whether the moment's write must not happen."""
        return bool(self.violations) or self.unjudged

    def raise_if_refused(self, context: str) -> None:
        """Raise every violation at once (:class:`CompatViolation`, sorted), the table untouched."""
        if self.violations:
            raise CompatViolation(self.violations, context)


@dataclass(frozen=True)
class DataFrameSchema:
    """The schema of a DataFrame about to be written (parsed from the JSON Spark gives)."""

    schema: Schema


@dataclass(frozen=True)
class TableProperties:
    """The table properties a write would commit."""

    configuration: Mapping[str, str]


@dataclass(frozen=True)
class Plan:
    """A planned state before any data file exists. ``profile`` None: the planner already held the
    state to its profile and only Delta's own write rules are left (the guard). ``asked``: the table
    properties the write asks for (values delta-spark would fail on); ``alter``: the change is an
    ``ALTER TABLE ... SET TBLPROPERTIES`` over ``previous``."""

    profile: ProfileName | None
    metadata: Metadata
    protocol: Protocol
    previous: TableStateLike | None = None
    asked: Mapping[str, str] | None = None
    alter: bool = False


@dataclass(frozen=True)
class PreCommit:
    """A write's new data files exist, its commit does not: ``files`` are their facts."""

    profile: ProfileName
    metadata: Metadata
    protocol: Protocol
    previous: TableStateLike | None
    files: Sequence[DataFileFacts]


@dataclass(frozen=True)
class KeptFiles:
    """The live files a rewrite would keep, judged against its planned state (the file rules only;
    kept files are re-added, and Delta gives them row ids then)."""

    profile: ProfileName
    metadata: Metadata
    protocol: Protocol
    previous: TableStateLike
    files: Sequence[DataFileFacts]


@dataclass(frozen=True)
class Rewrite:
    """A commit that rewrites data files under a planned state: what delta-spark 4.4 refuses there."""

    profile: ProfileName
    metadata: Metadata
    protocol: Protocol
    previous: TableStateLike


@dataclass(frozen=True)
class MetadataChange:
    """Delta is about to replace ``previous``'s metadata by ``new`` (``creating``: a CREATE or
    REPLACE); ``requested`` is the session's profile ("" for none)."""

    requested: str
    new: Metadata
    previous: TableStateLike | None
    creating: bool = False


@dataclass(frozen=True)
class Declaration:
    """A metadata-only change that declares ``profile``: ``files`` are the table's live files."""

    profile: ProfileName
    metadata: Metadata
    protocol: Protocol
    previous: TableStateLike
    files: Sequence[DataFileFacts]


@dataclass(frozen=True)
class GuardedCommit:
    """A commit file a guarded session is about to write: the state it leaves (``metadata``,
    ``protocol``), the table before it, the facts of its new files, its added paths outside the table
    (a shallow clone's), the session's ``requested`` profile and whether it switched the guard off."""

    requested: str
    metadata: Metadata
    protocol: Protocol
    previous: TableStateLike | None
    files: Sequence[DataFileFacts] = ()
    outside: Sequence[str] = ()
    opted_out: bool = False


@dataclass(frozen=True)
class CommandAhead:
    """A commit before the metadata commit of its command: ``violations`` are what the command's
    metadata (``asked``, its table properties, over the table) is refused for, under ``profile``."""

    asked: Mapping[str, str]
    profile: str | None
    violations: Sequence[Violation]


@dataclass(frozen=True)
class Audit:
    """A committed table as it is; ``profile`` None: each profile is a candidate."""

    profile: ProfileName | None
    metadata: Metadata
    protocol: Protocol
    files: Sequence[DataFileFacts] = ()


@dataclass(frozen=True)
class IcebergRead:
    """A committed table version as an Iceberg reader meets it."""

    profile: ProfileName
    metadata: Metadata
    protocol: Protocol
    files: Sequence[DataFileFacts] = ()


@dataclass(frozen=True)
class IcebergFiles:
    """A batch of a committed table version's live files as an Iceberg reader meets them."""

    profile: ProfileName
    metadata: Metadata
    protocol: Protocol
    files: Sequence[DataFileFacts]


Moment = (
    DataFrameSchema
    | TableProperties
    | Plan
    | PreCommit
    | KeptFiles
    | Rewrite
    | MetadataChange
    | Declaration
    | GuardedCommit
    | CommandAhead
    | Audit
    | IcebergRead
    | IcebergFiles
)


def decide(moment: Moment) -> Verdict:
    """The verdict on one moment (see the module docstring for what each is held to)."""
    if isinstance(moment, DataFrameSchema):
        return Verdict(tuple(data_schema_violations(moment.schema)))
    if isinstance(moment, TableProperties):
        found: list[Violation] = []
        check_properties(moment.configuration, found)
        return Verdict(tuple(found))
    if isinstance(moment, Plan):
        return _plan(moment)
    if isinstance(moment, PreCommit):
        found = _judge(moment.profile, moment.metadata, moment.protocol, moment.previous, moment.files,
                       committed=False, footers_required=True)  # fmt: skip
        return _verdict(found, moment.profile)
    if isinstance(moment, KeptFiles):
        found = _judge(moment.profile, moment.metadata, moment.protocol, moment.previous, moment.files,
                       committed=False, scopes={Scope.FILE})  # fmt: skip
        return _verdict(found, moment.profile)
    if isinstance(moment, Rewrite):
        return _verdict(_rewrite(moment), moment.profile)
    if isinstance(moment, MetadataChange):
        return _metadata_change(moment)
    if isinstance(moment, Declaration):
        return _verdict(_declaration(moment), moment.profile)
    if isinstance(moment, GuardedCommit):
        return _guarded_commit(moment)
    if isinstance(moment, CommandAhead):
        return _command_ahead(moment)
    if isinstance(moment, Audit):
        return _audit(moment)
    if isinstance(moment, IcebergFiles):
        found = _judge(moment.profile, moment.metadata, moment.protocol, None, moment.files,
                       engine_limits=False, scopes={Scope.FILE})  # fmt: skip
        return _verdict(found, moment.profile)
    found = _judge(moment.profile, moment.metadata, moment.protocol, None, moment.files, engine_limits=False)
    return _verdict(found, moment.profile)


# --- who is held to what --------------------------------------------------------------------------


def state_profile(state: TableStateLike | None) -> str | None:
    """The profile a table state is held to: the one its properties declare, else the writer profile
    its protocol lists (a table keeps a writer-compat feature whatever its properties say)."""
    if state is None:
        return None
    return held_profile(state.metadata.configuration, state.protocol)


def commit_profile(
    requested: str, metadata: Metadata, protocol: Protocol, previous: TableStateLike | None
) -> str | None:
    """The profile a commit is held to: the session's, else the one the state it leaves declares or
    holds, else the table's before it."""
    if requested:
        return requested
    return declared_profile(metadata.configuration) or held_profile(metadata.configuration, protocol) or (
        state_profile(previous)
    )


def asked_properties(new: Metadata, previous: TableStateLike | None) -> dict[str, str]:
    """The properties a metadata change sets (new keys and changed values)."""
    old = previous.metadata.configuration if previous is not None else {}
    return {k: v for k, v in new.configuration.items() if old.get(k) != v}


def awaits_command(asked: Mapping[str, str], configuration: Mapping[str, str]) -> bool:
    """Whether a commit comes before the metadata commit of the command setting ``asked``: it does not
    carry every property the command sets yet (delta-spark turns row tracking on in several commits:
    the protocol, the backfill, then the metadata with the command's properties)."""
    return bool(asked) and not all(_same(configuration.get(k), v) for k, v in asked.items())


def _switch_target(held: str | None, declared: str | None) -> str | None:
    """The profile a metadata change moves the table to, or None when it moves it to none or down."""
    if declared is None or held is None or declared == held or (held, declared) in PROFILE_UPGRADES:
        return declared
    return None


# --- the moments ----------------------------------------------------------------------------------


def _verdict(found: Iterable[Violation], profile: ProfileName | None) -> Verdict:
    name = profile.name if isinstance(profile, Profile) else profile
    return Verdict(tuple(found), name)


def _plan(m: Plan) -> Verdict:
    found = _judge(m.profile, m.metadata, m.protocol, m.previous, asked=m.asked)
    if m.alter and m.previous is not None:
        found.extend(alter_violations(m.metadata, m.previous.metadata, m.previous.protocol))
    return _verdict(found, m.profile)


def _rewrite(m: Rewrite) -> list[Violation]:
    """A column mapping change on a table with change data feed (checked against the table as it is,
    also for a new table state), and a variant column under IcebergCompatV3."""
    found = [
        v
        for v in validate(m.profile, m.metadata, m.protocol, m.previous, scopes={Scope.REPLACE})
        if v.rule == "DELTA-SPARK-CDF-COLUMN-MAPPING"
    ]
    return found + variant_violations(m.metadata, m.protocol)


def _metadata_change(m: MetadataChange) -> Verdict:
    previous = m.previous
    held = state_profile(previous)
    target = _switch_target(held, declared_profile(m.new.configuration))
    profile = m.requested or target or held
    if profile is None:
        return Verdict()
    if previous is not None and not m.creating and held is not None and target is None:
        # An ALTER that switches the table's profile off or down (SET ... 'false', UNSET): refused,
        # never planned back (a planned-back property would make the UNSET a silent no-op).
        dropped = validate(held, m.new, previous.protocol, previous)
        enabling = [v for v in dropped if v.rule.endswith("-ENABLED")]
        if dropped:
            return Verdict(tuple(enabling or dropped), held)
    # Delta's own write rules on the properties the change sets: those reaching the Hadoop configuration
    problems: list[Violation] = []
    check_properties(asked_properties(m.new, previous), problems)
    declares = previous is not None and not m.creating and profile != held
    return Verdict(tuple(problems), profile, declares=declares and not problems)


def _declaration(m: Declaration) -> list[Violation]:
    """Declaring a profile changes no data file, so every live file (its footer and its AddFile) is held
    to the profile before the declaration may land; otherwise the table would declare what its files do
    not meet. The fix is a rewrite of the files, which ``icecompat upgrade`` does."""
    if not m.files:
        return []
    name = get_profile(m.profile).name
    found = validate(name, m.metadata, m.protocol, m.previous, files=m.files, scopes=[Scope.FILE])
    hint = (
        "this change declares the profile without rewriting a file: run `icecompat upgrade` on the table "
        f"(profile {name}) to rewrite its files, then the files meet it"
    )
    return [dataclasses.replace(v, fix=f"{v.fix}; {hint}") for v in found]


def _guarded_commit(m: GuardedCommit) -> Verdict:
    profile = commit_profile(m.requested, m.metadata, m.protocol, m.previous)
    if profile is None:
        return Verdict()
    if m.opted_out:
        # the session runs delta-spark alone: only a writer profile's table is refused (unjudged)
        if profile not in WRITER_PROFILES:
            return Verdict()
        return Verdict(profile=profile, unjudged=True)
    found = _features_ahead(profile, m.protocol, m.previous)
    found += _judge(profile, m.metadata, m.protocol, m.previous, m.files, outside=m.outside,
                    footers_required=True)  # fmt: skip
    return Verdict(tuple(found), profile)


def _features_ahead(profile: str, protocol: Protocol, previous: TableStateLike | None) -> list[Violation]:
    """A commit that adds a feature the profile allows only inactive, as the first of the commits that
    turn it on (:data:`~icecompat_writer.rules.catalog.transitions.FEATURES_AHEAD`), is refused there:
    refusing the property at the last commit would leave the first ones landed."""
    if previous is None:
        return []
    added = set(protocol.writer_features or ()) - set(previous.protocol.writer_features or ())
    found = []
    for ahead in FEATURES_AHEAD:
        if ahead.profile == profile and ahead.feature in added:
            finding = Finding(
                observed=f"the commit adds the {ahead.feature} table feature",
                expected=f"no {ahead.feature}",
                values={"key": ahead.key},
            )
            found.append(finding_violation(profile, ahead.rule, finding))
    return found


def _command_ahead(m: CommandAhead) -> Verdict:
    """The command's violations, less the row ids its own backfill assigns when it enables row tracking."""
    backfill = _same(m.asked.get("delta.enableRowTracking"), "true")
    kept = tuple(v for v in m.violations if not (backfill and v.rule in ASSIGNED_AT_COMMIT))
    return Verdict(kept, m.profile)


def _audit(m: Audit) -> Verdict:
    """The table as committed: no previous state (the replace rules judge writes), and Delta's own write
    rules on its properties (those in the Hadoop, Parquet and Spark namespaces reach the Hadoop
    configuration of every later write). Without a profile each candidate is judged, the write rules once."""
    candidates: dict[str, int] = {}
    found: list[Violation] = []
    for name in PROFILES if m.profile is None else ():
        theirs = _judge(name, m.metadata, m.protocol, None, m.files)
        candidates[name] = len(theirs)
        found.extend(theirs)
    found.extend(_judge(m.profile, m.metadata, m.protocol, None, m.files))
    check_properties(m.metadata.configuration, found)
    found.sort()
    return Verdict(tuple(found), _verdict((), m.profile).profile, candidates=candidates)


def _judge(
    profile: ProfileName | None,
    metadata: Metadata,
    protocol: Protocol,
    previous: TableStateLike | None,
    files: Iterable[DataFileFacts] = (),
    *,
    committed: bool = True,
    asked: Mapping[str, str] | None = None,
    outside: Sequence[str] = (),
    engine_limits: bool = True,
    footers_required: bool = False,
    scopes: Collection[Scope] | None = None,
) -> list[Violation]:
    """The profile's rules, then Delta's write rules, as a moment allows them (private: the moments
    above are the only way in, each naming what it knows)."""
    found: list[Violation] = []
    files = list(files)
    if profile is not None:
        found = validate(profile, metadata, protocol, previous, files, scopes=scopes)
        if footers_required:
            found.extend(unread_footer_violations(files))
        if not committed:
            found = [v for v in found if v.rule not in ASSIGNED_AT_COMMIT]
        if not engine_limits:
            found = [v for v in found if v.rule not in DELTA_SPARK_RULES]
        else:
            found = enable_v3_by_upgrade(get_profile(profile).name, found, metadata, protocol)
    if outside:
        found.extend(shallow_clone_violations(outside))
    if asked is not None:
        found.extend(runtime_violations(metadata, protocol, asked))
    return found


def _same(value: object, wanted: object) -> bool:
    return value is not None and str(value).strip().lower() == str(wanted).strip().lower()
