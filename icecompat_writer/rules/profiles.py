"""The three profiles. A profile is configuration only: its name, what it turns on, its rules.

Everything a profile *means* is in its rules (catalog/); ``properties`` and ``features`` restate what
those rules require so that documentation, the checker and the PROFILE-EXCLUSIVE rule can read it
without interpreting rules (a test keeps the two in agreement).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from icecompat_writer.errors import IcecompatError
from icecompat_writer.rules.catalog import CATALOG
from icecompat_writer.rules.model import PROFILE_NAMES

__all__ = ["DEFAULT_PROFILE", "PROFILES", "Profile", "UnknownProfileError", "get_profile"]

DEFAULT_PROFILE = "v3"


class UnknownProfileError(IcecompatError, ValueError):
    """A profile name that is not one of :data:`PROFILES`."""


@dataclass(frozen=True)
class Profile:
    """One compliance target: the properties and table features it turns on and the rules it enforces."""

    name: str
    title: str
    properties: Mapping[str, str]
    features: tuple[str, ...]
    default_column_mapping_mode: str
    rule_ids: tuple[str, ...]


def _profile(name: str, title: str, properties: dict[str, str], features: tuple[str, ...]) -> Profile:
    return Profile(
        name=name,
        title=title,
        properties=MappingProxyType(properties),
        features=features,
        default_column_mapping_mode="id",
        rule_ids=tuple(r.id for r in CATALOG if name in r.profiles),
    )


PROFILES: Mapping[str, Profile] = MappingProxyType(
    {
        "v3": _profile(
            "v3",
            "IcebergCompatV3",
            {"delta.enableIcebergCompatV3": "true", "delta.enableRowTracking": "true"},
            ("columnMapping", "icebergCompatV3", "rowTracking", "domainMetadata"),
        ),
        "writer-v1": _profile(
            "writer-v1",
            "IcebergWriterCompatV1 on IcebergCompatV2",
            {"delta.enableIcebergCompatV2": "true", "delta.enableIcebergWriterCompatV1": "true"},
            ("columnMapping", "icebergCompatV2", "icebergWriterCompatV1"),
        ),
        "writer-v3": _profile(
            "writer-v3",
            "IcebergWriterCompatV3 on IcebergCompatV3 (as Delta Kernel implements it)",
            {
                "delta.enableIcebergCompatV3": "true",
                "delta.enableIcebergWriterCompatV3": "true",
                "delta.enableRowTracking": "true",
            },
            ("columnMapping", "icebergCompatV3", "icebergWriterCompatV3", "rowTracking", "domainMetadata"),
        ),
    }
)
if tuple(PROFILES) != PROFILE_NAMES:
    raise RuntimeError("profiles.py and model.PROFILE_NAMES disagree")


def get_profile(profile: str | Profile) -> Profile:
    """The :class:`Profile` for a name (a Profile passes through). Raises :class:`UnknownProfileError`."""
    if isinstance(profile, Profile):
        return profile
    found = PROFILES.get(profile)
    if found is None:
        raise UnknownProfileError(f"unknown profile {profile!r}; use one of {', '.join(PROFILES)}")
    return found
