"""The rules about moving a table from one state to the next: which profile changes a metadata change
may make, and which table features a commit may not add ahead of the property that turns them on.

They are judged by :mod:`icecompat_writer.rules.verdict` (the guard's metadata changes and commits);
the violations they raise are those of the profile rules they protect (``*-ENABLED`` for a profile
dropped, ``IWC1-NO-ROW-TRACKING`` for row tracking added to a ``writer-v1`` table), so a refusal
names the requirement the readers rely on, worded by that rule's templates.
"""

from __future__ import annotations

from dataclasses import dataclass

from icecompat_writer.rules.catalog.shared import V3, W1, W3

__all__ = ["FEATURES_AHEAD", "PROFILE_UPGRADES", "FeatureAhead"]

# Profile moves a metadata change may make (the files permitting), besides from no profile to any:
# from v3 to writer-v3, which holds everything v3 holds. Any other change of the declared profile
# drops requirements the table's readers rely on, and is refused with the held profile's violations.
PROFILE_UPGRADES: frozenset[tuple[str, str]] = frozenset({(V3, W3)})


@dataclass(frozen=True)
class FeatureAhead:
    """A table feature a commit to a table held to ``profile`` may not add: delta-spark adds it as the
    first of the commits that turn it on, so refusing only the property at the last commit would leave
    the first ones landed. Refused as ``rule`` (a rule of the profile) with ``key`` as its property."""

    profile: str
    feature: str
    rule: str
    key: str


FEATURES_AHEAD: tuple[FeatureAhead, ...] = (
    FeatureAhead(W1, "rowTracking", "IWC1-NO-ROW-TRACKING", "delta.enableRowTracking"),
)
