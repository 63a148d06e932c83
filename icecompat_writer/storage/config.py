"""Credentials and endpoints for each object store, taken where users already keep them.

One table, :data:`SETTINGS`, says for every option of a store which Hadoop key of the running Spark
session sets it (``fs.s3a.*`` with ``fs.s3a.bucket.<bucket>.*`` overrides, ``fs.azure.*`` per account,
``fs.gs.*``) and which standard environment variables do when the session does not. Hadoop keys win over
the environment, as they do for Spark's own connectors; an option set nowhere is left to the store's
own default chain (AWS profile files and instance metadata, Azure's DefaultAzureCredential, Google's
application default credentials), which pyarrow and the cloud SDKs walk themselves.

:func:`resolve_options` is a pure function of a Hadoop key/value mapping and an environment, so the
mapping is tested without any cloud; :func:`session_hadoop_values` reads the keys a store needs from the
running Spark session the package entry hands down (:mod:`icecompat_writer.driver_settings`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from icecompat_writer import driver_settings

from .uri import ObjectPath

__all__ = [
    "SETTINGS",
    "Setting",
    "StoreOptions",
    "hadoop_keys",
    "resolve_options",
    "session_hadoop_values",
]


@dataclass(frozen=True)
class Setting:
    """One option of a store: the Hadoop key templates that set it, then the environment variables.

    Templates use ``{bucket}`` (S3 bucket, GCS bucket) and ``{account}`` / ``{host}`` (Azure account
    name and endpoint host); the first key or variable with a non-empty value wins.
    """

    option: str
    hadoop: tuple[str, ...]
    env: tuple[str, ...] = ()


SETTINGS: dict[str, tuple[Setting, ...]] = {
    "s3": (
        Setting(
            "access_key", ("fs.s3a.bucket.{bucket}.access.key", "fs.s3a.access.key"), ("AWS_ACCESS_KEY_ID",)
        ),
        Setting(
            "secret_key",
            ("fs.s3a.bucket.{bucket}.secret.key", "fs.s3a.secret.key"),
            ("AWS_SECRET_ACCESS_KEY",),
        ),
        Setting(
            "session_token",
            ("fs.s3a.bucket.{bucket}.session.token", "fs.s3a.session.token"),
            ("AWS_SESSION_TOKEN",),
        ),
        Setting(
            "endpoint",
            ("fs.s3a.bucket.{bucket}.endpoint", "fs.s3a.endpoint"),
            ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
        ),
        Setting(
            "region",
            ("fs.s3a.bucket.{bucket}.endpoint.region", "fs.s3a.endpoint.region"),
            ("AWS_REGION", "AWS_DEFAULT_REGION"),
        ),
        Setting("path_style", ("fs.s3a.bucket.{bucket}.path.style.access", "fs.s3a.path.style.access")),
        Setting("ssl", ("fs.s3a.bucket.{bucket}.connection.ssl.enabled", "fs.s3a.connection.ssl.enabled")),
        Setting(
            "credentials_provider",
            ("fs.s3a.bucket.{bucket}.aws.credentials.provider", "fs.s3a.aws.credentials.provider"),
        ),
    ),
    "azure": (
        Setting(
            "account_key",
            (
                "fs.azure.account.key.{host}",
                "fs.azure.account.key.{account}.dfs.core.windows.net",
                "fs.azure.account.key.{account}.blob.core.windows.net",
            ),
            ("AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT_KEY"),
        ),
        Setting(
            "sas_token",
            ("fs.azure.sas.fixed.token.{host}", "fs.azure.sas.fixed.token.{account}.dfs.core.windows.net"),
            ("AZURE_STORAGE_SAS_TOKEN",),
        ),
        Setting(
            "client_id",
            ("fs.azure.account.oauth2.client.id.{host}", "fs.azure.account.oauth2.client.id"),
            ("AZURE_CLIENT_ID",),
        ),
        Setting(
            "client_secret",
            ("fs.azure.account.oauth2.client.secret.{host}", "fs.azure.account.oauth2.client.secret"),
            ("AZURE_CLIENT_SECRET",),
        ),
        Setting(
            "oauth_endpoint",
            ("fs.azure.account.oauth2.client.endpoint.{host}", "fs.azure.account.oauth2.client.endpoint"),
        ),
        # host:port of a local endpoint (the emulator) that the abfs connector uses instead of the
        # account's host name; plain HTTP unless the URI is abfss or fs.azure.always.use.https holds
        Setting("abfs_endpoint", ("fs.azure.abfs.endpoint",)),
        Setting("always_https", ("fs.azure.always.use.https",)),
        Setting("tenant_id", (), ("AZURE_TENANT_ID",)),
        Setting("connection_string", (), ("AZURE_STORAGE_CONNECTION_STRING",)),
    ),
    "gcs": (
        Setting("project_id", ("fs.gs.project.id",), ("GOOGLE_CLOUD_PROJECT",)),
        Setting("endpoint", ("fs.gs.storage.root.url",), ("STORAGE_EMULATOR_HOST",)),
        Setting("auth_type", ("fs.gs.auth.type",)),
        Setting(
            "credentials_file",
            ("fs.gs.auth.service.account.json.keyfile",),
            ("GOOGLE_APPLICATION_CREDENTIALS",),
        ),
    ),
}


@dataclass(frozen=True)
class StoreOptions:
    """What one store needs to be reached: the family, and the options found (name -> value).

    ``sources`` says for each option where it came from (a Hadoop key or an environment variable),
    for messages and ``doctor``-style reports; values never appear there.
    """

    family: str
    values: tuple[tuple[str, str], ...]
    sources: tuple[tuple[str, str], ...]

    def get(self, option: str, default: str | None = None) -> str | None:
        for k, v in self.values:
            if k == option:
                return v
        return default

    def as_dict(self) -> dict[str, str]:
        return dict(self.values)


def _fields(path: ObjectPath) -> dict[str, str]:
    return {"bucket": path.bucket, "account": path.account or "", "host": path.host or ""}


def hadoop_keys(path: ObjectPath) -> list[str]:
    """Every Hadoop key that may configure ``path``'s store, in :data:`SETTINGS` order."""
    fields = _fields(path)
    return [t.format(**fields) for s in SETTINGS[path.family] for t in s.hadoop]


def resolve_options(
    path: ObjectPath, hadoop: Mapping[str, str] | None, env: Mapping[str, str] | None = None
) -> StoreOptions:
    """The options of ``path``'s store: Hadoop values first, then the environment (see :data:`SETTINGS`)."""
    env = os.environ if env is None else env
    fields = _fields(path)
    values: list[tuple[str, str]] = []
    sources: list[tuple[str, str]] = []
    for setting in SETTINGS[path.family]:
        found: tuple[str, str] | None = None
        for template in setting.hadoop:
            key = template.format(**fields)
            value = (hadoop or {}).get(key)
            if value is not None and value.strip():
                found = (value.strip(), key)
                break
        if found is None:
            for var in setting.env:
                value = env.get(var)
                if value is not None and value.strip():
                    found = (value.strip(), "$" + var)
                    break
        if found is not None:
            values.append((setting.option, found[0]))
            sources.append((setting.option, found[1]))
    return StoreOptions(path.family, tuple(values), tuple(sources))


def session_hadoop_values(path: ObjectPath) -> dict[str, str] | None:
    """The Hadoop values of the running Spark session for ``path``'s keys; None without a session.

    The session is the one the edge handed down (:mod:`icecompat_writer.driver_settings`): only a
    session that already runs is used (none is started: the CLI works without Spark).
    """
    return driver_settings.hadoop_values(hadoop_keys(path))


def endpoint_parts(endpoint: str, ssl_default: bool = True) -> tuple[str, str]:
    """``(scheme, host[:port][/path])`` of an endpoint written with or without a scheme."""
    if "://" in endpoint:
        parts = urlsplit(endpoint)
        return parts.scheme, parts.netloc + parts.path.rstrip("/")
    return ("https" if ssl_default else "http"), endpoint.rstrip("/")
