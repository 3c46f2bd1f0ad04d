"""An entry's ``manifest.json``: what a stage cache entry holds, and
whether its files match.

The manifest lists every file of the entry by its relative path, with its
byte size, sha256 and, for Parquet files, row count, beside the stage, the
key and the inputs that made it. A local entry is checked file by file
(:func:`verify`); one in object storage by its manifest and its files'
sizes (:func:`remote_problem`), its sha256 when a node copies it. What
the entry is keyed on, and how entries are found and built, is
:mod:`components.storage.stage_cache`'s.
"""
import hashlib
import json
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq

from components.storage.location import Location, storage_problem
from plnlp_core.errors import PLNLPError

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
FILES_IN = "files_in"
"""The manifest's key naming the attempt folder of an entry in object storage."""


def new_manifest(stage: str, name: str, inputs: Mapping, scratch: Path) -> dict:
    """The manifest of the entry ``name`` of ``stage`` on ``inputs``, whose
    files are under ``scratch``."""
    return {"format": FORMAT_VERSION, "stage": stage, "key": name, "inputs": inputs,
            "files": describe_files(scratch)}


def write_manifest(path: Path, manifest: dict) -> None:
    """Writes ``manifest`` to the local file ``path``, flushed to disk."""
    with path.open("w") as handle:
        json.dump(manifest, handle, indent=2, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())


def read_manifest(folder: Location) -> dict | None:
    """The manifest of the entry at ``folder``: ``None`` when it has none,
    ``{}`` when it is garbled."""
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


def files_location(folder: Location, manifest: dict) -> Location:
    """Where an entry's files are: its folder, or its attempt in object storage."""
    return folder / manifest[FILES_IN] if manifest.get(FILES_IN) else folder


def same_inputs(manifest: dict, inputs: Mapping) -> bool:
    """Whether ``manifest`` names ``inputs``."""
    return canonical(manifest["inputs"]) == canonical(inputs)


def remote_problem(folder: Location, manifest: dict) -> str | None:
    """What is wrong with an entry in object storage, judged by its
    manifest and its files' sizes; ``None`` if nothing."""
    if manifest.get("format") != FORMAT_VERSION or "inputs" not in manifest \
            or not isinstance(manifest.get("files"), dict) or not manifest.get(FILES_IN):
        return "its manifest has another format"
    present = {name: info.size for name, info in files_location(folder, manifest)
               .files().items()}
    for name, info in manifest["files"].items():
        if present.get(name) != info["size"]:
            return f"{name} is missing" if name not in present else \
                f"{name} is {present[name]} bytes, not {info['size']}"
    return None


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


def files_digest(manifest: dict) -> str:
    """A sha256 of the files ``manifest`` lists (paths, sizes, contents):
    equal outputs have equal digests whatever inputs made them."""
    return digest(manifest["files"])


def content_digest(folder: Location) -> str:
    """:func:`files_digest` of the folder ``folder``: from its manifest when
    it is an entry (local or in object storage), else from its files."""
    if not folder.is_local:
        manifest = read_manifest(folder)
        if not manifest or not isinstance(manifest.get("files"), dict):
            raise PLNLPError(f"{folder / MANIFEST} is missing or unreadable; run the "
                             "pipeline again to rebuild it.")
        return files_digest(manifest)
    path = folder.local_path()
    manifest = path / MANIFEST
    if not manifest.exists():
        return digest(describe_files(path))
    try:
        return digest(json.loads(manifest.read_text())["files"])
    except (OSError, ValueError, KeyError) as error:
        raise PLNLPError(f"{manifest} is unreadable; delete {path} to rebuild it.") from error


def canonical(value: object) -> str:
    """``value`` as canonical JSON: sorted keys, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def digest(value: object) -> str:
    """The hex sha256 of ``value``'s canonical JSON."""
    return hashlib.sha256(canonical(value).encode()).hexdigest()


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
