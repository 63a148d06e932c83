"""The reconciliation state of a replay: file actions gathered in log order for one vectorized
reconciliation at the end, every other action reconciled as it comes (PROTOCOL.md "Action
Reconciliation")."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from icecompat_writer.schema import JsonObject

from .actions import Protocol
from .columnar import FILE_ACTIONS_SCHEMA, line_dv_key, line_rows, reconcile
from .findings import FindingCode, LogFinding

__all__ = ["ReplayState"]


class _FileActions:
    """File actions in log order: Arrow batches, and actions read as dicts turned into rows."""

    def __init__(self) -> None:
        self.batches: list[pa.RecordBatch] = []
        self.raw_adds: list[dict[str, Any]] = []
        self._kinds: list[int] = []
        self._paths: list[str] = []
        self._dv_keys: list[str] = []
        self._raws: list[int | None] = []

    def add(self, path: str, dv: JsonObject | None, action: dict[str, Any]) -> None:
        self._kinds.append(1)
        self._paths.append(path)
        self._dv_keys.append(line_dv_key(dv))
        self._raws.append(len(self.raw_adds))
        self.raw_adds.append(action)

    def remove(self, path: str, dv: JsonObject | None) -> None:
        self._kinds.append(0)
        self._paths.append(path)
        self._dv_keys.append(line_dv_key(dv))
        self._raws.append(None)

    def extend(self, batch: pa.RecordBatch) -> None:
        self._flush()
        if batch.num_rows:
            self.batches.append(batch)

    def _flush(self) -> None:
        if self._kinds:
            self.batches.append(line_rows(self._kinds, self._paths, self._dv_keys, self._raws))
            self._kinds, self._paths, self._dv_keys, self._raws = [], [], [], []

    def live(self) -> pa.Table:
        """The reconciled live rows."""
        self._flush()
        return reconcile(pa.Table.from_batches(self.batches, schema=FILE_ACTIONS_SCHEMA))


class ReplayState:
    """The reconciliation state while replaying: non-file actions in the log's own JSON shapes."""

    def __init__(self) -> None:
        self.protocol: dict[str, Any] | None = None
        self.metadata: dict[str, Any] | None = None
        self.files = _FileActions()
        self.txns: dict[str, int] = {}
        self.domains: dict[str, str] = {}
        self.commit_info: dict[str, Any] | None = None
        self.stats_dropped = False  # the checkpoint read kept no statistics at all (see ParquetActions)

    def apply(
        self,
        actions: list[tuple[str, dict[str, Any]]],
        display: str,
        findings: list[LogFinding],
        *,
        capture_commit_info: bool = False,
    ) -> None:
        files = self.files
        for name, a in actions:
            if name == "add" or name == "remove":
                path = a.get("path")
                dv = a.get("deletionVector")
                if not isinstance(path, str) or not path or not (dv is None or isinstance(dv, dict)):
                    findings.append(
                        LogFinding(
                            FindingCode.INVALID_ACTION,
                            f"{name} action without a usable path/deletionVector was skipped",
                            display,
                        )
                    )
                    continue
                if name == "add":
                    files.add(path, dv, a)
                else:
                    files.remove(path, dv)
            elif name == "metaData":
                self.metadata = a
            elif name == "protocol":
                try:
                    Protocol.from_json(a)  # what the snapshot will build: refuse damage here, per line
                except ValueError as e:
                    findings.append(
                        LogFinding(FindingCode.INVALID_ACTION, f"protocol action was skipped: {e}", display)
                    )
                    continue
                self.protocol = a
            elif name == "txn":
                app_id, version = a.get("appId"), a.get("version")
                if isinstance(app_id, str) and isinstance(version, int) and not isinstance(version, bool):
                    self.txns[app_id] = version
                else:
                    findings.append(
                        LogFinding(FindingCode.INVALID_ACTION, "txn action without appId/version", display)
                    )
            elif name == "domainMetadata":
                domain = a.get("domain")
                if not isinstance(domain, str):
                    findings.append(
                        LogFinding(
                            FindingCode.INVALID_ACTION, "domainMetadata action without domain", display
                        )
                    )
                elif a.get("removed"):
                    self.domains.pop(domain, None)
                else:
                    configuration = a.get("configuration")
                    self.domains[domain] = configuration if isinstance(configuration, str) else ""
            elif name == "commitInfo":
                if capture_commit_info:
                    self.commit_info = a
            # cdc, checkpointMetadata, sidecar and unknown actions do not take part in replay.

    def add_checkpoint_files(self, adds: list[pa.RecordBatch | list[dict[str, Any]]]) -> None:
        """Adds of a checkpoint (rows, or dicts): already reconciled, so each simply takes its key."""
        files = self.files
        for part in adds:
            if isinstance(part, pa.RecordBatch):
                files.extend(part)
                continue
            for a in part:
                path = a.get("path")
                if isinstance(path, str):
                    files.add(path, a.get("deletionVector"), a)
