"""The request/response protocol between the guard's JVM side and the rule service.

Unit tests of the message types (no JVM), the Java counterpart's agreement with them (read from its
source), and one Spark test: a rule service of another protocol version is refused at the handshake
that opens it, before it judges a write, and the write leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
import stat
import sys
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from icecompat_writer.errors import RuleServiceMismatch
from icecompat_writer.jvm import protocol, service
from icecompat_writer.jvm.bridge import translate_exception
from tests.support import session_conf

_JAVA = Path(__file__).resolve().parents[2] / "jvm_shim/src/main/java/io/icecompat/shim/guard"


def _answers(*requests: Any) -> list[dict[str, Any]]:
    out = io.StringIO()
    service.main(io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_hello_of_the_same_version_is_answered_with_it() -> None:
    [answer] = _answers({"op": "hello", "protocol": protocol.PROTOCOL_VERSION})
    assert answer == {"ok": True, "protocol": protocol.PROTOCOL_VERSION}


def test_hello_of_another_version_is_refused_naming_both() -> None:
    [answer] = _answers({"op": "hello", "protocol": protocol.PROTOCOL_VERSION + 1})
    assert set(answer) == {"error", "protocol"}
    assert answer["protocol"] == protocol.PROTOCOL_VERSION
    assert f"protocol {protocol.PROTOCOL_VERSION + 1}" in answer["error"]
    assert f"speaks {protocol.PROTOCOL_VERSION}" in answer["error"]


def _commit(**keys: Any) -> dict[str, Any]:
    return {"op": "check_commit", "table": "/t", "version": 1, "actions": [], **keys}


@pytest.mark.parametrize(
    ("request_", "named"),
    [
        (_commit(colour="red"), "unknown key 'colour'"),
        ({"op": "check_commit", "table": "/t", "actions": []}, "missing key 'version'"),
        (_commit(version="1"), "key 'version' must be an integer"),
        (_commit(version=True), "key 'version' must be an integer"),
        (_commit(actions=[1]), "key 'actions' must be a list of strings"),
        (_commit(footers={"a": {"f": "x"}}), "key 'footers'"),
        ({"op": "plan_metadata", "profile": "v3"}, "missing key 'new_metadata'"),
        ({"op": "plan_metadata", "new_metadata": {}, "creating": "yes"}, "key 'creating' must be true"),
        ({"op": "sync", "table": "/t", "version": 1, "configuration": {"a": 1}}, "'configuration'"),
        ({"op": "hello"}, "missing key 'protocol'"),
        ({"op": "ping", "hadoop": []}, "key 'hadoop' must be an object"),
        ({"op": "nope"}, "unknown operation 'nope'"),
        ([1, 2], "must be a JSON object"),
    ],
)
def test_a_malformed_request_is_refused_naming_the_key(request_: Any, named: str) -> None:
    answer = service.handle(request_)
    assert set(answer) == {"error"}
    assert named in answer["error"], answer["error"]


def test_a_needed_key_of_an_existing_table_is_named() -> None:
    answer = service.handle({"op": "plan_metadata", "table_exists": True, "new_metadata": {}})
    assert answer == {
        "error": "ProtocolError: rule service request 'plan_metadata': missing key 'old_protocol'"
    }


def test_null_counts_as_absent_and_values_are_typed() -> None:
    req = protocol.parse_request(
        {
            "op": "check_commit",
            "table": "/t",
            "version": 2,
            "actions": ["{}"],
            "state": None,
            "hadoop": {"k": "v"},
        }
    )
    assert req == protocol.CheckCommit(table="/t", version=2, actions=("{}",), hadoop={"k": "v"})
    assert req.state is None and req.footers is None and req.profile == ""


def test_a_sync_carries_the_tables_catalog_name_when_the_driver_knows_it() -> None:
    """Protocol 2: the sync request's optional ``identifier`` (the Spark catalog's ``db.tbl``)."""
    named = protocol.parse_request({"op": "sync", "table": "/t", "version": 3, "identifier": "db.tbl"})
    assert named == protocol.Sync(table="/t", version=3, identifier="db.tbl")
    assert protocol.parse_request({"op": "sync", "table": "/t", "version": 3}).identifier is None
    answer = service.handle({"op": "sync", "table": "/t", "version": 3, "identifier": 7})
    assert answer == {"error": "rule service request 'sync': key 'identifier' must be a string, got 7"}


def test_an_answer_key_outside_the_protocol_is_refused() -> None:
    with pytest.raises(protocol.ProtocolError, match="unknown key 'colour'"):
        protocol.serialize_answer({"ok": True, "colour": "red"})  # type: ignore[typeddict-unknown-key]


def test_each_operation_answers_only_its_own_keys() -> None:
    """An answer key of one operation is refused in another's answer; an error fits every operation."""
    assert set(protocol.ANSWERS) == {"hello", "ping", "plan_metadata", "check_commit", "sync"}
    with pytest.raises(protocol.ProtocolError, match="unknown key 'metadata'"):
        protocol.serialize_answer({"ok": True, "metadata": None}, "sync")
    with pytest.raises(protocol.ProtocolError, match="unknown key 'sync'"):
        protocol.serialize_answer({"ok": True, "sync": {}}, "plan_metadata")
    for op in protocol.ANSWERS:
        assert protocol.serialize_answer({"error": "boom"}, op) == '{"error":"boom"}'
    assert set(protocol.Refusal.__annotations__) <= protocol.answer_keys("plan_metadata")
    assert set(protocol.Refusal.__annotations__) <= protocol.answer_keys("check_commit")
    answers = _answers(
        {"op": "ping"},
        {"op": "plan_metadata", "new_metadata": {"schemaString": "{}", "configuration": {}}},
    )
    assert set(answers[0]) <= protocol.answer_keys("ping") and answers[0]["ok"] is True
    assert set(answers[1]) <= protocol.answer_keys("plan_metadata")


def _java_fields() -> dict[str, set[str]]:
    """Per operation, the keys ServiceMessages.java writes, plus the keys other classes attach."""
    source = (_JAVA / "ServiceMessages.java").read_text()
    ops = dict(re.findall(r'static final String (\w+) = "(\w+)";', source))
    out: dict[str, set[str]] = {}
    for builder in re.finditer(r"static ObjectNode \w+\([^)]*\) \{(.*?)\n  \}", source, re.S):
        body = builder.group(1)
        made = re.search(r"\brequest\(([A-Z_]+)\)", body)
        if made is None:
            continue  # the private helper every builder calls
        op = ops[made.group(1)]
        out[op] = set(re.findall(r'req\.(?:put|set|putArray)\("(\w+)"', body))
    return out


def test_the_java_messages_are_the_python_ones() -> None:
    source = (_JAVA / "ServiceMessages.java").read_text()
    assert f"PROTOCOL_VERSION = {protocol.PROTOCOL_VERSION};" in source
    java = _java_fields()
    python = {
        cls.op: {f.name for f in dataclasses.fields(cls)}
        for cls in (protocol.Hello, protocol.Ping, protocol.PlanMetadata, protocol.CheckCommit, protocol.Sync)
    }
    assert set(java) == set(python)
    for op, keys in java.items():
        assert keys <= python[op], (op, keys - python[op])
    # the keys other classes attach: each a field of the requests they are attached to
    attached = dict(
        re.findall(r'static final String (HADOOP|STATE|FOOTERS|COMMAND_PROPERTIES) = "(\w+)";', source)
    )
    assert attached["HADOOP"] in {f.name for f in dataclasses.fields(protocol.Ping)}
    for key in ("STATE", "FOOTERS", "COMMAND_PROPERTIES"):
        assert attached[key] in python["check_commit"]
    assert attached["COMMAND_PROPERTIES"] in python["plan_metadata"]
    for name in ("Guard", "CommitFacts", "CommandIntent", "StorageSettings", "RuleService"):
        text = (_JAVA / f"{name}.java").read_text()
        assert not re.search(r'req\.(put|set|putObject|putArray|putNull)\("', text), name


def _json_type(hint: Any) -> str:
    """A Python answer field's type as ServiceAnswers.java names JSON types."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if len(args) < len(typing.get_args(hint)):  # X | None
        (inner,) = args
        return _json_type(inner) + "|null"
    origin = typing.get_origin(hint) or hint
    if origin is list:
        (element,) = typing.get_args(hint)
        return "strings" if element is str else "objects"
    names = {bool: "boolean", int: "integer", str: "string", dict: "object", Mapping: "object"}
    return names[origin]


def _java_answers() -> dict[str, dict[str, str]]:
    """Per operation (and ``error``), the answer keys and JSON types ServiceAnswers.java declares."""
    source = (_JAVA / "ServiceAnswers.java").read_text()
    names = dict(re.findall(r'static final String (\w+) = "(\w+)";', source))
    out: dict[str, dict[str, str]] = {}
    for table in re.finditer(r"static final String\[\]\[\] (\w+)_ANSWER = \{(.*?)\};", source, re.S):
        pairs = re.findall(r'\{(\w+), "([^"]+)"\}', table.group(2))
        out[table.group(1).lower()] = {names[key]: kind for key, kind in pairs}
    return out


def test_the_java_answer_keys_are_the_python_ones_both_ways() -> None:
    """Each operation's answer: the keys and JSON types the JVM declares are exactly Python's answer
    type of that operation, and the JVM reads answers by no other name."""
    java = _java_answers()
    python = {
        op: {key: _json_type(hint) for key, hint in typing.get_type_hints(cls).items()}
        for op, cls in {**protocol.ANSWERS, "error": protocol.ErrorAnswer}.items()
    }
    assert set(java) == set(python)
    for op in python:
        assert java[op] == python[op], op
    readers = ("Guard", "CommitFacts", "CommandIntent", "StorageSettings", "RuleService", "ServiceMessages")
    for name in readers:
        text = (_JAVA / f"{name}.java").read_text()
        bare = re.findall(r'\b(?:res|ping|answer|node|checked|theirs)\.(?:path|get|has)\("(\w+)"\)', text)
        assert not bare, (name, bare)


@pytest.fixture
def service_of_another_version(guarded: Any, tmp_path: Path) -> Iterator[Any]:
    """The guard's rule service started under a Python whose icecompat_writer speaks the next
    protocol version: a driver jar and a Python package from different builds."""
    wrapper = tmp_path / "python-next-protocol"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'exec "{sys.executable}" -c "import sys; from icecompat_writer.jvm import protocol, service; '
        f'protocol.PROTOCOL_VERSION = {protocol.PROTOCOL_VERSION + 1}; sys.exit(service.main())"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    with session_conf(guarded, {"spark.icecompat.python": str(wrapper)}):
        yield guarded


@pytest.mark.spark
def test_a_rule_service_of_another_protocol_version_is_refused_at_its_start(
    service_of_another_version: Any, tmp_path: Path
) -> None:
    spark = service_of_another_version
    table = tmp_path / "t"
    with pytest.raises(Exception) as info:
        spark.range(3).write.format("delta").option("delta.enableIcebergCompatV3", "true").save(str(table))
    err = translate_exception(info.value)
    assert type(err) is RuleServiceMismatch, f"{type(info.value).__name__}: {info.value}"
    assert f"speaks protocol {protocol.PROTOCOL_VERSION + 1}" in str(err)
    assert f"jar speaks protocol {protocol.PROTOCOL_VERSION}" in str(err)
    assert "spark.icecompat.python" in str(err)
    assert not table.exists() or not any(table.rglob("*")), sorted(table.rglob("*"))
