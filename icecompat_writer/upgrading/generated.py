"""Generated columns an upgrade cannot rewrite: their expression depends on the time of writing or is not
deterministic (rule ``UPGRADE-VOLATILE-GENERATED-COLUMN``, see ``docs/upgrade.md``).

delta-spark re-checks every row it writes into a generated column against the generation expression,
the rows an upgrade rewrites included, and has no way to skip that check or to copy the stored value
instead: a row written on another day fails ``CAST(now() AS DATE)`` after its file was written. For
``current_timestamp()``, ``current_date()``, ``rand()``, ``uuid()`` and the like it refuses the
expression in any commit that changes the metadata. Tables with such columns come from other writers
(delta-spark refuses to create one), so the expression is read from the log's text and judged here,
before any file is written.
"""

from __future__ import annotations

import re

from icecompat_writer.errors import Violation
from icecompat_writer.model import Metadata, Protocol
from icecompat_writer.rules.catalog import layer_violation
from icecompat_writer.schema import parse_schema

__all__ = ["GENERATION_EXPRESSION", "volatile_function", "volatile_generated_columns"]

GENERATION_EXPRESSION = "delta.generationExpression"
_RULE = "UPGRADE-VOLATILE-GENERATED-COLUMN"
_CLAUSE = "docs/upgrade.md#generated-columns-that-depend-on-the-time-of-writing"

# Spark SQL functions whose value depends on when the row is written ...
_TIME = frozenset(
    {
        "now",
        "current_timestamp",
        "current_date",
        "curdate",
        "current_time",
        "localtimestamp",
        "current_timezone",
        "unix_timestamp",  # only without arguments (the time of the call); with one it is a conversion
    }
)
# ... the ones Spark SQL also accepts without parentheses ...
_BARE_TIME = frozenset({"current_timestamp", "current_date", "current_time", "localtimestamp"})
# ... and the ones that are not deterministic (Spark's Nondeterministic expressions).
_RANDOM = frozenset(
    {
        "rand",
        "randn",
        "random",
        "randstr",
        "uniform",
        "uuid",
        "shuffle",
        "monotonically_increasing_id",
        "spark_partition_id",
        "input_file_name",
        "input_file_block_start",
        "input_file_block_length",
    }
)

# A quoted string or a backquoted identifier (skipped whole), or a name and whether a call follows.
_TOKEN = re.compile(
    r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`|(?<![\w.])([A-Za-z_]\w*)(\s*\(\s*\)?)?"
)


def volatile_function(expression: str, columns: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """The first function of ``expression`` (Spark SQL) whose value depends on the time of writing
    (``("now()", "time")``) or is not deterministic (``("rand()", "random")``); None when there is none.

    Names inside string literals and backquotes are not calls; a bare name (``current_date``) counts
    unless it is one of the table's ``columns`` (Spark resolves a column of that name first).
    """
    for m in _TOKEN.finditer(expression):
        name = m.group(1)
        if name is None:
            continue
        low = name.lower()
        call = m.group(2)
        if call is None:
            if low in _BARE_TIME and low not in columns:
                return low, "time"
            continue
        if low in _RANDOM:
            return f"{low}()", "random"
        if low in _TIME:
            empty = call.rstrip().endswith(")")
            if low == "unix_timestamp" and not empty:
                continue
            return f"{low}()", "time"
    return None


def enforces_generated_columns(protocol: Protocol) -> bool:
    """Whether delta-spark enforces generation expressions under ``protocol`` (writer version 4 to 6,
    or the ``generatedColumns`` writer feature); otherwise it ignores them, and so does this check."""
    if protocol.writer_features is not None:
        return "generatedColumns" in protocol.writer_features
    return protocol.min_writer_version >= 4


def volatile_generated_columns(profile: str, metadata: Metadata, protocol: Protocol) -> list[Violation]:
    """A violation per generated column whose expression depends on the time of writing or is not
    deterministic, when ``protocol`` (the one the upgrade commits) makes delta-spark enforce it.

    Only top-level columns: delta-spark generates (and checks) top-level columns only.
    """
    if not enforces_generated_columns(protocol):
        return []
    fields = parse_schema(metadata.schema).top
    columns = frozenset(f.name.lower() for f in fields)
    found = []
    for f in fields:
        expression = f.metadata.get(GENERATION_EXPRESSION)
        if not isinstance(expression, str):
            continue
        volatile = volatile_function(expression, columns)
        if volatile is None:
            continue
        function, kind = volatile
        found.append(
            layer_violation(
                profile,
                _RULE,
                f.path,
                variant="" if kind == "time" else "random",
                observed=expression,
                clause=_CLAUSE,
                function=function,
            )
        )
    return found
