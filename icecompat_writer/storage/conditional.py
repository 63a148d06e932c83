"""The object-store operations pyarrow's filesystems cannot do as the table needs them.

* Create an object only if it does not exist yet (the Iceberg metadata commit): pyarrow has no
  precondition, so this goes through the cloud's SDK: S3 ``PutObject`` with ``If-None-Match: *``
  (boto3), GCS ``ifGenerationMatch=0`` (google-cloud-storage), Azure Blob ``If-None-Match: *``
  (azure-storage-blob, ``overwrite=False``).
* Delete objects and nothing else: pyarrow's ``delete_file`` writes an empty "directory marker"
  object for the parent prefix after each delete (so that the directory seems to survive), which
  would leave objects in a bucket the table never had; an aborted write must leave the bucket
  byte-identical. S3 deletes in batches of 1,000 keys per request.
* List a directory from a key on (Delta's ``listFrom``): pyarrow's selector always lists a prefix
  from its start; S3's ``StartAfter`` and GCS's ``start_offset`` begin where the caller says.

The SDKs are imported only here and only when called; they are optional extras of the package
(``icecompat_writer[s3]``, ``[gcs]``, ``[azure]``), and a missing one is a
:class:`~icecompat_writer.errors.SetupError` naming it. The credentials and endpoint are the same
resolved options the pyarrow filesystem uses.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from icecompat_writer.errors import SetupError

from .config import StoreOptions, endpoint_parts
from .filesystems import cached_client, filesystem_kwargs, parse_connection_string
from .uri import ObjectPath

__all__ = ["EXTRAS", "create_object_if_absent", "delete_objects", "get_object", "list_objects_after"]

# store family -> (module imported, package extra that installs it)
EXTRAS: dict[str, tuple[str, str]] = {
    "s3": ("boto3", "s3"),
    "gcs": ("google.cloud.storage", "gcs"),
    "azure": ("azure.storage.blob", "azure"),
}


def _sdk(family: str) -> Any:
    module, extra = EXTRAS[family]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise SetupError(
            f"creating only if absent and deleting objects on {family.upper()} needs the {module} package: "
            f"pip install 'icecompat_writer[{extra}]'"
        ) from None


def create_object_if_absent(path: ObjectPath, data: bytes, options: StoreOptions) -> bool:
    """Write ``data`` at ``path`` unless an object is there; False when one is (nothing written)."""
    if path.family == "s3":
        return _s3(path, data, options)
    if path.family == "gcs":
        return _gcs(path, data, options)
    return _azure(path, data, options)


def get_object(path: ObjectPath, options: StoreOptions) -> bytes | None:
    """The whole S3 object in one GET; None where boto3 is not installed (the caller reads through
    pyarrow, whose reader asks for the size with a HEAD first: two requests per log file)."""
    if path.family != "s3" or importlib.util.find_spec("boto3") is None:
        return None
    client = _s3_client(path, options)
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        body = client.get_object(Bucket=path.bucket, Key=path.key)["Body"]
        return bytes(body.read())
    except ClientError as e:
        code = str(e.response.get("Error", {}).get("Code", ""))
        if code in {"NoSuchKey", "404", "NotFound"}:
            raise FileNotFoundError(2, f"{path} does not exist", str(path)) from None
        raise OSError(f"cannot read {path}: {e}") from e
    except BotoCoreError as e:  # no connection, bad credentials setup, ...: an I/O error like pyarrow's
        raise OSError(f"cannot read {path}: {e}") from e


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported (a dotted name whose parent package is absent is not)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def list_objects_after(
    directory: ObjectPath, start_after: str, options: StoreOptions
) -> list[tuple[str, int]] | None:
    """(name, size) of the objects directly under ``directory`` whose names sort after
    ``start_after``, asked of the store from that key on: S3 ``ListObjectsV2`` with ``StartAfter``,
    GCS ``list_blobs`` with ``start_offset``. None where the store has no such listing (Azure) or its
    SDK is not installed: the caller lists the whole directory instead.

    ``FileNotFoundError`` when nothing is under ``directory`` at all (as a full listing raises), so
    an empty answer means only that nothing is new."""
    prefix = directory.key + "/" if directory.key else ""
    if directory.family == "s3" and importlib.util.find_spec("boto3") is not None:
        from botocore.exceptions import BotoCoreError, ClientError

        client = _s3_client(directory, options)
        out: list[tuple[str, int]] = []
        try:
            pages = client.get_paginator("list_objects_v2").paginate(
                Bucket=directory.bucket, Prefix=prefix, Delimiter="/", StartAfter=prefix + start_after
            )
            for page in pages:
                out.extend(
                    (str(o["Key"])[len(prefix) :], int(o.get("Size", 0))) for o in page.get("Contents", [])
                )
            if not out:
                probe = client.list_objects_v2(Bucket=directory.bucket, Prefix=prefix, MaxKeys=1)
                if not probe.get("KeyCount"):
                    raise FileNotFoundError(2, f"{directory} does not exist", str(directory))
        except ClientError as e:
            raise OSError(f"cannot list {directory}: {e}") from e
        except BotoCoreError as e:
            raise OSError(f"cannot list {directory}: {e}") from e
        return [(n, s) for n, s in out if n and "/" not in n and not n.startswith(".")]
    if directory.family == "gcs" and _installed("google.cloud.storage"):
        client = _gcs_client(directory, options)
        blobs = list(
            client.list_blobs(
                directory.bucket, prefix=prefix, delimiter="/", start_offset=prefix + start_after
            )
        )
        if not blobs and not list(client.list_blobs(directory.bucket, prefix=prefix, max_results=1)):
            raise FileNotFoundError(2, f"{directory} does not exist", str(directory))
        named = ((str(b.name)[len(prefix) :], int(b.size or 0)) for b in blobs)
        return [(n, s) for n, s in named if n and "/" not in n and not n.startswith(".")]
    return None


def _s3_client(path: ObjectPath, options: StoreOptions) -> Any:
    _, kw = filesystem_kwargs(path, options)
    key = ("s3", tuple(sorted((k, repr(v)) for k, v in kw.items())))
    return cached_client(key, lambda: _new_s3_client(kw))


def _new_s3_client(kw: dict[str, Any]) -> Any:
    boto3 = _sdk("s3")
    from botocore.config import Config

    endpoint = None
    if "endpoint_override" in kw:
        endpoint = f"{kw.get('scheme', 'https')}://{kw['endpoint_override']}"
    addressing = "virtual" if kw.get("force_virtual_addressing") or endpoint is None else "path"
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=kw.get("access_key"),
        aws_secret_access_key=kw.get("secret_key"),
        aws_session_token=kw.get("session_token"),
        region_name=kw.get("region"),
        config=Config(s3={"addressing_style": addressing}),
    )


def _s3(path: ObjectPath, data: bytes, options: StoreOptions) -> bool:
    client = _s3_client(path, options)
    from botocore.exceptions import ClientError

    try:
        client.put_object(Bucket=path.bucket, Key=path.key, Body=data, IfNoneMatch="*")
    except ClientError as e:
        code = str(e.response.get("Error", {}).get("Code", ""))
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in {"PreconditionFailed", "ConditionalRequestConflict"} or status in (409, 412):
            return False
        raise OSError(f"cannot create {path}: {e}") from e
    return True


def delete_objects(paths: list[ObjectPath], options: StoreOptions) -> int:
    """Delete the objects at ``paths`` (all in one bucket/container); how many the store removed.

    Missing objects are not errors. S3 counts every key it was asked to delete (it reports a missing
    key as deleted); GCS and Azure count only objects that existed.
    """
    if not paths:
        return 0
    first = paths[0]
    if first.family == "s3":
        client = _s3_client(first, options)
        deleted = 0
        for i in range(0, len(paths), 1000):
            chunk = paths[i : i + 1000]
            response = client.delete_objects(
                Bucket=first.bucket, Delete={"Objects": [{"Key": p.key} for p in chunk], "Quiet": False}
            )
            errors = response.get("Errors") or []
            if errors:
                raise OSError(f"cannot delete {len(errors)} object(s) of {first.bucket}: {errors[:3]}")
            deleted += len(response.get("Deleted") or [])
        return deleted
    if first.family == "gcs":
        from google.api_core.exceptions import NotFound

        bucket = _gcs_client(first, options).bucket(first.bucket)
        deleted = 0
        for p in paths:
            try:
                bucket.blob(p.key).delete()
                deleted += 1
            except NotFound:
                pass
        return deleted
    from azure.core.exceptions import ResourceNotFoundError

    deleted = 0
    for p in paths:
        try:
            _azure_client(p, options).delete_blob()
            deleted += 1
        except ResourceNotFoundError:
            pass
    return deleted


def _gcs_client(path: ObjectPath, options: StoreOptions) -> Any:
    storage = _sdk("gcs")
    _, kw = filesystem_kwargs(path, options)
    client_kwargs: dict[str, Any] = {}
    if "project_id" in kw:
        client_kwargs["project"] = kw["project_id"]
    if "endpoint_override" in kw:
        client_kwargs["client_options"] = {"api_endpoint": f"{kw['scheme']}://{kw['endpoint_override']}"}
    if kw.get("anonymous"):
        from google.auth.credentials import AnonymousCredentials

        client_kwargs["credentials"] = AnonymousCredentials()
    return storage.Client(**client_kwargs)


def _gcs(path: ObjectPath, data: bytes, options: StoreOptions) -> bool:
    client = _gcs_client(path, options)
    from google.api_core.exceptions import PreconditionFailed

    blob = client.bucket(path.bucket).blob(path.key)
    try:
        blob.upload_from_string(data, if_generation_match=0)
    except PreconditionFailed:
        return False
    return True


def _azure_client(path: ObjectPath, options: StoreOptions) -> Any:
    blob_mod = _sdk("azure")
    _, kw = filesystem_kwargs(path, options)
    account = kw["account_name"]
    conn = parse_connection_string(options.get("connection_string") or "")
    if conn.get("BlobEndpoint") and conn.get("AccountName", account) == account:
        account_url = conn["BlobEndpoint"]
    elif str(kw.get("blob_storage_authority", ".")).startswith(".") or "blob_storage_authority" not in kw:
        suffix = kw.get("blob_storage_authority", ".blob.core.windows.net")
        account_url = f"{kw.get('blob_storage_scheme', 'https')}://{account}{suffix}"
    else:
        scheme, host = endpoint_parts(kw["blob_storage_authority"], kw.get("blob_storage_scheme") != "http")
        account_url = f"{scheme}://{host}/{account}"
    credential: Any
    if "account_key" in kw:
        credential = {"account_name": account, "account_key": kw["account_key"]}
    elif "sas_token" in kw:
        credential = kw["sas_token"]
    elif "client_secret" in kw:
        from azure.identity import ClientSecretCredential

        credential = ClientSecretCredential(kw["tenant_id"], kw["client_id"], kw["client_secret"])
    else:
        try:
            from azure.identity import DefaultAzureCredential
        except ImportError:
            raise SetupError(
                "no Azure account key, SAS token or client secret is configured and azure-identity is "
                "not installed for the default credential chain: pip install azure-identity"
            ) from None
        credential = DefaultAzureCredential()
    return blob_mod.BlobClient(account_url, path.bucket, path.key, credential=credential)


def _azure(path: ObjectPath, data: bytes, options: StoreOptions) -> bool:
    client = _azure_client(path, options)
    from azure.core.exceptions import ResourceExistsError

    try:
        client.upload_blob(data, overwrite=False)
    except ResourceExistsError:
        return False
    return True
