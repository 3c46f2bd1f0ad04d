"""A cache of stage outputs, keyed by a hash of what made them.

An entry is a folder ``<root>/<stage>-<key>``, where ``key`` hashes a
canonical JSON of the stage's inputs and :obj:`FORMAT_VERSION`. Its
``manifest.json`` lists every file's relative path, byte size, sha256 and,
for Parquet files, row count, with the inputs that made the key. An entry is
trusted only when its files match the manifest exactly.

In a local folder (or one every node mounts) an entry is written in a
scratch folder beside it and renamed into place once complete
(:func:`plnlp_core.data.publishing.publish`), so a partially written entry is
never visible under its final name, and of two processes building one key,
the one that renames second discards its copy.

In object storage, which has no atomic rename, a builder writes the files in
a local scratch folder, uploads them under ``<entry>/<attempt>/`` (a name
of its own) and writes ``manifest.json``, naming that attempt, last: one
``PUT``, so a manifest is there whole or not at all, and it names only
files already uploaded. Two builders of one key upload to different
attempts; the manifest that stays names one of them, complete (the other's
files may stay behind, named by no manifest and never read). Readers go
through the manifest alone: :func:`local_entry` copies the entry to the
node's scratch folder once, checked against every sha256.
"""
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from components.storage.location import Location, location, node_scratch_dir, storage_problem
from plnlp_core.data.datasets import cache_dir
from plnlp_core.data.publishing import STALE, owner_id, publish, remove_stale_scratch, scratch_path
from plnlp_core.errors import PLNLPError

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
FILES_IN = "files_in"
"""The manifest's key naming the attempt folder of an entry in object storage."""


@dataclass(frozen=True)
class CacheEntry:
    """A verified entry: its folder and what its ``manifest.json`` holds."""

    location: Location
    manifest: dict

    @property
    def uri(self) -> str:
        return self.location.uri

    @property
    def path(self) -> Path:
        """The folder of a local entry."""
        return self.location.local_path()

    @property
    def digest(self) -> str:
        """A sha256 of the entry's files (paths, sizes, contents): equal
        outputs have equal digests whatever inputs made them."""
        return _hash(self.manifest["files"])

    def parquet_rows(self) -> int:
        """Rows of all the entry's Parquet files together."""
        return sum(f.get("rows", 0) for f in self.manifest["files"].values())

    def read_text(self, name: str) -> str:
        """The entry's file ``name``."""
        return (_files_location(self.location, self.manifest) / name).read_text()


def stage_cache_root(work_dir: str | None = None) -> Location:
    """Where entries live: ``<work_dir>/stages`` when ``--work-dir`` is
    given (storage every node sees: a shared folder or object storage),
    else ``cache_dir() / "stages"``."""
    return (location(work_dir) if work_dir else location(cache_dir())) / "stages"


def cache_key(stage: str, inputs: Mapping) -> str:
    """The hex key of ``stage`` run on ``inputs`` (JSON values only)."""
    return _hash({"format": FORMAT_VERSION, "stage": stage, "inputs": inputs})[:24]


def cached(root: "str | Path | Location", stage: str, inputs: Mapping,
           write: Callable[[Path], object]) -> CacheEntry:
    """The entry of ``stage`` on ``inputs`` under ``root``: reused when it
    verifies, else built by ``write(folder)`` (see :func:`build`). Says
    which on stdout, one line."""
    return reuse(root, stage, inputs) or build(root, stage, inputs, write)


def reuse(root: "str | Path | Location", stage: str, inputs: Mapping) -> CacheEntry | None:
    """:func:`lookup`, saying on stdout when the entry is reused."""
    entry = lookup(root, stage, inputs)
    if entry is not None:
        print(f"reusing cached {stage} output {entry.uri}", flush=True)
    return entry


def lookup(root: "str | Path | Location", stage: str, inputs: Mapping) -> CacheEntry | None:
    """The entry of ``stage`` on ``inputs`` if there is one and every file
    matches its manifest; an entry that does not is removed, with one line
    saying why, and ``None`` is returned. (In object storage the files'
    sizes are checked here, their sha256 when a node copies them.)"""
    folder = location(root) / f"{stage}-{cache_key(stage, inputs)}"
    if not folder.is_local:
        return _lookup_remote(folder, stage, inputs)
    path = folder.local_path()
    try:
        identity = _identity(path)
    except FileNotFoundError:
        return None
    problem, manifest = verify(path)
    if problem is None and _canonical(manifest["inputs"]) == _canonical(inputs):
        return CacheEntry(folder, manifest)
    problem = problem or "its manifest names other inputs"
    print(f"cached {stage} output {path} is not trusted ({problem}); removing it", flush=True)
    _discard(path, identity)
    return None


def build(root: "str | Path | Location", stage: str, inputs: Mapping,
          write: Callable[[Path], object]) -> CacheEntry:
    """Runs ``write(folder)`` in a scratch folder, writes its manifest and
    publishes it as the entry. If another process published its copy
    first, this one is discarded and that entry returned; if ``write``
    raises, nothing is left."""
    folder = location(root) / f"{stage}-{cache_key(stage, inputs)}"
    print(f"building {stage} output {folder.uri}", flush=True)
    if not folder.is_local:
        return _build_remote(folder, stage, inputs, write)
    path = folder.local_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_scratch(path)
    manifest = {}

    def write_entry(scratch: Path) -> None:
        write(scratch)
        manifest.update(_manifest(stage, path.name, inputs, scratch))
        _write_json(scratch / MANIFEST, manifest)

    if not publish(path, write_entry, complete=lambda entry: (entry / MANIFEST).is_file()):
        print(f"reusing cached {stage} output {path} (another builder finished first)",
              flush=True)
        return CacheEntry(folder, json.loads((path / MANIFEST).read_text()))
    return CacheEntry(folder, manifest)


def local_entry(directory: "str | Location") -> Path:
    """The entry at ``directory`` as a local folder: itself when local;
    for one in object storage, this node's copy of it (see
    :func:`components.storage.location.node_scratch_dir`), made once per content,
    every file checked against its sha256. A builder replacing the entry
    meanwhile is met by reading its manifest again, once."""
    folder = location(directory)
    if folder.is_local:
        return folder.local_path()
    for attempt in (1, 2):
        manifest = _read_manifest(folder)
        if manifest is None:
            raise PLNLPError(f"{folder.uri} holds no stage output ({MANIFEST} is missing); "
                             "run the pipeline again to rebuild it.")
        copy = node_scratch_dir() / "entries" / f"{folder.name}-{_hash(manifest['files'])[:16]}"
        if copy.is_dir():
            return copy
        copy.parent.mkdir(parents=True, exist_ok=True)
        try:
            publish(copy, lambda scratch, manifest=manifest: _download(folder, manifest, scratch))
            return copy
        except (OSError, _Mismatch) as error:
            if attempt == 2:
                raise PLNLPError(f"the stage output {folder.uri} could not be copied to this "
                                 f"node ({error}); run the pipeline again to rebuild it.") from None
    raise AssertionError("unreachable")


class _Mismatch(Exception):
    """A copied entry's files differ from its manifest."""


def _download(folder: Location, manifest: dict, scratch: Path) -> None:
    _files_location(folder, manifest).download(scratch)
    _write_json(scratch / MANIFEST, manifest)
    problem, _ = verify(scratch)
    if problem is not None:
        raise _Mismatch(problem)


def _files_location(folder: Location, manifest: dict) -> Location:
    """Where an entry's files are: its folder, or its attempt in object storage."""
    return folder / manifest[FILES_IN] if manifest.get(FILES_IN) else folder


def _read_manifest(folder: Location) -> dict | None:
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        return None
    except ValueError:
        return {}
    except OSError as error:
        raise PLNLPError(f"the stage cache {folder.uri} cannot be read: "
                         f"{storage_problem(error)}.") from None
    return manifest if isinstance(manifest, dict) else {}


def _lookup_remote(folder: Location, stage: str, inputs: Mapping) -> CacheEntry | None:
    manifest = _read_manifest(folder)
    if manifest is None:
        return None
    problem = _remote_problem(folder, manifest) or (
        None if _canonical(manifest["inputs"]) == _canonical(inputs)
        else "its manifest names other inputs")
    if problem is None:
        return CacheEntry(folder, manifest)
    print(f"cached {stage} output {folder.uri} is not trusted ({problem}); removing it",
          flush=True)
    if _read_manifest(folder) == manifest:  # not replaced by a builder meanwhile
        folder.filesystem.delete_file((folder / MANIFEST).path)
        if manifest.get(FILES_IN):
            (folder / manifest[FILES_IN]).remove()
    return None


def _remote_problem(folder: Location, manifest: dict) -> str | None:
    """What is wrong with an entry in object storage, judged by its
    manifest and its files' sizes; ``None`` if nothing."""
    if manifest.get("format") != FORMAT_VERSION or "inputs" not in manifest \
            or not isinstance(manifest.get("files"), dict) or not manifest.get(FILES_IN):
        return "its manifest has another format"
    present = {name: info.size for name, info in _files_location(folder, manifest)
               .files().items()}
    for name, info in manifest["files"].items():
        if present.get(name) != info["size"]:
            return f"{name} is missing" if name not in present else \
                f"{name} is {present[name]} bytes, not {info['size']}"
    return None


def _build_remote(folder: Location, stage: str, inputs: Mapping,
                  write: Callable[[Path], object]) -> CacheEntry:
    attempt = f"attempt-{owner_id()}"
    with tempfile.TemporaryDirectory(prefix="plnlp-build-", dir=node_scratch_dir()) as scratch:
        write(Path(scratch))
        manifest = {**_manifest(stage, folder.name, inputs, Path(scratch)), FILES_IN: attempt}
        (folder / attempt).upload(Path(scratch))
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
    kept = _read_manifest(folder)
    if kept and kept.get(FILES_IN) != attempt:  # another builder's manifest came after
        (folder / attempt).remove()
        print(f"reusing cached {stage} output {folder.uri} (another builder finished first)",
              flush=True)
        return CacheEntry(folder, kept)
    return CacheEntry(folder, manifest)


def _manifest(stage: str, name: str, inputs: Mapping, scratch: Path) -> dict:
    return {"format": FORMAT_VERSION, "stage": stage, "key": name, "inputs": inputs,
            "files": describe_files(scratch)}


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


def content_digest(directory: "str | Path | Location") -> str:
    """:attr:`CacheEntry.digest` of the folder ``directory``: from its
    manifest when it is an entry (local or in object storage), else from
    its files."""
    folder = location(directory)
    if not folder.is_local:
        manifest = _read_manifest(folder)
        if not manifest or not isinstance(manifest.get("files"), dict):
            raise PLNLPError(f"{folder / MANIFEST} is missing or unreadable; run the "
                             "pipeline again to rebuild it.")
        return _hash(manifest["files"])
    path = folder.local_path()
    manifest = path / MANIFEST
    if not manifest.exists():
        return _hash(describe_files(path))
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

