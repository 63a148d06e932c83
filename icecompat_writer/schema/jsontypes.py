"""The JSON shapes the package reads and writes, typed as far as JSON lets them be.

A JSON object parsed from the Delta log or Iceberg metadata is a ``JsonObject``: its values are
``object`` until the reader narrows them (``isinstance``), because a damaged log can hold anything
anywhere. What the package builds to serialise is a ``JsonDict``. ``json.loads`` answers are the one
place a value of no known type enters; they are narrowed (or checked by a ``from_json``) right there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

__all__ = ["JsonDict", "JsonObject", "JsonScalar"]

JsonScalar: TypeAlias = "str | int | float | bool | None"
JsonObject: TypeAlias = Mapping[str, object]
JsonDict: TypeAlias = dict[str, object]
