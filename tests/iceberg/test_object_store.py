"""Iceberg metadata for a Delta table on S3 (moto on 127.0.0.1): written next to the log in the bucket,
``s3://`` locations for an ``s3a`` table, the metadata file committed with ``If-None-Match: *`` so two
concurrent emitters never both commit one version, and pyiceberg reading the table from S3.

The Delta tables are synthetic (tests/cli/synthetic.py: compliant Parquet with field ids), built on
disk and uploaded; the emitter reaches the server through the standard AWS environment variables.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.table import StaticTable

from icecompat_writer import storage
from icecompat_writer.errors import ConcurrentWriteError
from icecompat_writer.iceberg import write_iceberg_metadata
from tests.cli.synthetic import build_table, stats, write_data_file
from tests.deltalog import logbuilder as lb


def pyiceberg_ids(server: Any, metadata_uri: str) -> list[int]:
    table = StaticTable.from_metadata(
        metadata_uri,
        properties={
            "s3.endpoint": server.endpoint,
            "s3.access-key-id": server.access_key,
            "s3.secret-access-key": server.secret_key,
            "s3.region": server.region,
        },
    )
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def metadata_keys(server: Any, bucket: str) -> list[str]:
    return sorted(k for k in server.bucket_digest(bucket, "warehouse/t/metadata/"))


def referenced_avro(server: Any, bucket: str, version: int) -> set[str]:
    """Every manifest list and manifest the metadata of ``version`` reaches (keys in the bucket)."""
    from icecompat_writer.iceberg.avro import read_avro

    c = server.client()
    body = c.get_object(Bucket=bucket, Key=f"warehouse/t/metadata/v{version}.metadata.json")["Body"].read()
    meta = json.loads(body)
    prefix = f"s3://{bucket}/"
    keys: set[str] = set()
    for snap in meta["snapshots"]:
        keys.add(snap["manifest-list"].removeprefix(prefix))
        records, _ = read_avro(storage.parse_location(snap["manifest-list"]))
        keys.update(str(r["manifest_path"]).removeprefix(prefix) for r in records)
    return keys


def test_iceberg_metadata_on_s3_uses_s3_uris_and_pyiceberg_reads_it(s3_env: Any, tmp_path: Path) -> None:
    table = build_table(tmp_path / "t", "v3", files=3, rows_per_file=4)
    bucket = s3_env.new_bucket()
    s3_env.upload_dir(table.root, bucket, "warehouse/t")
    before = s3_env.bucket_digest(bucket)

    result = write_iceberg_metadata(f"s3a://{bucket}/warehouse/t")

    assert result.written and result.metadata_version == 1 and result.delta_version == 0
    assert str(result.metadata_path) == f"s3a://{bucket}/warehouse/t/metadata/v1.metadata.json"
    after = s3_env.bucket_digest(bucket)
    assert {k: v for k, v in after.items() if k in before} == before  # the Delta table is untouched
    assert all(k.startswith("warehouse/t/metadata/") for k in set(after) - set(before))
    meta = json.loads(
        s3_env.client().get_object(Bucket=bucket, Key="warehouse/t/metadata/v1.metadata.json")["Body"].read()
    )
    assert meta["location"] == f"s3://{bucket}/warehouse/t"
    assert meta["snapshots"][0]["manifest-list"].startswith(f"s3://{bucket}/warehouse/t/metadata/snap-")
    hint = (
        s3_env.client().get_object(Bucket=bucket, Key="warehouse/t/metadata/version-hint.text")["Body"].read()
    )
    assert hint == b"1"
    ids = pyiceberg_ids(s3_env, f"s3://{bucket}/warehouse/t/metadata/v1.metadata.json")
    assert ids == list(range(12))

    # an append converted incrementally: v2, read back with the new rows
    size = write_data_file(tmp_path / "new.parquet", table.metadata, 100, 2)
    s3_env.client().put_object(
        Bucket=bucket, Key="warehouse/t/new.parquet", Body=(tmp_path / "new.parquet").read_bytes()
    )
    add = lb.add("new.parquet", stats=stats(2), size=size)
    add["add"].update(baseRowId=12, defaultRowCommitVersion=1)
    commit = "\n".join(json.dumps(a) for a in [lb.commit_info("WRITE"), add]) + "\n"
    s3_env.client().put_object(
        Bucket=bucket, Key="warehouse/t/_delta_log/00000000000000000001.json", Body=commit.encode()
    )
    again = write_iceberg_metadata(f"s3a://{bucket}/warehouse/t")
    assert (again.written, again.metadata_version, again.delta_version) == (True, 2, 1)
    assert pyiceberg_ids(s3_env, f"s3://{bucket}/warehouse/t/metadata/v2.metadata.json") == [
        *range(12),
        100,
        101,
    ]
    assert write_iceberg_metadata(f"s3a://{bucket}/warehouse/t").written is False


@pytest.fixture(scope="module")
def serial_s3(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A moto server that handles one request at a time, as S3 decides conditional creates one by one
    (moto's threaded server checks ``If-None-Match`` and stores without a lock)."""
    from tests.objectstores import start_s3_server

    server = start_s3_server(tmp_path_factory.mktemp("moto-serial"), serial=True)
    yield server
    server.stop()


@pytest.fixture
def serial_env(serial_s3: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    for key, value in serial_s3.environ().items():
        monkeypatch.setenv(key, value)
    storage.clear_cache()
    yield serial_s3
    storage.clear_cache()


def test_two_concurrent_emitters_never_both_commit_a_version(serial_env: Any, tmp_path: Path) -> None:
    s3_env = serial_env
    table = build_table(tmp_path / "t", "v3", files=4, rows_per_file=2)
    bucket = s3_env.new_bucket()
    with s3_env.routed(bucket):  # the run's Spark session points s3a at the shared server
        _race_emitters(s3_env, table, bucket, tmp_path)


def _race_emitters(s3_env: Any, table: Any, bucket: str, tmp_path: Path) -> None:
    s3_env.upload_dir(table.root, bucket, "warehouse/t")
    uri = f"s3a://{bucket}/warehouse/t"

    for round_ in range(3):
        if round_:
            name = f"r{round_}.parquet"
            size = write_data_file(tmp_path / name, table.metadata, 1000 * round_, 2)
            c = s3_env.client()
            c.put_object(Bucket=bucket, Key=f"warehouse/t/{name}", Body=(tmp_path / name).read_bytes())
            add = lb.add(name, stats=stats(2), size=size)
            add["add"].update(baseRowId=8 + 2 * (round_ - 1), defaultRowCommitVersion=round_)
            body = "\n".join(json.dumps(a) for a in [lb.commit_info("WRITE"), add]) + "\n"
            c.put_object(Bucket=bucket, Key=f"warehouse/t/_delta_log/{round_:020d}.json", Body=body.encode())
        barrier = threading.Barrier(2)
        outcomes: list[Any] = []

        def emit(barrier: threading.Barrier = barrier, outcomes: list[Any] = outcomes) -> None:
            barrier.wait()
            try:
                outcomes.append(write_iceberg_metadata(uri))
            except Exception as e:  # kept, so that an unexpected error shows in the assertion
                outcomes.append(e)

        threads = [threading.Thread(target=emit) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        committed = [o for o in outcomes if not isinstance(o, Exception) and o.written]
        others = [o for o in outcomes if o not in committed]
        assert len(committed) == 1, outcomes  # one wins this version
        assert committed[0].metadata_version == round_ + 1
        # the other lost the conditional create (and says so) or found the tree already up to date
        assert len(others) == 1, outcomes
        assert isinstance(others[0], ConcurrentWriteError) or others[0].written is False, outcomes
        keys = metadata_keys(s3_env, bucket)
        versions = sorted(k for k in keys if k.endswith(".metadata.json"))
        assert versions == [f"warehouse/t/metadata/v{v}.metadata.json" for v in range(1, round_ + 2)]
        avro = {k for k in keys if k.endswith(".avro")}
        assert avro == referenced_avro(s3_env, bucket, round_ + 1)  # the loser left no file behind

    expected = [*range(8), 1000, 1001, 2000, 2001]
    assert pyiceberg_ids(s3_env, f"s3://{bucket}/warehouse/t/metadata/v3.metadata.json") == expected
