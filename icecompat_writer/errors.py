"""The package's exception hierarchy, and the one record every refusal is made of.

Everything the package raises on purpose derives from :class:`IcecompatError`, so a caller can catch
one type. Java exceptions never surface raw: the JVM bridge maps them onto these classes by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "CompatViolation",
    "ConcurrentWriteError",
    "IcebergSyncWarning",
    "IcecompatError",
    "JvmError",
    "RuleServiceMismatch",
    "SessionConfigError",
    "SetupError",
    "SparkConnectNotSupported",
    "TableExistsError",
    "TableNotFoundError",
    "TableReadError",
    "UnsupportedSparkVersion",
    "UpgradeRefused",
    "Violation",
]


@dataclass(frozen=True, order=True)
class Violation:
    """One broken requirement: which rule, where in the table, what was seen, and how to fix it.

    ``path`` is the column path with nested levels spelled out (``a.b.element.c``, ``m.key.x``), or
    ``""`` when the rule is about the table as a whole (protocol, properties). ``values`` are the
    further values the rule's message was filled with (``file`` for a data file, ``key``, ...), kept
    as data so that nobody has to read them back out of the message.
    """

    profile: str
    rule: str
    path: str
    message: str
    fix: str
    observed: str | None = None
    expected: str | None = None
    clause: str = field(default="", compare=False)
    values: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def render(self) -> str:
        """One human-readable line: profile, rule id, column, what is wrong, the fix."""
        where = f" column `{self.path}`" if self.path else " table"
        seen = ""
        if self.observed is not None or self.expected is not None:
            seen = f" (observed: {self.observed}; expected: {self.expected})"
        return f"[{self.profile}] {self.rule} at{where}: {self.message}{seen}. Fix: {self.fix}"


class IcecompatError(Exception):
    """Base of every error the package raises on purpose."""


class SetupError(IcecompatError):
    """The installation is incomplete (e.g. the shim jars were never built)."""


class UnsupportedSparkVersion(SetupError):
    """The running Spark is not on a line the package ships Delta jars for (``supported``: the lines,
    e.g. ``("4.0", "4.1", "4.2")``). Raised before a session starts, instead of a missing-method error
    from delta-spark in the middle of a write."""

    def __init__(self, version: str, supported: Sequence[str], detail: str = "") -> None:
        self.version = version
        self.supported = tuple(supported)
        lines = ", ".join(f"{line}.x" for line in self.supported) or "none (the jars were never built)"
        message = (
            f"Spark {version} is not supported by this icecompat_writer build; supported Spark lines: "
            f"{lines} (each with delta-spark 4.4.0, bundled). Run one of these Spark versions, "
            "e.g. `pip install 'pyspark>=4.0,<4.3'`, or see docs/install.md"
        )
        super().__init__(f"{message}. {detail}" if detail else message)


class RuleServiceMismatch(SetupError):
    """The driver's jar and the rule service (``spark.icecompat.python``'s icecompat_writer) speak
    different versions of their request protocol: two builds of the package are mixed. Refused at
    the handshake that opens every rule service process, before any write is judged."""


class SessionConfigError(IcecompatError):
    """The SparkSession cannot carry the plugin as configured (static confs already fixed, ...)."""


class SparkConnectNotSupported(SessionConfigError):
    """The session is a Spark Connect client; the plugin needs the classic, in-process JVM."""


class TableExistsError(IcecompatError):
    """The write asked for a new table (mode errorifexists / create) and one is already there."""


class TableNotFoundError(IcecompatError):
    """The write needs an existing table (append/replace through the v2 writer) and there is none."""


class TableReadError(IcecompatError):
    """A table's log or files could not be read well enough to decide anything."""


class ConcurrentWriteError(IcecompatError):
    """Another writer changed the table in a way this write cannot be re-planned against."""


class JvmError(IcecompatError):
    """The JVM side failed for a reason none of the more specific types describe.

    ``java_class`` keeps the original Java exception class name for diagnosis.
    """

    def __init__(self, message: str, java_class: str = "") -> None:
        super().__init__(message)
        self.java_class = java_class


class CompatViolation(IcecompatError):
    """A write or a table breaks one or more rules; ``violations`` lists every one of them."""

    def __init__(self, violations: Iterable[Violation], context: str = "") -> None:
        self.violations: Sequence[Violation] = tuple(sorted(violations))
        self.context = context
        lines = [v.render() for v in self.violations]
        head = f"{len(lines)} Iceberg-compatibility violation(s)"
        if context:
            head += f" {context}"
        super().__init__(head + ":\n" + "\n".join(f"  - {line}" for line in lines))

    @property
    def rules(self) -> list[str]:
        """The distinct rule ids involved, sorted."""
        return sorted({v.rule for v in self.violations})


class UpgradeRefused(CompatViolation):
    """``upgrade`` will not touch the table: the rewrite it needs would break the table's readers, or
    it cannot see all of the table. Each violation has an ``UPGRADE-*`` rule (``docs/upgrade.md``)."""


class IcebergSyncWarning(UserWarning):
    """A Delta commit stands but its Iceberg sync (metadata or catalog) failed; the next sync catches up."""
