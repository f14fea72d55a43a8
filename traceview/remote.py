"""Object storage as a path: `s3://`, `gs://`, `az://` (and any other fsspec protocol) name a
trace, a job folder or a sweep as a local path does. universal_pathlib gives them pathlib's
reading API over fsspec, so the loader lists, peeks and streams them as it does local files
(fsspec reads a file in ranged blocks: nothing is downloaded whole before it is parsed).
Credentials and endpoints are the storage library's own (for S3, botocore's: AWS_PROFILE,
AWS_ENDPOINT_URL, ~/.aws)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, cast

from traceview.errors import TraceviewError

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# The library each protocol needs (fsspec names it too, in a longer message).
_LIBRARY = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs",
            "abfs": "adlfs", "abfss": "adlfs"}  # fmt: skip


# Per protocol, the file system's options: s3fs reads ahead in 50 MB blocks by default; the
# two readers of a 150 MB trace held 408 MB at that, 295 MB at 16 MB (ad hoc, moto's server).
_OPTIONS: dict[str, dict[str, object]] = {"s3": {"default_block_size": 16 << 20}}


def is_url(raw: str | Path) -> bool:
    """`raw` names a location by protocol (`s3://…`), not a local path."""
    return isinstance(raw, str) and _URL.match(raw) is not None


def as_path(raw: str | Path) -> Path:
    """A path as given (local or object storage), or the one a string names."""
    if not isinstance(raw, str):
        return raw
    return remote_path(raw) if is_url(raw) else Path(raw)


def is_remote(value: object) -> bool:
    """`value` is a path in object storage (universal_pathlib's, imported only when one is
    made)."""
    upath = sys.modules.get("upath")
    return upath is not None and isinstance(value, upath.UPath)


def local_only(raw: str | Path, why_local: str, instead: str) -> None:
    """Refuse a location in object storage where traceview writes, saying why it must be on a
    file system and what to do `instead`."""
    if is_url(raw):
        raise TraceviewError(f"{raw}: {why_local}, not in object storage: {instead}")


def remote_path(url: str) -> Path:
    """The object `url` names, with pathlib's reading API. Typed as Path: the loader uses only
    the methods both have (open, stat, iterdir, glob, is_file, is_dir, name, parent, /)."""
    protocol = url.split("://", 1)[0].lower()
    try:
        import fsspec
        from upath import UPath
    except ImportError:
        raise TraceviewError(
            f"{url}: reading object storage needs universal_pathlib and {_library(protocol)}: "
            f"pip install 'traceview[objects]'"
        ) from None
    try:
        fsspec.get_filesystem_class(protocol)  # its library, imported now: said if absent
        options: dict[str, Any] = _OPTIONS.get(protocol, {})
        return cast(Path, UPath(url, **options))
    except (ImportError, ValueError) as e:
        raise TraceviewError(
            f"{url}: cannot read {protocol}:// ({_first_line(e)}): pip install {_library(protocol)}"
        ) from None


def _library(protocol: str) -> str:
    return _LIBRARY.get(protocol, f"the fsspec library for {protocol}://")


def _first_line(e: BaseException) -> str:
    return (str(e).splitlines() or [type(e).__name__])[0]


# Where the storage libraries' own errors come from (a bucket, an endpoint, credentials):
# bad input, said in one line, never a bug.
_STORAGE_MODULES = ("botocore", "aiobotocore", "aiohttp", "s3fs", "gcsfs", "google", "adlfs",
                    "azure", "fsspec", "upath")  # fmt: skip


def storage_error(e: BaseException, where: object = None) -> TraceviewError | None:
    """The one-line error for what object storage said while `where` (if known) was read, or
    None for an error of another kind."""
    module = type(e).__module__.split(".")[0]
    if module not in _STORAGE_MODULES:
        return None
    return TraceviewError(
        f"{f'{where}: ' if where is not None else ''}object storage refused or could not be "
        f"reached ({type(e).__name__}: "
        f"{_first_line(e)}): check the bucket, the endpoint and the credentials (for S3: "
        "AWS_ENDPOINT_URL, AWS_PROFILE, ~/.aws)"
    )
