"""Logs in object storage: `s3://bucket/prefix/…` URLs, prefixes and patterns → local copies read like any file.

Each object is streamed (a few MiB at a time, never whole in memory) into a private temporary folder
that lives as long as the process, keeping its file name (its .gz/.zst/.parquet ending picks the
reader; the results name it), so the readers stream it through DuckDB as they do a local file.
pyarrow's S3 client does the transfer: credentials and region come from the standard AWS sources
(environment, ~/.aws, instance role), an S3-compatible endpoint from AWS_ENDPOINT_URL_S3 or
AWS_ENDPOINT_URL (MinIO, Ceph, R2, a local moto server). No credential is ever echoed or stored.

  s3://bucket/daily/2026-11-16.parquet     one object
  s3://bucket/daily/                       the log files directly under the prefix
  s3://bucket/daily/*.parquet              a pattern (* ? [ ] within a path segment, ** across them)

Past what one machine holds, the same summaries are one SQL query away in a warehouse or MotherDuck:
see docs/pages/logs.md ("Logs beyond one file and one machine").
"""

from __future__ import annotations

import atexit
import fnmatch
import os
import re
import shutil
import tempfile
from pathlib import Path

from planner.logs.suffixes import LOG_SUFFIXES

__all__ = ["fetch", "is_remote"]

_CHUNK = 4 << 20
_GLOB = re.compile(r"[*?\[]")


def is_remote(item: str) -> bool:
    return str(item).lower().startswith("s3://")


def _filesystem():
    import pyarrow.fs as pafs

    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None
    options: dict = {}
    if endpoint:
        scheme, _, host = endpoint.partition("://")
        options = {"endpoint_override": host.rstrip("/") if host else endpoint, "scheme": scheme if host else "https"}
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        options["region"] = region
    return pafs.S3FileSystem(**options)


def _objects(fs, url: str) -> list[tuple[str, int]]:
    """(bucket/key, size) of the log objects `url` names, sorted; raises ValueError naming the URL."""
    import pyarrow.fs as pafs

    path = url[len("s3://") :]
    try:
        if _GLOB.search(path):
            base = path[: _GLOB.search(path).start()].rpartition("/")[0]  # type: ignore[union-attr]
            infos = fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
            regex = re.compile(fnmatch.translate(path).replace(".*", "[^/]*").replace("[^/]*[^/]*", ".*"))
            found = [(i.path, i.size) for i in infos if i.type == pafs.FileType.File and regex.fullmatch(i.path)]
            what = "the pattern matches no log object"
        else:
            info = fs.get_file_info(path.rstrip("/"))
            if info.type == pafs.FileType.File:
                return [(info.path, info.size)]
            if info.type == pafs.FileType.NotFound:
                raise ValueError(f"{url}: no such object or prefix")
            infos = fs.get_file_info(pafs.FileSelector(path.rstrip("/"), recursive=False))
            found = [(i.path, i.size) for i in infos if i.type == pafs.FileType.File]
            what = f"the prefix holds no log objects ({', '.join(LOG_SUFFIXES)})"
    except OSError as exc:
        raise ValueError(f"{url}: cannot list it ({_first_line(exc)})") from None
    found = sorted((p, s) for p, s in found if p.lower().endswith(LOG_SUFFIXES))
    if not found:
        raise ValueError(f"{url}: {what}")
    return found


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


_FOLDER: Path | None = None


def _folder() -> Path:
    """The process's private folder for fetched objects, removed at exit."""
    global _FOLDER
    if _FOLDER is None:
        _FOLDER = Path(tempfile.mkdtemp(prefix="ttft-planner-s3-"))
        atexit.register(shutil.rmtree, _FOLDER, True)
    return _FOLDER


def fetch(url: str, folder: Path | None = None) -> list[Path]:
    """Local copies of the log objects `url` names, in key order; raises ValueError naming the URL.

    Files keep the object's name; objects of the same name under different prefixes (daily folders) get
    the names of their folders in front (2026-11-16-requests.parquet).
    """
    fs = _filesystem()
    objects = _objects(fs, url)
    out_dir = folder or Path(tempfile.mkdtemp(dir=_folder()))  # one folder per URL: names never collide across URLs
    names = [key.rpartition("/")[2] for key, _ in objects]
    clash = {n for n in names if names.count(n) > 1}
    paths = []
    for (key, _size), name in zip(objects, names, strict=True):
        if name in clash:
            name = key.split("/")[-2] + "-" + name
        target = out_dir / name
        try:
            with fs.open_input_stream(key) as src, open(target, "wb") as dst:
                while chunk := src.read(_CHUNK):
                    dst.write(chunk)
        except OSError as exc:
            raise ValueError(f"s3://{key}: cannot read it ({_first_line(exc)})") from None
        paths.append(target)
    return paths
