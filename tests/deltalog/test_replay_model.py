"""Generated logs reconcile like a plain in-memory model, whatever files the history is stored in.

The model applies each commit's actions in order to dicts. The log under test stores the same history
as JSON commits plus, optionally, a checkpoint of the model's state at some version (classic,
multi-part, or V2 with sidecars, JSON or Parquet) and a compaction file whose commits may be deleted.
Any difference in live files, txns, domains, protocol or metadata is a reader bug.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.deltalog.files import dv_unique_id
from icecompat_writer.storage import io_for

from . import logbuilder as lb

PATHS = ["a.parquet", "b.parquet", "p=x%20y/c.parquet", "p=%C3%BC/d.parquet"]
DVS: list[dict[str, Any] | None] = [
    None,
    lb.dv("dvAAAAAAAAAAAAAAAAAA", 1),
    lb.dv("dvBBBBBBBBBBBBBBBBBB", None),
]
APPS = ["app-1", "app-2"]
DOMAINS = ["delta.rowTracking", "user.domain"]


def _file_action() -> st.SearchStrategy[dict[str, Any]]:
    add = st.builds(
        lambda p, d, n: lb.add(p, deletion_vector=d, num_records=n),
        st.sampled_from(PATHS),
        st.sampled_from(DVS),
        st.integers(0, 1000),
    )
    remove = st.builds(
        lambda p, d: lb.remove(p, deletion_vector=d), st.sampled_from(PATHS), st.sampled_from(DVS)
    )
    return st.one_of(add, add, remove)


ACTION = st.one_of(
    _file_action(),
    _file_action(),
    _file_action(),
    st.builds(lb.txn, st.sampled_from(APPS), st.integers(0, 50)),
    st.builds(lb.domain, st.sampled_from(DOMAINS), st.sampled_from(["{}", '{"x":1}']), st.booleans()),
    st.builds(lambda v: lb.metadata(configuration={"v": str(v)}), st.integers(0, 3)),
    st.builds(lambda w: lb.protocol(1, w), st.integers(2, 4)),
)


@dataclass
class Model:
    protocol: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    files: dict[tuple[str, str | None], dict[str, Any]] = field(default_factory=dict)
    tombstones: dict[tuple[str, str | None], dict[str, Any]] = field(default_factory=dict)
    txns: dict[str, int] = field(default_factory=dict)
    domains: dict[str, str] = field(default_factory=dict)

    def apply(self, action: dict[str, Any]) -> None:
        ((name, value),) = action.items()
        if name in ("add", "remove"):
            key = (value["path"], dv_unique_id(value.get("deletionVector")))
            if name == "add":
                self.files[key] = value
                self.tombstones.pop(key, None)
            else:
                self.files.pop(key, None)
                self.tombstones[key] = value
        elif name == "txn":
            self.txns[value["appId"]] = value["version"]
        elif name == "domainMetadata":
            if value["removed"]:
                self.domains.pop(value["domain"], None)
            else:
                self.domains[value["domain"]] = value["configuration"]
        elif name == "metaData":
            self.metadata = value
        elif name == "protocol":
            self.protocol = value

    def checkpoint_actions(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        non_file = [{"protocol": self.protocol}, {"metaData": self.metadata}]
        non_file += [lb.txn(app, v) for app, v in self.txns.items()]
        non_file += [lb.domain(d, c) for d, c in self.domains.items()]
        file_actions = [{"add": a} for a in self.files.values()]
        file_actions += [{"remove": r} for r in self.tombstones.values()]
        return non_file, file_actions


def reconciled(commits: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The net actions of consecutive commits (what a compaction file holds)."""
    last: dict[Any, dict[str, Any]] = {}
    for actions in commits:
        for action in actions:
            ((name, value),) = action.items()
            if name in ("add", "remove"):
                key: Any = ("file", value["path"], dv_unique_id(value.get("deletionVector")))
            elif name == "txn":
                key = ("txn", value["appId"])
            elif name == "domainMetadata":
                key = ("domain", value["domain"])
            else:
                key = (name,)
            last.pop(key, None)  # keep the newest action last, as the order within the file matters
            last[key] = action
    return list(last.values())


@st.composite
def histories(draw: st.DrawFn) -> dict[str, Any]:
    commits = [[lb.protocol(), lb.metadata(), *draw(st.lists(ACTION, max_size=4))]]
    commits += draw(st.lists(st.lists(ACTION, min_size=1, max_size=6), min_size=1, max_size=7))
    last = len(commits) - 1
    checkpoint = draw(st.none() | st.integers(0, last))
    kind = draw(st.sampled_from(["classic", "multipart", "v2-json", "v2-parquet", "v2-sidecars"]))
    compaction = None
    if last >= 2 and draw(st.booleans()):
        x = draw(st.integers(1, last - 1))
        y = draw(st.integers(x + 1, last))
        compaction = (x, y)
    travel = draw(st.integers(0, last))
    return {
        "commits": commits,
        "checkpoint": checkpoint,
        "kind": kind,
        "compaction": compaction,
        "travel": travel,
    }


def write_history(root: Path, h: dict[str, Any]) -> list[Model]:
    """Write the history; return the model state after each version."""
    b = lb.LogBuilder(root)
    models: list[Model] = []
    model = Model()
    for version, actions in enumerate(h["commits"]):
        b.commit(version, [lb.commit_info(), *actions])
        for action in actions:
            model.apply(action)
        snapshot = Model(
            dict(model.protocol),
            dict(model.metadata),
            dict(model.files),
            dict(model.tombstones),
            dict(model.txns),
            dict(model.domains),
        )
        models.append(snapshot)
    cp = h["checkpoint"]
    if cp is not None:
        non_file, file_actions = models[cp].checkpoint_actions()
        kind = h["kind"]
        if kind == "classic":
            b.classic_checkpoint(cp, non_file + file_actions)
        elif kind == "multipart":
            everything = non_file + file_actions
            third = max(1, len(everything) // 3)
            b.multipart_checkpoint(
                cp, [everything[:third], everything[third : 2 * third], everything[2 * third :]]
            )
        elif kind == "v2-json":
            b.v2_checkpoint(cp, non_file, file_actions, file_format="json")
        elif kind == "v2-parquet":
            b.v2_checkpoint(cp, non_file, file_actions, file_format="parquet")
        else:
            b.v2_checkpoint(cp, non_file, file_actions, file_format="parquet", sidecars=2)
    if h["compaction"] is not None:
        x, y = h["compaction"]
        b.compaction(x, y, reconciled(h["commits"][x : y + 1]))
    return models


def assert_matches(snap: Any, model: Model) -> None:
    got = {(a.path, a.dv_unique_id): a.num_records for a in snap.add_files}
    want = {key: _num_records(a) for key, a in model.files.items()}
    assert got == want
    assert dict(snap.txns) == model.txns
    assert dict(snap.domain_metadata) == model.domains
    assert snap.protocol.to_json() == model.protocol
    assert dict(snap.metadata.configuration) == model.metadata["configuration"]


def _num_records(add: dict[str, Any]) -> int | None:
    return json.loads(add["stats"])["numRecords"] if "stats" in add else None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_replay_matches_model(h: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory(prefix="replay_model_") as tmp:
        root = Path(tmp)
        models = write_history(root, h)
        last = len(h["commits"]) - 1
        snap = read_snapshot(root, io=io_for(root))
        assert snap.version == last
        assert snap.findings == ()
        assert_matches(snap, models[last])
        travelled = read_snapshot(root, version=h["travel"], io=io_for(root))
        assert_matches(travelled, models[h["travel"]])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_compaction_stands_in_for_deleted_commits(h: dict[str, Any]) -> None:
    assume(len(h["commits"]) > 2)
    if h["compaction"] is None:
        h["compaction"] = (1, len(h["commits"]) - 1)
    x, y = h["compaction"]
    cp = h["checkpoint"]
    if cp is not None and cp >= x:
        h["checkpoint"] = None  # a checkpoint inside the range would need the deleted commits
    with tempfile.TemporaryDirectory(prefix="replay_compaction_") as tmp:
        root = Path(tmp)
        models = write_history(root, h)
        for v in range(x, y + 1):
            (root / "_delta_log" / f"{v:020d}.json").unlink()
        last = len(h["commits"]) - 1
        snap = read_snapshot(root, io=io_for(root))
        assert snap.findings == ()
        assert_matches(snap, models[last])
