"""The JVM's ``WriterProfile.of`` and Python's ``held_profile`` agree on every table state.

A session that switched the guard off starts no rule service, yet must refuse writes to tables that
declare a writer profile; the JVM derives that profile itself (``io.icecompat.shim.guard.WriterProfile``).
This test runs the Java method (a JVM without Spark, on the built shim jar and Jackson) and the rules'
``held_profile`` over the same table states, as the Delta log holds them, and requires the same answer.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pyspark
import pytest

from icecompat_writer.deltalog.actions import Protocol
from icecompat_writer.rules.detection import WRITER_PROFILES, held_profile
from icecompat_writer.sessions import jars_dir

_PROBE = """
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.icecompat.shim.guard.WriterProfile;
import java.io.BufferedReader;
import java.io.InputStreamReader;

public class Probe {
  public static void main(String[] args) throws Exception {
    ObjectMapper json = new ObjectMapper();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      JsonNode state = json.readTree(line);
      JsonNode protocol = state.get("protocol").isNull() ? null : state.get("protocol");
      JsonNode metadata = state.get("metaData").isNull() ? null : state.get("metaData");
      System.out.println(String.valueOf(WriterProfile.of(protocol, metadata)));
    }
  }
}
"""

_PROPERTIES: list[dict[str, str]] = [
    {},
    {"delta.enableIcebergCompatV3": "true"},
    {"delta.enableIcebergWriterCompatV1": "true"},
    {"delta.enableIcebergWriterCompatV1": " TRUE "},
    {"delta.enableIcebergWriterCompatV1": "false"},
    {"delta.enableIcebergWriterCompatV3": "true", "delta.enableIcebergCompatV3": "true"},
    {"delta.enableIcebergWriterCompatV3": "false", "delta.enableIcebergCompatV3": "true"},
    {"delta.enableIcebergWriterCompatV3": "True", "delta.enableIcebergWriterCompatV1": "true"},
]
_FEATURES: list[list[str] | None] = [
    None,
    [],
    ["columnMapping", "icebergCompatV3"],
    ["icebergCompatV2", "icebergWriterCompatV1"],
    ["icebergCompatV3", "icebergWriterCompatV3"],
    ["icebergWriterCompatV1", "icebergWriterCompatV3"],  # both listed: the more specific one holds
]


def _states() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for properties, features in itertools.product([*_PROPERTIES, None], _FEATURES):
        protocol = (
            None
            if features is None
            else {"minReaderVersion": 3, "minWriterVersion": 7, "writerFeatures": features}
        )
        metadata = None if properties is None else {"id": "t", "configuration": properties}
        if protocol is not None or metadata is not None:
            out.append({"protocol": protocol, "metaData": metadata})
    return out


def _python(state: dict[str, Any]) -> str | None:
    protocol = state["protocol"]
    features = None if protocol is None else frozenset(protocol["writerFeatures"])
    configuration = (state["metaData"] or {}).get("configuration", {})
    held = held_profile(configuration, None if protocol is None else Protocol(3, 7, None, features))
    return held if held in WRITER_PROFILES else None


def _jackson() -> list[Path]:
    jars = Path(pyspark.__file__).parent / "jars"
    found = [next(jars.glob(f"jackson-{name}-2*.jar")) for name in ("core", "databind", "annotations")]
    return found


def test_the_jvm_derives_the_writer_profile_held_profile_derives(tmp_path: Path) -> None:
    java = shutil.which("java")
    if java is None:  # pragma: no cover - the package's own requirement
        pytest.fail("java is not on PATH")
    probe = tmp_path / "Probe.java"
    probe.write_text(_PROBE)
    classpath = ":".join(str(p) for p in [jars_dir() / "icecompat-shim.jar", *_jackson()])
    states = _states()
    run = subprocess.run(
        [java, "-cp", classpath, str(probe)],
        input="".join(json.dumps(s) + "\n" for s in states),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    answers = [None if line == "null" else line for line in run.stdout.splitlines()]
    assert len(answers) == len(states) == 53
    disagree = [(s, j) for s, j in zip(states, answers, strict=True) if _python(s) != j]
    assert not disagree
    assert {"writer-v1", "writer-v3", None} == set(answers)
