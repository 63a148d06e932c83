"""Credential and endpoint mapping: Hadoop keys (with per-bucket overrides) first, then the environment.

Pure mapping, no cloud: GCS has no local server in the suite, so its mapping is tested here only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from icecompat_writer.errors import SessionConfigError
from icecompat_writer.storage import ObjectPath, filesystem_kwargs, parse_location, resolve_options
from icecompat_writer.storage.config import hadoop_keys


def s3(uri: str = "s3a://bucket/t") -> ObjectPath:
    loc = parse_location(uri)
    assert isinstance(loc, ObjectPath)
    return loc


def test_s3_from_the_standard_aws_environment() -> None:
    env = {
        "AWS_ACCESS_KEY_ID": "AK",
        "AWS_SECRET_ACCESS_KEY": "SK",
        "AWS_SESSION_TOKEN": "TOK",
        "AWS_REGION": "eu-west-1",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
    }
    name, kw = filesystem_kwargs(s3(), resolve_options(s3(), None, env))
    assert name == "S3FileSystem"
    assert kw == {
        "access_key": "AK",
        "secret_key": "SK",
        "session_token": "TOK",
        "region": "eu-west-1",
        "endpoint_override": "127.0.0.1:9000",
        "scheme": "http",
    }


def test_s3_service_specific_endpoint_variable_wins_over_the_global_one() -> None:
    env = {"AWS_ENDPOINT_URL": "http://a:1", "AWS_ENDPOINT_URL_S3": "https://b:2", "AWS_DEFAULT_REGION": "r"}
    _, kw = filesystem_kwargs(s3(), resolve_options(s3(), None, env))
    assert (kw["endpoint_override"], kw["scheme"], kw["region"]) == ("b:2", "https", "r")


def test_s3_hadoop_keys_win_over_the_environment_and_per_bucket_keys_over_global_ones() -> None:
    hadoop = {
        "fs.s3a.access.key": "global-ak",
        "fs.s3a.secret.key": "global-sk",
        "fs.s3a.bucket.bucket.access.key": "bucket-ak",
        "fs.s3a.endpoint": "minio.local:9000",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.endpoint.region": "us-west-2",
        "fs.s3a.bucket.other.secret.key": "not-this-bucket",
    }
    env = {"AWS_ACCESS_KEY_ID": "env-ak", "AWS_SESSION_TOKEN": "env-token"}
    options = resolve_options(s3(), hadoop, env)
    _, kw = filesystem_kwargs(s3(), options)
    assert kw == {
        "access_key": "bucket-ak",
        "secret_key": "global-sk",
        "session_token": "env-token",
        "region": "us-west-2",
        "endpoint_override": "minio.local:9000",
        "scheme": "http",
        "force_virtual_addressing": False,
    }
    assert dict(options.sources)["access_key"] == "fs.s3a.bucket.bucket.access.key"
    assert dict(options.sources)["session_token"] == "$AWS_SESSION_TOKEN"
    assert "fs.s3a.bucket.bucket.endpoint" in hadoop_keys(s3())


def test_s3_hadoop_endpoint_without_path_style_uses_virtual_hosts_as_s3a_does() -> None:
    _, kw = filesystem_kwargs(s3(), resolve_options(s3(), {"fs.s3a.endpoint": "https://s3.eu.example"}, {}))
    assert kw == {"endpoint_override": "s3.eu.example", "scheme": "https", "force_virtual_addressing": True}


def test_s3_anonymous_provider() -> None:
    hadoop = {"fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"}
    _, kw = filesystem_kwargs(s3(), resolve_options(s3(), hadoop, {}))
    assert kw == {"anonymous": True}


def test_azure_account_key_from_hadoop_per_account() -> None:
    loc = s3("abfss://data@acct.dfs.core.windows.net/t")
    hadoop = {
        "fs.azure.account.key.acct.dfs.core.windows.net": "KEY==",
        "fs.azure.account.key.other.dfs.core.windows.net": "NOT",
    }
    name, kw = filesystem_kwargs(loc, resolve_options(loc, hadoop, {}))
    assert name == "AzureFileSystem"
    assert kw == {"account_name": "acct", "account_key": "KEY=="}


def test_azure_blob_key_serves_a_wasbs_table_and_oauth_keys_give_a_client_secret_credential() -> None:
    loc = s3("wasbs://c@acct.blob.core.windows.net/t")
    _, kw = filesystem_kwargs(
        loc, resolve_options(loc, {"fs.azure.account.key.acct.blob.core.windows.net": "K"}, {})
    )
    assert kw["account_key"] == "K"
    abfs = s3("abfss://c@acct.dfs.core.windows.net/t")
    hadoop = {
        "fs.azure.account.oauth2.client.id.acct.dfs.core.windows.net": "cid",
        "fs.azure.account.oauth2.client.secret.acct.dfs.core.windows.net": "secret",
        "fs.azure.account.oauth2.client.endpoint.acct.dfs.core.windows.net": (
            "https://login.microsoftonline.com/tenant-1/oauth2/token"
        ),
    }
    _, kw = filesystem_kwargs(abfs, resolve_options(abfs, hadoop, {}))
    assert kw == {
        "account_name": "acct",
        "client_id": "cid",
        "client_secret": "secret",
        "tenant_id": "tenant-1",
    }


def test_azure_connection_string_sets_an_emulator_endpoint() -> None:
    loc = s3("abfs://c@devstoreaccount1.dfs.core.windows.net/t")
    env = {
        "AZURE_STORAGE_CONNECTION_STRING": (
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5==;"
            "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
        )
    }
    _, kw = filesystem_kwargs(loc, resolve_options(loc, None, env))
    assert kw == {
        "account_name": "devstoreaccount1",
        "account_key": "a2V5==",
        "blob_storage_authority": "127.0.0.1:10000",
        "blob_storage_scheme": "http",
        "dfs_storage_authority": "127.0.0.1:10000",
        "dfs_storage_scheme": "http",
    }


def test_azure_abfs_endpoint_key_points_at_a_local_blob_endpoint_as_the_abfs_connector_does() -> None:
    hadoop = {
        "fs.azure.abfs.endpoint": "127.0.0.1:10000",
        "fs.azure.always.use.https": "false",
        "fs.azure.account.key.devstoreaccount1.dfs.core.windows.net": "a2V5==",
    }
    plain = s3("abfs://c@devstoreaccount1.dfs.core.windows.net/t")
    _, kw = filesystem_kwargs(plain, resolve_options(plain, hadoop, {}))
    assert kw == {
        "account_name": "devstoreaccount1",
        "account_key": "a2V5==",
        "blob_storage_authority": "127.0.0.1:10000",
        "blob_storage_scheme": "http",
        "dfs_storage_authority": "127.0.0.1:10000",
        "dfs_storage_scheme": "http",
    }
    secure = s3("abfss://c@devstoreaccount1.dfs.core.windows.net/t")  # abfss always speaks TLS
    _, kw = filesystem_kwargs(secure, resolve_options(secure, hadoop, {}))
    assert kw["blob_storage_scheme"] == kw["dfs_storage_scheme"] == "https"
    https_default = {k: v for k, v in hadoop.items() if k != "fs.azure.always.use.https"}
    _, kw = filesystem_kwargs(plain, resolve_options(plain, https_default, {}))
    assert kw["blob_storage_scheme"] == "https"


def test_azure_sovereign_cloud_hosts_set_the_service_authorities() -> None:
    loc = s3("abfss://c@acct.dfs.core.chinacloudapi.cn/t")
    _, kw = filesystem_kwargs(loc, resolve_options(loc, None, {"AZURE_STORAGE_KEY": "K"}))
    assert kw["blob_storage_authority"] == ".blob.core.chinacloudapi.cn"
    assert kw["dfs_storage_authority"] == ".dfs.core.chinacloudapi.cn"


def test_gcs_project_emulator_and_anonymous_mapping() -> None:
    loc = s3("gs://b/t")
    name, kw = filesystem_kwargs(loc, resolve_options(loc, {"fs.gs.project.id": "p"}, {}))
    assert (name, kw) == ("GcsFileSystem", {"project_id": "p"})
    _, kw = filesystem_kwargs(
        loc, resolve_options(loc, None, {"STORAGE_EMULATOR_HOST": "http://127.0.0.1:4443"})
    )
    assert kw == {"endpoint_override": "127.0.0.1:4443", "scheme": "http", "anonymous": True}
    _, kw = filesystem_kwargs(loc, resolve_options(loc, {"fs.gs.auth.type": "UNAUTHENTICATED"}, {}))
    assert kw == {"anonymous": True}
    _, kw = filesystem_kwargs(
        loc, resolve_options(loc, {"fs.gs.storage.root.url": "https://storage.googleapis.com/"}, {})
    )
    assert kw == {}


def test_gcs_keyfile_in_hadoop_must_match_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    loc = s3("gs://b/t")
    options = resolve_options(loc, {"fs.gs.auth.service.account.json.keyfile": "/keys/sa.json"}, {})
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    with pytest.raises(SessionConfigError, match="GOOGLE_APPLICATION_CREDENTIALS"):
        filesystem_kwargs(loc, options)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/keys/sa.json")
    assert filesystem_kwargs(loc, options) == ("GcsFileSystem", {})


def test_handed_over_hadoop_settings_win_over_the_environment_in_their_fileio_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from icecompat_writer import storage

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "from-env")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    path = s3("s3a://bkt/t")
    handed = {
        "fs.s3a.bucket.bkt.access.key": "handed",
        "fs.s3a.secret.key": "handed-secret",
        "fs.s3a.endpoint": "http://127.0.0.1:9",
        "fs.s3a.path.style.access": "true",
    }
    before = storage.options_for(path)  # this process's own sources (a live session's, else the env)
    inside = storage.ObjectStoreFileIO(handed).options(path)
    # a request without settings: the process's own sources
    without = storage.ObjectStoreFileIO().options(path)
    again = storage.ObjectStoreFileIO(handed).options(path)
    after = storage.options_for(path)
    assert inside.get("access_key") == "handed" and inside.get("secret_key") == "handed-secret"
    assert inside.get("endpoint") == "http://127.0.0.1:9" and inside.get("path_style") == "true"
    assert dict(inside.sources)["access_key"] == "fs.s3a.bucket.bkt.access.key"
    assert again == inside
    assert without == after == before != inside
    assert "handed-secret" not in repr(inside.sources)  # sources name keys, never values


def test_a_fileio_built_with_hadoop_settings_uses_them_whatever_the_process_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The settings travel with the FileIO object: no block around the calls, no process-wide state."""
    from icecompat_writer import storage

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "from-env")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    path = s3("s3a://bkt/t")
    handed = {"fs.s3a.access.key": "handed", "fs.s3a.secret.key": "handed-secret"}
    io = storage.ObjectStoreFileIO(handed)
    other = {"fs.s3a.access.key": "other", "fs.s3a.secret.key": "other-secret"}
    storage.ObjectStoreFileIO(other).options(path)
    inside = io.options(path)
    assert inside.get("access_key") == "handed" and inside.get("secret_key") == "handed-secret"
    assert io.options(path) == inside
    own = storage.ObjectStoreFileIO().options(path).get("access_key")
    assert own == storage.options_for(path).get("access_key") and own != "handed"


def test_iceberg_properties_name_the_store_settings_as_pyiceberg_does(tmp_path: Path) -> None:
    """A catalog's pyiceberg FileIO reaches the table's store with the settings the FileIO holds; a
    local location needs none."""
    from icecompat_writer import storage

    io = storage.ObjectStoreFileIO(
        {
            "fs.azure.account.key.acct.dfs.core.windows.net": "KEY==",
            "fs.gs.project.id": "p",
            "fs.s3a.access.key": "AK",
            "fs.s3a.secret.key": "SK",
            "fs.s3a.endpoint": "127.0.0.1:9000",
            "fs.s3a.connection.ssl.enabled": "false",
        }
    )
    azure = io.iceberg_properties(s3("abfss://data@acct.dfs.core.windows.net/t/metadata/v1.metadata.json"))
    assert azure["adls.account-key"] == "KEY==" and azure["adls.account-name"] == "acct"
    assert io.iceberg_properties(s3("gs://b/t"))["gcs.project-id"] == "p"
    s3_props = io.iceberg_properties(s3("s3a://b/t"))
    assert (s3_props["s3.access-key-id"], s3_props["s3.secret-access-key"]) == ("AK", "SK")
    assert s3_props["s3.endpoint"] == "http://127.0.0.1:9000"
    assert s3_props["s3.force-virtual-addressing"] == "true"
    assert storage.io_for(tmp_path).iceberg_properties(tmp_path / "t") == {}
