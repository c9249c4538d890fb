"""Where a dataset or a source lives: a local folder or an object-store prefix.

:class:`Store` is the one place that touches a file system for the dataset
layer: a local path (plain ``os``/``pathlib``, with ``fsync`` and rename for
atomic writes) or an object-store prefix: S3 (``s3://``, ``s3a://``) or
Azure Data Lake / Blob Storage (``abfss://container@account.dfs.core.windows.net/…``,
``abfs://``), through pyarrow's file systems. An object store has no atomic
rename, so a remote write is one PUT at its final key (readers see the whole
object or nothing), and "create only if absent" is a conditional PUT
(``If-None-Match: *``, through boto3 or azure-storage-blob) for the commit
record and the lock.

Connection settings come from the standard environment variables (``AWS_*``;
``AZURE_STORAGE_*``) of the process that opens the store (the Spark driver);
they travel with the store to Spark tasks, so executors need no settings of
their own.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.parquet as pq

from ocp_analytics.exceptions import DatasetError, MissingExtraError, hint

S3_SCHEMES = ("s3", "s3a", "s3n")
AZURE_SCHEMES = ("abfss", "abfs")
REMOTE = ("s3://", "abfss://")  # the schemes a Store's uri is written in
# environment variable -> (pyarrow S3FileSystem argument, polars storage option).
# Where two variables give one setting the later one wins, as in the AWS SDKs:
# AWS_REGION over AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 over AWS_ENDPOINT_URL.
_S3_ENV = {
    "AWS_ACCESS_KEY_ID": ("access_key", "aws_access_key_id"),
    "AWS_SECRET_ACCESS_KEY": ("secret_key", "aws_secret_access_key"),
    "AWS_SESSION_TOKEN": ("session_token", "aws_session_token"),
    "AWS_DEFAULT_REGION": ("region", "aws_region"),
    "AWS_REGION": ("region", "aws_region"),
    "AWS_ENDPOINT_URL": ("endpoint_override", "aws_endpoint_url"),
    "AWS_ENDPOINT_URL_S3": ("endpoint_override", "aws_endpoint_url"),
}
# environment variable -> polars storage option (pyarrow's arguments are built below)
_AZURE_ENV = {
    "AZURE_STORAGE_ACCOUNT_KEY": "azure_storage_account_key",
    "AZURE_STORAGE_SAS_TOKEN": "azure_storage_sas_token",
    "AZURE_STORAGE_ENDPOINT": "azure_storage_endpoint",  # emulators, sovereign clouds
}


def _s3_settings(options: tuple[tuple[str, str], ...], column: int) -> dict[str, str]:
    """The S3 settings as pyarrow (``column`` 0) or polars (1) names them, precedence applied."""
    return {_S3_ENV[env][column]: value for env, value in options}


def _needs(package: str, why: str, extra: str) -> MissingExtraError:
    return MissingExtraError(
        hint(f"{why} needs {package}.", f"pip install 'ocp-analytics[{extra}]'")
    )


def _synced(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` and flush it to disk."""
    with path.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _unsupported(text: str, scheme: str) -> DatasetError:
    return DatasetError(
        hint(
            f"{text!r}: the scheme {scheme!r} is not read or written directly; "
            "local paths, file: URIs, s3:// (s3a://) and abfss:// (abfs://) are.",
            "for gs:// or hdfs://, mount the store (gcsfuse, an HDFS NFS gateway, a "
            "Databricks /dbfs or /Volumes path) and pass the mounted path; see "
            "docs/spark.md.",
        )
    )


@dataclass(frozen=True)
class Store:
    """A local folder or an S3 prefix, and the few operations the dataset needs.

    Parameters
    ----------
    uri
        A local path, ``s3://bucket/prefix`` (``s3a://`` is read as ``s3://``)
        or ``abfss://container@account.dfs.core.windows.net/prefix``.
    options
        Connection settings (from the ``AWS_*`` or ``AZURE_STORAGE_*``
        variables when made by :func:`store`); empty for local paths.

    Examples
    --------
    >>> s = store("runs.dataset")
    >>> (s.remote, s.child("runs", "a.parquet").uri)
    (False, 'runs.dataset/runs/a.parquet')
    >>> r = Store("s3://bucket/runs.dataset")
    >>> (r.remote, r.child("_batches").fs_path)
    (True, 'bucket/runs.dataset/_batches')
    >>> Store("abfss://c@acct.dfs.core.windows.net/runs.dataset").fs_path
    'c/runs.dataset'
    """

    uri: str
    options: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @property
    def remote(self) -> bool:
        """True for an object-store prefix."""
        return self.uri.startswith(REMOTE)

    @property
    def azure(self) -> bool:
        """True for an Azure prefix."""
        return self.uri.startswith("abfss://")

    @property
    def _head(self) -> str:
        """``s3://`` or ``abfss://container@host``: what precedes the path."""
        if not self.azure:
            return "s3://"
        container_at_host = self.uri.removeprefix("abfss://").split("/", 1)[0]
        return f"abfss://{container_at_host}"

    @property
    def name(self) -> str:
        """The last part of the path."""
        return self.uri.rstrip("/").rsplit("/", 1)[-1]

    @property
    def fs_path(self) -> str:
        """The path as pyarrow's file system names it (``bucket/key``, ``container/key``)."""
        if not self.remote:
            return self.uri
        if not self.azure:
            return self.uri.removeprefix("s3://")
        container = self._head.removeprefix("abfss://").split("@", 1)[0]
        return container + self.uri.removeprefix(self._head)

    def _at(self, fs_path: str) -> Store:
        """The store of another path of the same file system."""
        if not self.azure:
            return Store("s3://" + fs_path, self.options)
        return Store(self._head + "/" + fs_path.split("/", 1)[1], self.options)

    @property
    def path(self) -> Path:
        """The local path (local stores only)."""
        assert not self.remote, self.uri
        return Path(self.uri)

    def child(self, *parts: str) -> Store:
        """The store ``parts`` below this one."""
        if self.remote:
            return Store("/".join([self.uri.rstrip("/"), *parts]), self.options)
        return Store(str(Path(self.uri, *parts)), self.options)

    def __str__(self) -> str:
        return self.uri

    # --- connection ------------------------------------------------------------

    @property
    def filesystem(self) -> Any:
        """pyarrow's file system for this store (remote stores only)."""
        if self.azure:
            return _azure_filesystem(self._account, self.options)
        return _s3_filesystem(self.options)

    @property
    def _account(self) -> str:
        return self._head.split("@", 1)[1].split(".", 1)[0]

    def storage_options(self) -> dict[str, str] | None:
        """What polars' cloud readers need (``None`` for local paths)."""
        if not self.remote:
            return None
        if self.azure:
            found = dict(self.options)
            out = {"azure_storage_account_name": self._account}
            out |= {_AZURE_ENV[k]: v for k, v in found.items() if k in _AZURE_ENV}
            if found.get("AZURE_STORAGE_ENDPOINT", "").startswith("http://"):
                out["azure_allow_http"] = "true"
            return out
        out = _s3_settings(self.options, 1)
        if out.get("aws_endpoint_url", "").startswith("http://"):
            out["aws_allow_http"] = "true"
        return out

    # --- reading -------------------------------------------------------------

    def _info(self) -> Any:
        return self.filesystem.get_file_info(self.fs_path)

    def is_file(self) -> bool:
        """True when this is an existing file (object)."""
        if not self.remote:
            return self.path.is_file()
        from pyarrow.fs import FileType

        return bool(self._info().type == FileType.File)

    def is_dir(self) -> bool:
        """True when this is a folder (a prefix holding objects)."""
        if not self.remote:
            return self.path.is_dir()
        from pyarrow.fs import FileType

        return bool(self._info().type == FileType.Directory)

    def exists(self) -> bool:
        """True when a file or folder is there."""
        if not self.remote:
            return self.path.exists()
        from pyarrow.fs import FileType

        return bool(self._info().type != FileType.NotFound)

    def size(self) -> int:
        """The file's size in bytes."""
        if not self.remote:
            return self.path.stat().st_size
        return int(self._info().size)

    def names(self) -> list[str]:
        """Names directly below this folder (empty when there is none)."""
        if not self.remote:
            return [p.name for p in self.path.iterdir()] if self.path.is_dir() else []
        from pyarrow.fs import FileSelector

        infos = self.filesystem.get_file_info(FileSelector(self.fs_path, allow_not_found=True))
        return [i.base_name for i in infos]

    def files(self) -> Iterator[Store]:
        """Every file below this folder, at any depth, sorted by path."""
        if not self.remote:
            for p in sorted(self.path.rglob("*")):
                if p.is_file():
                    yield Store(str(p), self.options)
            return
        from pyarrow.fs import FileSelector, FileType

        sel = FileSelector(self.fs_path, recursive=True, allow_not_found=True)
        infos = self.filesystem.get_file_info(sel)
        for info in sorted(infos, key=lambda i: i.path):
            if info.type == FileType.File:
                yield self._at(info.path)

    def open(self) -> IO[bytes]:
        """The file's bytes, as a seekable binary file."""
        if not self.remote:
            return self.path.open("rb")
        return self.filesystem.open_input_file(self.fs_path)

    def read_bytes(self) -> bytes:
        """The whole file."""
        with self.open() as f:
            return f.read()

    # --- writing ---------------------------------------------------------------

    def mkdir(self) -> None:
        """Create the folder (no-op on S3, where folders are key prefixes)."""
        if not self.remote:
            self.path.mkdir(parents=True, exist_ok=True)

    def write_bytes(self, data: bytes) -> None:
        """Write a whole file atomically: temporary name + fsync + rename, or one PUT."""
        if self.remote:
            with self.filesystem.open_output_stream(self.fs_path, compression=None) as f:
                f.write(data)
            return
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        _synced(tmp, data)
        os.replace(tmp, self.path)

    def write_parquet(
        self, table: pa.Table, *, temporary: str = "", options: dict[str, Any] | None = None
    ) -> None:
        """Write a Parquet file atomically (zstd): temporary name + rename, or one PUT.

        ``temporary`` names the local temporary file (default ``.NAME.tmp``);
        ``options`` go to :func:`pyarrow.parquet.write_table` (dictionary and
        statistics columns, see :func:`ocp_analytics.schemas.parquet_options`).
        """
        kw = {"compression": "zstd", **(options or {})}
        if self.remote:
            pq.write_table(table, self.fs_path, filesystem=self.filesystem, **kw)
            return
        tmp = self.path.with_name(temporary or f".{self.path.name}.tmp")
        with tmp.open("wb") as f:  # a file, not a name: pyarrow would read "a:b" as a URI
            pq.write_table(table, f, **kw)
        os.replace(tmp, self.path)

    def create_exclusive(self, data: bytes) -> bool:
        """Write the file only if it does not exist; False when it does.

        Local: an exclusive create of a temporary file, then a hard link
        (fails if the name exists). S3: a conditional PUT (``If-None-Match``).
        """
        if self.azure:
            return _azure_put_if_absent(self, data)
        if self.remote:
            return _s3_put_if_absent(self, data)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        _synced(tmp, data)
        try:
            os.link(tmp, self.path)
        except FileExistsError:
            return False
        finally:
            tmp.unlink()
        return True

    def delete(self) -> None:
        """Delete the file (no error when it is gone)."""
        if not self.remote:
            self.path.unlink(missing_ok=True)
            return
        with contextlib.suppress(FileNotFoundError):
            self.filesystem.delete_file(self.fs_path)

    def delete_tree(self) -> None:
        """Delete the folder and everything below it (no error when it is gone)."""
        if not self.remote:
            shutil.rmtree(self.path, ignore_errors=True)
            return
        for f in list(self.files()):
            f.delete()

    def move_to(self, target: Store) -> None:
        """Rename a local file (object stores write final keys instead)."""
        assert not self.remote and not target.remote
        os.replace(self.path, target.path)


def store(path: str | Path | Store) -> Store:
    """The :class:`Store` of a path or URI; other schemes are refused with a hint.

    Examples
    --------
    >>> store("file:///tmp/a%20b").uri
    '/tmp/a b'
    >>> store("s3a://bucket/runs.dataset/").uri
    's3://bucket/runs.dataset'
    """
    if isinstance(path, Store):
        return path
    text = str(path)
    scheme = "" if isinstance(path, Path) else _scheme(text)
    if not scheme:
        return Store(text)
    parsed = urlparse(text)
    if scheme == "file":
        return Store(unquote(parsed.path))
    if scheme in S3_SCHEMES:
        if not parsed.netloc:
            raise DatasetError(hint(f"{text!r} names no bucket.", "write s3://BUCKET/PREFIX."))
        head, env = "s3", tuple(_S3_ENV)
    elif scheme in AZURE_SCHEMES:
        container, at, host = parsed.netloc.partition("@")
        if not (at and container and host):
            raise DatasetError(
                hint(
                    f"{text!r} names no container and account.",
                    "write abfss://CONTAINER@ACCOUNT.dfs.core.windows.net/PREFIX.",
                )
            )
        head, env = "abfss", tuple(_AZURE_ENV)
    else:
        raise _unsupported(text, scheme)
    key = parsed.path.strip("/")
    uri = f"{head}://{parsed.netloc}" + (f"/{key}" if key else "")
    return Store(uri, tuple((k, os.environ[k]) for k in env if os.environ.get(k)))


def _scheme(text: str) -> str:
    """The scheme of ``scheme://…`` (or ``file:``), lower case; "" for a local path.

    Only a scheme followed by ``://`` counts, so a local name holding a colon
    (``run:1.dataset``, ``C:\\data``) stays a path.

    Examples
    --------
    >>> _scheme("S3A://b/k"), _scheme("run:1.dataset"), _scheme("file:/tmp/x"), _scheme("a/b")
    ('s3a', '', 'file', '')
    """
    if text[:5].lower() == "file:":
        return "file"
    head, sep, _ = text.partition("://")
    return head.lower() if sep and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]+", head) else ""


def is_remote(path: str | Path) -> bool:
    """True when ``path`` is an object-store URI.

    Examples
    --------
    >>> is_remote("s3a://b/k"), is_remote("runs.dataset"), is_remote("file:///x")
    (True, False, False)
    """
    scheme = "" if isinstance(path, Path) else _scheme(str(path))
    return scheme in (*S3_SCHEMES, *AZURE_SCHEMES)


@cache
def _s3_filesystem(options: tuple[tuple[str, str], ...]) -> Any:
    from pyarrow.fs import S3FileSystem

    kwargs: dict[str, Any] = _s3_settings(options, 0)
    endpoint = kwargs.get("endpoint_override", "")
    if "://" in endpoint:
        kwargs["scheme"], _, kwargs["endpoint_override"] = endpoint.partition("://")
    return S3FileSystem(**kwargs)


def _s3_put_if_absent(target: Store, data: bytes) -> bool:
    try:
        import boto3
        from botocore.exceptions import ClientError
    except ImportError as exc:
        why = "writing a dataset on S3 (the conditional PUT of the commit record and the lock)"
        raise _needs("boto3", why, "s3") from exc
    found = _s3_settings(target.options, 0)
    client = boto3.client(
        "s3",
        aws_access_key_id=found.get("access_key"),
        aws_secret_access_key=found.get("secret_key"),
        aws_session_token=found.get("session_token"),
        region_name=found.get("region"),
        endpoint_url=found.get("endpoint_override"),
    )
    bucket, _, key = target.fs_path.partition("/")
    try:
        client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409"):
            return False
        raise
    return True


@cache
def _azure_filesystem(account: str, options: tuple[tuple[str, str], ...]) -> Any:
    from pyarrow.fs import AzureFileSystem

    found = dict(options)
    kwargs: dict[str, Any] = {"account_name": account}
    if "AZURE_STORAGE_ACCOUNT_KEY" in found:
        kwargs["account_key"] = found["AZURE_STORAGE_ACCOUNT_KEY"]
    if "AZURE_STORAGE_SAS_TOKEN" in found:
        kwargs["sas_token"] = found["AZURE_STORAGE_SAS_TOKEN"]
    if "AZURE_STORAGE_ENDPOINT" in found:  # http://host:port/account (an emulator)
        scheme, _, rest = found["AZURE_STORAGE_ENDPOINT"].partition("://")
        authority = rest.split("/", 1)[0]
        kwargs |= {
            "blob_storage_authority": authority,
            "dfs_storage_authority": authority,
            "blob_storage_scheme": scheme,
            "dfs_storage_scheme": scheme,
        }
    return AzureFileSystem(**kwargs)


def _azure_put_if_absent(target: Store, data: bytes) -> bool:
    try:
        from azure.core.exceptions import ResourceExistsError
        from azure.storage.blob import BlobServiceClient
    except ImportError as exc:
        why = "writing a dataset on Azure (the conditional PUT of the commit record and the lock)"
        raise _needs("azure-storage-blob", why, "azure") from exc
    found = dict(target.options)
    account = target._account
    url = found.get("AZURE_STORAGE_ENDPOINT") or f"https://{account}.blob.core.windows.net"
    credential: Any = found.get("AZURE_STORAGE_SAS_TOKEN")
    if "AZURE_STORAGE_ACCOUNT_KEY" in found:
        credential = {"account_name": account, "account_key": found["AZURE_STORAGE_ACCOUNT_KEY"]}
    container, _, blob = target.fs_path.partition("/")
    client = BlobServiceClient(url, credential=credential).get_blob_client(container, blob)
    try:
        client.upload_blob(data, overwrite=False)  # If-None-Match: *
    except ResourceExistsError:
        return False
    return True


def fsspec_filesystem(where: Store) -> Any:
    """An fsspec view of a remote store's pyarrow file system, for DuckDB to read through.

    ``duckdb.register_filesystem`` takes fsspec file systems: the SQL views
    then glob and read ``s3://…`` or ``abfss://…`` paths with the store's own
    client and settings (no DuckDB extension to install).
    """
    try:
        from fsspec.implementations.arrow import ArrowFSWrapper
    except ImportError as exc:
        extra = "azure" if where.azure else "s3"
        raise _needs("fsspec", "SQL over a dataset in an object store", extra) from exc

    class _Store(ArrowFSWrapper):
        protocol = "abfss" if where.azure else "s3"

        @classmethod
        def _strip_protocol(cls, path: Any) -> Any:
            # DuckDB passes back what a glob returned (``bucket/key``) or a URI;
            # both are named as pyarrow names them (see Store.fs_path).
            return Store(str(path)).fs_path.rstrip("/")

    return _Store(where.filesystem)
