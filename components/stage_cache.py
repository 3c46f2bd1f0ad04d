"""A cache of stage outputs, keyed by a hash of what made them.

An entry is a folder ``<root>/<stage>-<key>``, where ``key`` hashes a
canonical JSON of the stage's inputs and :obj:`FORMAT_VERSION`. Its
``manifest.json`` lists every file's relative path, byte size, sha256 and,
for Parquet files, row count, with the inputs that made the key. An entry is
trusted only when its files match the manifest exactly; it is written in a
scratch folder beside it and renamed into place once complete
(:func:`plnlp_core.publishing.publish`), so a partially written entry is
never visible under its final name, and of two processes building one key,
the one that renames second discards its copy.
"""
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from plnlp_core.datasets import cache_dir
from plnlp_core.errors import PLNLPError
from plnlp_core.publishing import STALE, publish, remove_stale_scratch, scratch_path

FORMAT_VERSION = 1
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class CacheEntry:
    """A verified entry: its folder and what its ``manifest.json`` holds."""

    path: Path
    manifest: dict

    @property
    def digest(self) -> str:
        """A sha256 of the entry's files (paths, sizes, contents): equal
        outputs have equal digests whatever inputs made them."""
        return _hash(self.manifest["files"])

    def parquet_rows(self) -> int:
        """Rows of all the entry's Parquet files together."""
        return sum(f.get("rows", 0) for f in self.manifest["files"].values())


def stage_cache_root(work_dir: str | None = None) -> Path:
    """Where entries live: ``<work_dir>/stages`` when ``--work-dir`` is
    given (storage every node sees), else ``cache_dir() / "stages"``."""
    return (Path(work_dir) if work_dir else cache_dir()) / "stages"


def cache_key(stage: str, inputs: Mapping) -> str:
    """The hex key of ``stage`` run on ``inputs`` (JSON values only)."""
    return _hash({"format": FORMAT_VERSION, "stage": stage, "inputs": inputs})[:24]


def cached(root: Path, stage: str, inputs: Mapping,
           write: Callable[[Path], object]) -> CacheEntry:
    """The entry of ``stage`` on ``inputs`` under ``root``: reused when it
    verifies, else built by ``write(folder)`` (see :func:`build`). Says
    which on stdout, one line."""
    return reuse(root, stage, inputs) or build(root, stage, inputs, write)


def reuse(root: Path, stage: str, inputs: Mapping) -> CacheEntry | None:
    """:func:`lookup`, saying on stdout when the entry is reused."""
    entry = lookup(root, stage, inputs)
    if entry is not None:
        print(f"reusing cached {stage} output {entry.path}", flush=True)
    return entry


def lookup(root: Path, stage: str, inputs: Mapping) -> CacheEntry | None:
    """The entry of ``stage`` on ``inputs`` if there is one and every file
    matches its manifest; an entry that does not is removed, with one line
    saying why, and ``None`` is returned."""
    path = Path(root) / f"{stage}-{cache_key(stage, inputs)}"
    try:
        identity = _identity(path)
    except FileNotFoundError:
        return None
    problem, manifest = verify(path)
    if problem is None and _canonical(manifest["inputs"]) == _canonical(inputs):
        return CacheEntry(path, manifest)
    problem = problem or "its manifest names other inputs"
    print(f"cached {stage} output {path} is not trusted ({problem}); removing it", flush=True)
    _discard(path, identity)
    return None


def build(root: Path, stage: str, inputs: Mapping,
          write: Callable[[Path], object]) -> CacheEntry:
    """Runs ``write(folder)`` in a scratch folder beside the entry, writes
    its manifest and renames it into place. If another process renamed its
    copy first, this one is discarded and that entry returned; if ``write``
    raises, nothing is left."""
    path = Path(root) / f"{stage}-{cache_key(stage, inputs)}"
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_scratch(path)
    print(f"building {stage} output {path}", flush=True)
    manifest = {}

    def write_entry(scratch: Path) -> None:
        write(scratch)
        manifest.update(format=FORMAT_VERSION, stage=stage, key=path.name, inputs=inputs,
                        files=describe_files(scratch))
        _write_json(scratch / MANIFEST, manifest)

    if not publish(path, write_entry, complete=lambda entry: (entry / MANIFEST).is_file()):
        print(f"reusing cached {stage} output {path} (another builder finished first)",
              flush=True)
        return CacheEntry(path, json.loads((path / MANIFEST).read_text()))
    return CacheEntry(path, manifest)


def verify(path: Path) -> tuple[str | None, dict]:
    """Checks every file under ``path`` against its ``manifest.json``;
    returns what is wrong (``None`` if nothing) and the manifest."""
    try:
        manifest = json.loads((path / MANIFEST).read_text())
        if manifest.get("format") != FORMAT_VERSION or "inputs" not in manifest \
                or not isinstance(manifest.get("files"), dict):
            return "its manifest has another format", manifest
    except (OSError, ValueError, AttributeError) as error:
        return f"{MANIFEST} is missing or unreadable: {type(error).__name__}", {}
    try:
        return _check_files(path, manifest["files"]), manifest
    except (OSError, LookupError, TypeError) as error:  # removed while checked, or garbled
        return f"its files could not be checked: {type(error).__name__}", manifest


def _check_files(path: Path, expected: dict[str, dict]) -> str | None:
    present = set(_relative_files(path))
    if present != set(expected):
        missing, extra = sorted(set(expected) - present), sorted(present - set(expected))
        return "; ".join([*(f"{name} is missing" for name in missing[:3]),
                          *(f"{name} is not in its manifest" for name in extra[:3])])
    for name, info in expected.items():
        size = (path / name).stat().st_size
        if size != info["size"]:
            return f"{name} is {size} bytes, not {info['size']}"
    digests = _sha256_all(path, list(expected))
    for name, info in expected.items():
        if digests[name] != info["sha256"]:
            return f"{name}'s sha256 differs from its manifest"
    return None


def describe_files(path: Path) -> dict[str, dict]:
    """``{relative path: {"size", "sha256"[, "rows"]}}`` of every file under
    ``path`` but the manifest; ``rows`` for Parquet files."""
    names = _relative_files(path)
    digests = _sha256_all(path, names)
    files = {}
    for name in names:
        info = {"size": (path / name).stat().st_size, "sha256": digests[name]}
        if name.endswith(".parquet"):
            info["rows"] = pq.ParquetFile(path / name).metadata.num_rows
        files[name] = info
    return files


def content_digest(path: Path) -> str:
    """:attr:`CacheEntry.digest` of the folder ``path``: from its manifest
    when it is an entry, else from its files."""
    manifest = Path(path) / MANIFEST
    if not manifest.exists():
        return _hash(describe_files(Path(path)))
    try:
        return _hash(json.loads(manifest.read_text())["files"])
    except (OSError, ValueError, KeyError) as error:
        raise PLNLPError(f"{manifest} is unreadable; delete {path} to rebuild it.") from error


def _relative_files(path: Path) -> list[str]:
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*")
                  if not p.is_dir() and p.relative_to(path).as_posix() != MANIFEST)


def _sha256_all(path: Path, names: list[str]) -> dict[str, str]:
    """sha256 of each file, several at a time (hashlib releases the GIL)."""
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        return dict(zip(names, pool.map(lambda name: _sha256(path / name), names), strict=True))


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _hash(value: object) -> str:
    return hashlib.sha256(_canonical(value).encode()).hexdigest()


def _write_json(path: Path, value: object) -> None:
    with path.open("w") as handle:
        json.dump(value, handle, indent=2, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())


def _identity(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_dev, stat.st_ino


def _discard(path: Path, identity: tuple[int, int]) -> None:
    """Moves ``path`` aside and removes it, unless it is no longer the
    folder that was checked (another process already replaced it)."""
    aside = scratch_path(path, STALE)
    try:
        if _identity(path) != identity:
            return
        os.replace(path, aside)
    except FileNotFoundError:  # another process discarded it first
        return
    shutil.rmtree(aside, ignore_errors=True)

