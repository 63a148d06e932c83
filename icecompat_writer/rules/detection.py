"""Which profile a table declares, and which one it is held to, read from its properties and protocol.

Profile detection is rule knowledge: the checker, the guard service and the Iceberg emitter all ask
it, so it lives with the rules, on the log's JSON alone.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["WRITER_PROFILES", "declared_profile", "held_profile"]

# table property -> the profile a table declares by setting it to true (most specific first)
_DECLARING_PROPERTIES: tuple[tuple[str, str], ...] = (
    ("delta.enableIcebergWriterCompatV3", "writer-v3"),
    ("delta.enableIcebergWriterCompatV1", "writer-v1"),
    ("delta.enableIcebergCompatV3", "v3"),
)

def declared_profile(configuration: Mapping[str, str]) -> str | None:
    """The profile a table declares through its properties, or None when it declares none.

    Booleans are read as the rules read them (trimmed, case-insensitive), so the profile chosen here
    is the one PROFILE-EXCLUSIVE considers declared.
    """
    for key, profile in _DECLARING_PROPERTIES:
        if str(configuration.get(key, "")).strip().lower() == "true":
            return profile
    return None


WRITER_PROFILES = frozenset({"writer-v1", "writer-v3"})
# writer feature in the protocol -> the profile a table that lists it is held to (most specific first)
_HOLDING_FEATURES: tuple[tuple[str, str], ...] = (
    ("icebergWriterCompatV3", "writer-v3"),
    ("icebergWriterCompatV1", "writer-v1"),
)


def held_profile(configuration: Mapping[str, str], protocol: object) -> str | None:
    """The profile a table is held to: the writer profile its properties declare, else the writer
    profile of a writer-compat feature its protocol lists, else the profile its properties declare.

    A protocol feature outlives the property that asked for it (Delta never drops a feature on a
    property change), and delta-spark keeps enforcing nothing of it: a table whose property was set
    to false still tells readers through its protocol that it is IcebergWriterCompat. Such a table
    is checked against that profile, where the false property is itself a violation.
    """
    declared = declared_profile(configuration)
    if declared in WRITER_PROFILES:
        return declared
    features = set(getattr(protocol, "writer_features", None) or ())
    for feature, profile in _HOLDING_FEATURES:
        if feature in features:
            return profile
    return declared
