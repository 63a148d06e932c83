"""What a check is evaluated on: one profile, the new protocol and metadata, the previous state, files.

Derived facts (the indexed schema, the supported feature sets, the parsed configuration) are computed
at most once per evaluation and shared by every rule, which is why checks take this object instead of
raw actions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property

from icecompat_writer.facts import DataFileFacts
from icecompat_writer.model import Metadata, Protocol, TableStateLike
from icecompat_writer.rules import features as feat
from icecompat_writer.rules.schema import SchemaIndex, index_schema_string
from icecompat_writer.schema import CM_MAX_COLUMN_ID, CM_MODE

__all__ = ["CM_MODE_KEY", "MAX_COLUMN_ID_KEY", "EvalContext", "column_mapping_mode"]

CM_MODE_KEY = CM_MODE
MAX_COLUMN_ID_KEY = CM_MAX_COLUMN_ID


def column_mapping_mode(configuration: Mapping[str, str]) -> str:
    """The table's column mapping mode, lower-cased; ``none`` when the property is absent."""
    return str(configuration.get(CM_MODE_KEY, "none")).strip().lower() or "none"


class EvalContext:
    """Inputs of one ``validate`` call plus lazily derived, shared facts."""

    def __init__(
        self,
        profile: str,
        profile_properties: Mapping[str, str],
        metadata: Metadata,
        protocol: Protocol,
        previous: TableStateLike | None = None,
        files: Sequence[DataFileFacts] = (),
        schema: SchemaIndex | None = None,
    ) -> None:
        self.profile = profile
        self.profile_properties = profile_properties
        self.metadata = metadata
        self.protocol = protocol
        self.previous = previous
        self.files = files
        self._schema = schema

    @cached_property
    def schema(self) -> SchemaIndex:
        if self._schema is not None:
            return self._schema
        return index_schema_string(self.metadata.schema_string)

    @cached_property
    def previous_schema(self) -> SchemaIndex | None:
        if self.previous is None:
            return None
        return index_schema_string(self.previous.metadata.schema_string)

    @property
    def config(self) -> Mapping[str, str]:
        return self.metadata.configuration

    @cached_property
    def writer_features(self) -> frozenset[str]:
        return feat.writer_features(self.protocol)

    @cached_property
    def reader_features(self) -> frozenset[str]:
        return feat.reader_features(self.protocol)

    @cached_property
    def supported_features(self) -> frozenset[str]:
        return self.writer_features | self.reader_features

    def is_true(self, key: str) -> bool:
        """Whether a boolean table property is set to true (Delta parses booleans case-insensitively)."""
        return str(self.config.get(key, "")).strip().lower() == "true"
