"""Planning: the protocol and metadata a write must commit to comply with a profile, or a refusal.

``plan`` repairs what can be repaired in the log (ids, physical names, nested ids, properties,
features, versions) and raises :class:`~icecompat_writer.errors.CompatViolation` for the rest;
``validate`` (the same function as :func:`icecompat_writer.rules.validate`) reports every violation,
including those of data files; the verdict every writer, checker and guard asks for is
:func:`icecompat_writer.rules.verdict.decide`.
``ids`` assigns column-mapping ids, ``protocol`` builds protocols,
``fixes`` maps each rule kind to its repair. No Spark.
"""

from __future__ import annotations

from icecompat_writer.planning.planner import Change, Plan, plan
from icecompat_writer.rules.evaluate import validate
from icecompat_writer.rules.profiles import (
    DEFAULT_PROFILE,
    PROFILES,
    Profile,
    UnknownProfileError,
    get_profile,
)

__all__ = [
    "DEFAULT_PROFILE",
    "PROFILES",
    "Change",
    "Plan",
    "Profile",
    "UnknownProfileError",
    "get_profile",
    "plan",
    "validate",
]
