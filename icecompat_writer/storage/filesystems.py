"""pyarrow filesystems for object stores, built from :mod:`.config` options and cached.

Why pyarrow.fs: it is already a pinned dependency (no new filesystem package), its S3, GCS and Azure
clients are C++ (listing thousands of keys and reading footers in parallel without the GIL), a
random-access file reads a byte range with one ranged GET (``read_at``) and, opened from a listing's
``FileInfo``, needs no HEAD request first; a ``FileSelector`` listing is one paginated LIST. What it
lacks is a conditional create, which :mod:`.conditional` does with each cloud's SDK.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from icecompat_writer.errors import SessionConfigError

from .config import StoreOptions, endpoint_parts, resolve_options, session_hadoop_values
from .uri import ObjectPath

__all__ = [
    "cached_client",
    "clear_cache",
    "filesystem",
    "filesystem_kwargs",
    "options_for",
    "parse_connection_string",
]

_GCS_DEFAULT_ROOT = "https://storage.googleapis.com"
_lock = threading.Lock()
_filesystems: dict[tuple[str, str, tuple[tuple[str, str], ...]], pafs.FileSystem] = {}
_clients: dict[tuple[Any, ...], Any] = {}


def clear_cache() -> None:
    """Forget every filesystem and SDK client (they are keyed by their settings: a change of settings
    needs no clearing; this frees them)."""
    with _lock:
        _filesystems.clear()
        _clients.clear()


def cached_client(key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    """The cloud SDK client for ``key``, built once (until :func:`clear_cache`): creating a client
    costs far more than one request, and the SDK calls pyarrow lacks are made per object."""
    with _lock:
        client = _clients.get(key)
    if client is None:
        client = build()
        with _lock:
            client = _clients.setdefault(key, client)
    return client


def options_for(path: ObjectPath) -> StoreOptions:
    """The store options of ``path``: the running session's Hadoop settings, then the environment
    (an :class:`~.object_io.ObjectStoreFileIO` built with settings of its own resolves with those instead).

    The session's values of the keys that configure ``path``'s store are read on every call and
    nothing is remembered per session: whatever is cached below (filesystems, SDK clients) is keyed
    by the settings themselves, credentials included. A cache keyed by the session's identity handed
    a new session the settings of a dead one whose ``id`` it reused, and missed a session whose
    settings changed (``spark.conf.set``, a rotated key).
    """
    return resolve_options(path, session_hadoop_values(path))


def filesystem(path: ObjectPath, options: StoreOptions | None = None) -> pafs.FileSystem:
    """The pyarrow filesystem that reaches ``path``'s bucket (container) with ``options`` (default:
    its resolved options, :func:`options_for`); one per distinct set of options."""
    options = options_for(path) if options is None else options
    name, kwargs = filesystem_kwargs(path, options)
    key = (
        name,
        path.authority if path.family == "azure" else path.family,
        tuple(sorted((k, repr(v)) for k, v in kwargs.items())),
    )
    with _lock:
        fs = _filesystems.get(key)
    if fs is None:
        fs = getattr(pafs, name)(**kwargs)
        with _lock:
            _filesystems[key] = fs
    return fs


def filesystem_kwargs(path: ObjectPath, options: StoreOptions) -> tuple[str, dict[str, Any]]:
    """The pyarrow filesystem class name and keyword arguments for ``path`` with ``options``."""
    o = options.as_dict()
    sources = dict(options.sources)
    if path.family == "s3":
        return "S3FileSystem", _s3_kwargs(o, sources)
    if path.family == "gcs":
        return "GcsFileSystem", _gcs_kwargs(o, sources)
    return "AzureFileSystem", _azure_kwargs(path, o)


def _truthy(value: str | None) -> bool | None:
    if value is None:
        return None
    return value.strip().lower() in {"true", "1", "yes"}


def _s3_kwargs(o: Mapping[str, str], sources: Mapping[str, str]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    for option in ("access_key", "secret_key", "session_token", "region"):
        if option in o:
            kwargs[option] = o[option]
    provider = o.get("credentials_provider", "")
    if "Anonymous" in provider and "access_key" not in o:
        kwargs["anonymous"] = True
    endpoint = o.get("endpoint")
    if endpoint:
        ssl = _truthy(o.get("ssl"))
        scheme, host = endpoint_parts(endpoint, ssl_default=ssl is not False)
        kwargs["endpoint_override"] = host
        kwargs["scheme"] = scheme
        if not sources.get("endpoint", "$").startswith("$"):
            # set in Hadoop: Hadoop's addressing rule (virtual-host style unless path style is on)
            kwargs["force_virtual_addressing"] = not _truthy(o.get("path_style"))
    elif _truthy(o.get("ssl")) is False:
        kwargs["scheme"] = "http"
    return kwargs


def _gcs_kwargs(o: Mapping[str, str], sources: Mapping[str, str]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if "project_id" in o:
        kwargs["project_id"] = o["project_id"]
    endpoint = o.get("endpoint")
    if endpoint and endpoint.rstrip("/") != _GCS_DEFAULT_ROOT:
        scheme, host = endpoint_parts(
            endpoint, ssl_default=sources.get("endpoint") != "$STORAGE_EMULATOR_HOST"
        )
        kwargs["endpoint_override"] = host
        kwargs["scheme"] = scheme
        if sources.get("endpoint") == "$STORAGE_EMULATOR_HOST":
            kwargs["anonymous"] = True  # emulators take no credentials
    if (o.get("auth_type") or "").upper() == "UNAUTHENTICATED":
        kwargs["anonymous"] = True
    keyfile = o.get("credentials_file")
    if keyfile and not sources.get("credentials_file", "$").startswith("$"):
        if os.environ.get("GOOGLE_APPLICATION_CREDENTIALS") != keyfile:
            raise SessionConfigError(
                f"{sources['credentials_file']} names the key file {keyfile!r}, which pyarrow's GCS client "
                "reads only through the environment: set GOOGLE_APPLICATION_CREDENTIALS to that file "
                "for the driver process"
            )
    return kwargs


def parse_connection_string(text: str) -> dict[str, str]:
    """``Key=Value;...`` pairs of an Azure storage connection string (values may contain ``=``)."""
    out: dict[str, str] = {}
    for part in text.split(";"):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def _azure_kwargs(path: ObjectPath, o: Mapping[str, str]) -> dict[str, Any]:
    account = path.account or ""
    kwargs: dict[str, Any] = {"account_name": account}
    conn = parse_connection_string(o.get("connection_string", ""))
    if conn and conn.get("AccountName", account) == account:
        if "AccountKey" in conn and "account_key" not in o:
            kwargs["account_key"] = conn["AccountKey"]
        if "SharedAccessSignature" in conn and "sas_token" not in o:
            kwargs["sas_token"] = conn["SharedAccessSignature"]
        blob = conn.get("BlobEndpoint")
        if blob:
            parts = urlsplit(blob)
            kwargs["blob_storage_authority"] = parts.netloc
            kwargs["blob_storage_scheme"] = parts.scheme
            dfs = conn.get("DfsEndpoint")
            dparts = urlsplit(dfs) if dfs else parts
            kwargs["dfs_storage_authority"] = dparts.netloc
            kwargs["dfs_storage_scheme"] = dparts.scheme
    endpoint = o.get("abfs_endpoint")
    if endpoint and "blob_storage_authority" not in kwargs:
        secure = path.scheme in {"abfss", "wasbs"} or (o.get("always_https") or "true").lower() != "false"
        kwargs["blob_storage_authority"] = kwargs["dfs_storage_authority"] = endpoint
        kwargs["blob_storage_scheme"] = kwargs["dfs_storage_scheme"] = "https" if secure else "http"
    host = path.host or ""
    if "blob_storage_authority" not in kwargs and "." in host:
        suffix = host.split(".", 1)[1]  # dfs.core.windows.net, blob.core.chinacloudapi.cn, ...
        service, _, cloud = suffix.partition(".")
        if service in {"dfs", "blob"} and cloud and cloud != "core.windows.net":
            kwargs["blob_storage_authority"] = f".blob.{cloud}"
            kwargs["dfs_storage_authority"] = f".dfs.{cloud}"
    if "account_key" in o:
        kwargs["account_key"] = o["account_key"]
    elif "sas_token" in o:
        kwargs["sas_token"] = o["sas_token"].lstrip("?")
    if "account_key" not in kwargs and "sas_token" not in kwargs and "client_secret" in o:
        tenant = o.get("tenant_id") or _tenant_of(o.get("oauth_endpoint", ""))
        if o.get("client_id") and tenant:
            kwargs.update(client_id=o["client_id"], client_secret=o["client_secret"], tenant_id=tenant)
    return kwargs


def _tenant_of(endpoint: str) -> str | None:
    """The tenant in an OAuth token endpoint (``https://login.microsoftonline.com/<tenant>/oauth2/token``)."""
    parts = [p for p in urlsplit(endpoint).path.split("/") if p]
    return parts[0] if parts else None
