"""Reading a Delta table's log without Spark: actions, log replay, snapshots."""

from .actions import Metadata, Protocol, TableState, TableStateLike
from .files import AddFile, DeletionVectorDescriptor
from .findings import FindingCode, LogFinding
from .live_columns import LiveFiles
from .paths import resolve_data_path
from .snapshot import Snapshot, list_versions, read_commit, read_snapshot

__all__ = [
    "AddFile",
    "DeletionVectorDescriptor",
    "FindingCode",
    "LiveFiles",
    "LogFinding",
    "Metadata",
    "Protocol",
    "Snapshot",
    "TableState",
    "TableStateLike",
    "list_versions",
    "read_commit",
    "read_snapshot",
    "resolve_data_path",
]
