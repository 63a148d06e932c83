"""``icecompat check``, ``upgrade --dry-run`` and ``iceberg`` on ``s3a://`` URIs, configured the way a
user configures any AWS tool: the standard AWS environment variables (moto server on 127.0.0.1).

Tables are synthetic (tests/cli/synthetic.py), built on disk and uploaded with boto3.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from icecompat_writer.cli.main import EXIT_ERROR, EXIT_OK, EXIT_VIOLATIONS, main
from tests.cli.synthetic import build_table

ICECOMPAT = Path(sys.executable).parent / "icecompat"


@pytest.fixture
def s3_table(s3_env: Any, tmp_path: Path) -> str:
    table = build_table(tmp_path / "t", "v3", files=3)
    bucket = s3_env.new_bucket()
    s3_env.upload_dir(table.root, bucket, "t")
    return f"s3a://{bucket}/t"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_exit_codes_on_s3(s3_table: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", s3_table, "--json")
    assert code == EXIT_OK
    doc = json.loads(out)
    assert doc["table"] == s3_table and doc["compliant"] is True and doc["files"]["footers_read"] == 3
    code, _, _ = run(capsys, "check", s3_table, "--profile", "writer-v1")
    assert code == EXIT_VIOLATIONS
    code, out, err = run(capsys, "check", s3_table + "-missing", "--json")
    assert code == EXIT_ERROR
    assert "not a Delta table" in err and json.loads(out)["error"]["type"] == "TableReadError"


def test_check_of_an_unsupported_scheme_exits_2_naming_the_supported_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "check", "hdfs://namenode/t")
    assert code == EXIT_ERROR and "s3a://" in err


def test_upgrade_dry_run_and_iceberg_on_s3(
    s3_env: Any, s3_table: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bucket = s3_table.split("/")[2]
    before = s3_env.bucket_digest(bucket)
    code, out, _ = run(capsys, "upgrade", s3_table, "--profile", "v3", "--dry-run", "--json")
    assert code == EXIT_OK
    doc = json.loads(out)
    assert doc["dry_run"] is True and doc["version"] is None and doc["needed"] is False
    code, out, _ = run(capsys, "upgrade", s3_table, "--profile", "writer-v1", "--dry-run", "--json")
    assert code == EXIT_VIOLATIONS  # the plan read the table from S3 and refuses, naming the rules
    assert json.loads(out)["refused"]["violations"]
    assert s3_env.bucket_digest(bucket) == before

    code, out, _ = run(capsys, "iceberg", s3_table)
    assert code == EXIT_OK and "v1.metadata.json" in out
    assert "t/metadata/v1.metadata.json" in s3_env.bucket_digest(bucket)


def test_installed_command_reads_s3_through_the_aws_environment(s3_env: Any, s3_table: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | s3_env.environ()
    proc = subprocess.run(
        [str(ICECOMPAT), "check", s3_table, "--json"], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == EXIT_OK, proc.stderr
    assert json.loads(proc.stdout)["compliant"] is True


def test_check_upgrade_dry_run_and_iceberg_on_azurite(
    azure_env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = build_table(tmp_path / "t", "v3", files=3)
    container = azure_env.new_container()
    azure_env.upload_dir(table.root, container, "t")
    uri = f"abfss://{container}@devstoreaccount1.dfs.core.windows.net/t"
    before = azure_env.container_digest(container)

    code, out, _ = run(capsys, "check", uri, "--json")
    assert code == EXIT_OK
    doc = json.loads(out)
    assert doc["table"] == uri and doc["compliant"] is True and doc["files"]["footers_read"] == 3
    code, _, _ = run(capsys, "check", uri, "--profile", "writer-v1")
    assert code == EXIT_VIOLATIONS
    code, out, _ = run(capsys, "upgrade", uri, "--profile", "writer-v1", "--dry-run", "--json")
    assert code == EXIT_VIOLATIONS  # the plan read the table from the container and refuses
    assert json.loads(out)["refused"]["violations"]
    code, out, _ = run(capsys, "upgrade", uri, "--profile", "v3", "--dry-run", "--json")
    assert code == EXIT_OK and json.loads(out)["needed"] is False
    assert azure_env.container_digest(container) == before

    code, out, _ = run(capsys, "iceberg", uri)
    assert code == EXIT_OK and "v1.metadata.json" in out
    assert "t/metadata/v1.metadata.json" in azure_env.container_digest(container)


def test_installed_command_reads_azure_through_the_connection_string(azure_env: Any, tmp_path: Path) -> None:
    table = build_table(tmp_path / "t", "v3", files=2)
    container = azure_env.new_container()
    azure_env.upload_dir(table.root, container, "t")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AZURE_")} | azure_env.environ()
    proc = subprocess.run(
        [str(ICECOMPAT), "check", f"wasbs://{container}@devstoreaccount1.blob.core.windows.net/t", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == EXIT_OK, proc.stderr
    assert json.loads(proc.stdout)["compliant"] is True
