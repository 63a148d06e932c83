"""``judge``: the one verdict on a table state, whoever asks for it.

compat_write (before and after its data files exist), the upgrade (after its rewrite), the session
guard's commit check, the checker and the Iceberg emitter all hold a table state to a profile. They
differ only in what they know and when they ask, and each difference is a parameter here, so none of
them builds its own list of checks:

- ``files`` not yet committed (compat_write, the upgrade): the rules Delta satisfies at commit time
  (:data:`~icecompat_writer.rules.catalog.ASSIGNED_AT_COMMIT`, row ids) are not held yet;
- ``asked``, the table properties a write asks for: what delta-spark would fail on while writing
  the planned state (``DELTA-WRITE-*``), found before a file exists;
- ``outside``, added paths outside the table (a shallow clone's commit): refused;
- ``table_properties``, an audit of a committed table: every property in a namespace that reaches
  the Hadoop configuration is reported (the checker);
- ``footers_required``, a write's own new files (compat_write, the upgrade, the guard): a file
  whose footer could not be read is refused (``DELTA-WRITE-FOOTER-UNREAD``) instead of passing the
  file rules unjudged; an audit reports the read error as its own finding;
- ``set_properties``, the metadata change is an ``ALTER TABLE ... SET TBLPROPERTIES`` (the guard
  learns it from the running command): delta-spark refuses some such commands that another
  operation may commit (``DELTA-WRITE-ALTER-V3-ROW-TRACKING``), so they are judged as the command;
- ``engine_limits=False``: delta-spark's own limits
  (:data:`~icecompat_writer.rules.catalog.DELTA_SPARK_RULES`) are left out, for a reader of the
  table (the Iceberg emitter) rather than a writer.

Pure: no file is read here; the callers bring the facts of the data files.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from icecompat_writer.errors import Violation
from icecompat_writer.facts import DataFileFacts
from icecompat_writer.model import Metadata, Protocol, TableStateLike
from icecompat_writer.rules.catalog import ASSIGNED_AT_COMMIT, DELTA_SPARK_RULES
from icecompat_writer.rules.evaluate import validate
from icecompat_writer.rules.model import Scope
from icecompat_writer.rules.profiles import Profile, get_profile
from icecompat_writer.rules.writes import (
    alter_violations,
    check_properties,
    enable_v3_by_upgrade,
    runtime_violations,
    shallow_clone_violations,
    unread_footer_violations,
)

__all__ = ["judge"]


def judge(
    profile: str | Profile | None,
    metadata: Metadata,
    protocol: Protocol,
    previous: TableStateLike | None = None,
    files: Iterable[DataFileFacts] = (),
    *,
    committed: bool = True,
    asked: Mapping[str, str] | None = None,
    outside: Sequence[str] = (),
    table_properties: bool = False,
    engine_limits: bool = True,
    footers_required: bool = False,
    set_properties: bool = False,
    scopes: Collection[Scope] | None = None,
) -> list[Violation]:
    """Every violation of ``profile`` (and of Delta's own write rules) by a table state.

    ``metadata`` and ``protocol`` are the state judged, ``previous`` the table before it (the
    ``replace`` rules compare against it; None for a new table or an audit), ``files`` the facts of
    the data files to hold to the file rules. ``profile`` None judges only Delta's own write rules
    (``asked``, ``outside``, ``table_properties``). ``committed`` False: the files are not committed
    yet, so the rules Delta satisfies at commit are skipped. ``set_properties``: the state is what an
    ``ALTER TABLE ... SET TBLPROPERTIES`` would commit over ``previous``. ``scopes`` restricts the
    profile's rules.
    The violations come in the order profile rules, then Delta's write rules; callers that show them
    sort them (:class:`~icecompat_writer.errors.CompatViolation` does).
    """
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
    if set_properties and previous is not None and engine_limits:
        found.extend(alter_violations(metadata, previous.metadata, previous.protocol))
    if table_properties:
        check_properties(metadata.configuration, found)
    return found
