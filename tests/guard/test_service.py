"""The rule service on its own (no JVM): the answers the guard's JVM side acts on."""

from __future__ import annotations

import base64
import io
import json
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icecompat_writer.deltalog.actions import Metadata, Protocol, TableState
from icecompat_writer.jvm import service
from icecompat_writer.planning import plan
from icecompat_writer.rules.catalog import RULES_BY_ID
from icecompat_writer.rules.verdict import GuardedCommit, decide

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {
            "name": "s",
            "type": {
                "type": "struct",
                "fields": [{"name": "b", "type": "byte", "nullable": True, "metadata": {}}],
            },
            "nullable": True,
            "metadata": {},
        },
    ],
}


def _meta(schema: dict, conf: dict[str, str]) -> dict:
    return Metadata(json.dumps(schema), (), conf, id="t").to_json()


def test_ping_and_unknown_operation() -> None:
    out = io.StringIO()
    service.main(io.StringIO('{"op": "ping"}\n{"op": "nope"}\nnot json\n'), out)
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert answers[0]["ok"] is True and answers[0]["version"]
    assert "unknown operation" in answers[1]["error"]
    assert "not JSON" in answers[2]["error"]


def test_no_profile_means_no_change() -> None:
    req = {
        "op": "plan_metadata",
        "profile": "",
        "table_exists": False,
        "creating": True,
        "new_metadata": _meta(SCHEMA, {}),
    }
    assert service.handle(req) == {"ok": True, "profile": None, "metadata": None}


@pytest.mark.parametrize("profile", ["writer-v1", "writer-v3"])
def test_refusal_names_rule_and_nested_path(profile: str) -> None:
    req = {
        "op": "plan_metadata",
        "profile": profile,
        "table_exists": False,
        "creating": True,
        "table": "file:/t",
        "new_metadata": _meta(SCHEMA, {}),
    }
    res = service.handle(req)
    assert res["ok"] is False
    assert {(v["rule"], v["path"]) for v in res["violations"]} == {("IWC1-NO-BYTE-SHORT", "s.b")}
    assert "IWC1-NO-BYTE-SHORT" in res["report"] and "s.b" in res["report"]


@pytest.mark.parametrize("profile", ["v3", "writer-v1", "writer-v3"])
def test_planned_metadata_is_the_planners_plus_feature_requests(profile: str) -> None:
    schema = {"type": "struct", "fields": [SCHEMA["fields"][0]]}
    req = {
        "op": "plan_metadata",
        "profile": profile,
        "table_exists": False,
        "creating": True,
        "new_metadata": _meta(schema, {}),
    }
    res = service.handle(req)
    expected = plan(profile, Metadata.from_json(req["new_metadata"]))
    got = Metadata.from_json(res["metadata"])
    assert got.schema == expected.metadata.schema
    for feature in expected.protocol.writer_features or ():
        assert got.configuration[f"delta.feature.{feature}"] == "supported"
    for key, value in expected.metadata.configuration.items():
        assert got.configuration[key] == value


def test_replace_keeps_the_tables_mapping_mode() -> None:
    planned = plan("v3", Metadata.from_json(_meta({"type": "struct", "fields": [SCHEMA["fields"][0]]}, {})))
    old = planned.metadata
    assert old.configuration["delta.columnMapping.mode"] == "id"
    proposal = old.with_configuration({**old.configuration, "delta.columnMapping.mode": "name"})
    req = {
        "op": "plan_metadata",
        "profile": "",
        "table_exists": True,
        "creating": True,
        "old_protocol": planned.protocol.to_json(),
        "old_metadata": old.to_json(),
        "new_metadata": proposal.to_json(),
    }
    res = service.handle(req)
    assert res["ok"] is True
    assert res["metadata"]["configuration"]["delta.columnMapping.mode"] == "id"


def test_check_commit_without_profile_passes(tmp_path: Path) -> None:
    log = tmp_path / "_delta_log"
    log.mkdir()
    commit = [json.dumps({"protocol": Protocol(1, 2).to_json()}), json.dumps({"metaData": _meta(SCHEMA, {})})]
    assert service.handle(
        {"op": "check_commit", "table": str(tmp_path), "version": 0, "actions": commit}
    ) == {"ok": True, "profile": None}


def test_check_commit_refusal_lists_only_new_files_inside_the_root(tmp_path: Path) -> None:
    (tmp_path / "_delta_log").mkdir()
    commit = [
        json.dumps({"protocol": Protocol(1, 2).to_json()}),
        json.dumps({"metaData": _meta({"type": "struct", "fields": [SCHEMA["fields"][0]]}, {})}),
        json.dumps(
            {
                "add": {
                    "path": "a.parquet",
                    "partitionValues": {},
                    "size": 1,
                    "modificationTime": 0,
                    "dataChange": True,
                }
            }
        ),
        json.dumps(
            {
                "add": {
                    "path": "/elsewhere/b.parquet",
                    "partitionValues": {},
                    "size": 1,
                    "modificationTime": 0,
                    "dataChange": True,
                }
            }
        ),
    ]
    res = service.handle(
        {"op": "check_commit", "table": str(tmp_path), "version": 0, "profile": "v3", "actions": commit}
    )
    assert res["ok"] is False
    assert "ICV3-ENABLED" in {v["rule"] for v in res["violations"]}
    assert res["delete"] == [str(tmp_path / "a.parquet")]


def test_failures_become_error_answers(tmp_path: Path) -> None:
    res = service.handle(
        {"op": "check_commit", "table": str(tmp_path / "missing"), "version": 3, "actions": []}
    )
    assert "error" in res


_ICEBERG = {"delta.universalFormat.enabledFormats": "hudi, Iceberg", "icecompat.iceberg.identifier": "db.t"}


@pytest.mark.parametrize(
    ("conf", "opted_out", "wanted"),
    [
        ({}, False, None),
        ({"delta.universalFormat.enabledFormats": "hudi"}, False, None),
        (_ICEBERG, False, _ICEBERG),
        (_ICEBERG, True, None),  # a session that switched the guard off runs nothing of ours
    ],
)
def test_check_commit_asks_for_a_sync_only_for_tables_listing_iceberg(
    tmp_path: Path, conf: dict[str, str], opted_out: bool, wanted: dict[str, str] | None
) -> None:
    (tmp_path / "_delta_log").mkdir()
    commit = [
        json.dumps({"protocol": Protocol(1, 2).to_json()}),
        json.dumps({"metaData": _meta(SCHEMA, conf)}),
    ]
    res = service.handle(
        {
            "op": "check_commit",
            "table": str(tmp_path),
            "version": 0,
            "actions": commit,
            "opted_out": opted_out,
        }
    )
    assert res["ok"] is True
    assert res.get("sync") == wanted


def test_a_failed_sync_is_answered_as_a_warning_and_prints_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The commit already landed: a sync that fails is an answer naming table, version and cause, never an
    ``error`` (which the JVM would treat as a service failure) and never output on the answer channel."""
    out = io.StringIO()
    request = {"op": "sync", "table": str(tmp_path / "gone"), "version": 4, "configuration": _ICEBERG}
    assert service.main(io.StringIO(json.dumps(request) + "\n"), out) == 0
    answer = json.loads(out.getvalue())
    assert answer["ok"] is False and "error" not in answer
    assert answer["warning"].startswith(
        f"Delta version 4 of {tmp_path / 'gone'} committed; its Iceberg sync failed"
    )
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("profile", "field_type", "field_meta", "partitions", "rule"),
    [
        ("v3", "decimal(12,5)", {}, ("d",), "DELTA-SPARK-DECIMAL-PARTITION"),
        ("writer-v1", "decimal(38,18)", {}, ("d",), "DELTA-SPARK-DECIMAL-PARTITION"),
        ("v3", "string", {"__COLLATIONS": {"d": "spark.UTF8_LCASE"}}, (), "DELTA-SPARK-COLLATION"),
    ],
)
def test_the_guard_refuses_what_delta_spark_would(
    profile: str, field_type: str, field_meta: dict, partitions: tuple[str, ...], rule: str
) -> None:
    """A guarded CREATE that delta-spark 4.4 would fail on (a decimal partition column, a collated
    string) is answered with the rule and the column, before delta-spark writes anything."""
    schema = {
        "type": "struct",
        "fields": [
            SCHEMA["fields"][0],
            {"name": "d", "type": field_type, "nullable": True, "metadata": field_meta},
        ],
    }
    req = {
        "op": "plan_metadata",
        "profile": profile,
        "table_exists": False,
        "creating": True,
        "table": "file:/t",
        "new_metadata": Metadata(json.dumps(schema), partitions, {}, id="t").to_json(),
    }
    res = service.handle(req)
    assert res["ok"] is False
    assert {(v["rule"], v["path"]) for v in res["violations"]} == {(rule, "d")}


def test_footer_bytes_sent_by_the_driver_are_judged_like_a_local_footer() -> None:
    """An object-store table's commit: the JVM sends each new file's footer bytes, and a file without
    the Parquet field ids the column mapping needs is refused from them alone."""
    schema = {"type": "struct", "fields": [SCHEMA["fields"][0]]}
    planned = plan("writer-v3", Metadata(json.dumps(schema), (), {}))
    physical = planned.metadata.schema["fields"][0]["metadata"]["delta.columnMapping.physicalName"]
    sink = io.BytesIO()
    pq.write_table(pa.table({physical: [1, 2]}), sink)  # no field ids
    data = sink.getvalue()
    (length,) = struct.unpack("<I", data[-8:-4])
    add = {
        "path": "a.parquet",
        "partitionValues": {},
        "size": len(data),
        "modificationTime": 0,
        "dataChange": True,
        "baseRowId": 0,
        "defaultRowCommitVersion": 0,
        "stats": json.dumps({"numRecords": 2}),
    }
    commit = [
        json.dumps({"protocol": planned.protocol.to_json()}),
        json.dumps({"metaData": planned.metadata.to_json()}),
        json.dumps({"add": add}),
    ]
    res = service.handle(
        {
            "op": "check_commit",
            "table": "s3a://bucket/t",
            "version": 0,
            "profile": "writer-v3",
            "actions": commit,
            "footers": {"a.parquet": {"footer": base64.b64encode(data[-8 - length : -8]).decode()}},
        }
    )
    assert res["ok"] is False
    assert [(v["rule"], v["path"]) for v in res["violations"]] == [("ICV3-PARQUET-FIELD-IDS", "id")]
    assert "a.parquet" in res["violations"][0]["message"]
    assert res["delete"] == ["a.parquet"]


def test_the_row_tracking_feature_refusal_is_worded_by_the_catalog() -> None:
    features = frozenset({"columnMapping", "icebergCompatV2", "icebergWriterCompatV1"})
    before = Protocol(3, 7, frozenset({"columnMapping"}), features)
    after = Protocol(3, 7, frozenset({"columnMapping"}), features | {"rowTracking"})
    previous = TableState(before, Metadata(json.dumps(SCHEMA), (), {}))
    judged = decide(GuardedCommit("writer-v1", previous.metadata, after, previous))
    [v] = [v for v in judged.violations if v.rule == "IWC1-NO-ROW-TRACKING"]
    rule = RULES_BY_ID["IWC1-NO-ROW-TRACKING"]
    observed = "the commit adds the rowTracking table feature"
    assert (v.rule, v.profile, v.observed) == (rule.id, "writer-v1", observed)
    assert v.message == rule.message.format(observed=observed, key="delta.enableRowTracking")
    assert v.fix == rule.fix.format(key="delta.enableRowTracking")


@pytest.mark.parametrize("footer", [None, b"not a footer"], ids=["not-sent", "unreadable"])
def test_a_new_file_whose_footer_nobody_read_is_refused(footer: bytes | None) -> None:
    """An object-store commit whose new file came without a readable footer: the file rules cannot be
    held to it, so the commit is refused (and the file deleted) rather than passed unjudged."""
    schema = {"type": "struct", "fields": [SCHEMA["fields"][0]]}
    planned = plan("writer-v3", Metadata(json.dumps(schema), (), {}))
    add = {
        "path": "a.parquet",
        "partitionValues": {},
        "size": 100,
        "modificationTime": 0,
        "dataChange": True,
        "baseRowId": 0,
        "defaultRowCommitVersion": 0,
        "stats": json.dumps({"numRecords": 2}),
    }
    sent = {} if footer is None else {"a.parquet": {"footer": base64.b64encode(footer).decode()}}
    res = service.handle(
        {
            "op": "check_commit",
            "table": "s3a://bucket/t",
            "version": 0,
            "profile": "writer-v3",
            "actions": [
                json.dumps({"protocol": planned.protocol.to_json()}),
                json.dumps({"metaData": planned.metadata.to_json()}),
                json.dumps({"add": add}),
            ],
            "footers": sent,
        }
    )
    assert res["ok"] is False
    assert [v["rule"] for v in res["violations"]] == ["DELTA-WRITE-FOOTER-UNREAD"]
    assert "a.parquet" in res["violations"][0]["message"]
    assert res["delete"] == ["a.parquet"]
