"""A cache of stage outputs, keyed by a hash of what made them.

An entry is a folder ``<root>/<stage>-<key>``, where ``key`` hashes a
canonical JSON of the stage's inputs and :obj:`FORMAT_VERSION`. Its
``manifest.json`` lists every file's relative path, byte size, sha256 and,
for Parquet files, row count, with the inputs that made the key (see
:mod:`components.storage.manifest`). An entry is trusted only when its files
match the manifest exactly.

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
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from components.storage.location import Location, node_scratch_dir
from components.storage.manifest import (
    FILES_IN,
    FORMAT_VERSION,
    MANIFEST,
    digest,
    files_digest,
    files_location,
    new_manifest,
    read_manifest,
    remote_problem,
    same_inputs,
    verify,
    write_manifest,
)
from plnlp_core.data.datasets import cache_dir
from plnlp_core.data.publishing import STALE, owner_id, publish, remove_stale_scratch, scratch_path
from plnlp_core.errors import PLNLPError


@dataclass(frozen=True)
class CacheEntry:
    """A verified entry: its folder and what its ``manifest.json`` holds."""

    location: Location
    manifest: dict

    @property
    def path(self) -> Path:
        """The folder of a local entry."""
        return self.location.local_path()

    @property
    def digest(self) -> str:
        """A sha256 of the entry's files (paths, sizes, contents): equal
        outputs have equal digests whatever inputs made them."""
        return files_digest(self.manifest)

    def parquet_rows(self) -> int:
        """Rows of all the entry's Parquet files together."""
        return sum(f.get("rows", 0) for f in self.manifest["files"].values())

    def read_text(self, name: str) -> str:
        """The entry's file ``name``."""
        return (files_location(self.location, self.manifest) / name).read_text()


def stage_cache_root(work_dir: Location | None = None) -> Location:
    """Where entries live: ``<work_dir>/stages`` when ``--work-dir`` is
    given (storage every node sees: a shared folder or object storage),
    else ``cache_dir() / "stages"``."""
    return (work_dir or Location(cache_dir())) / "stages"


def cache_key(stage: str, inputs: Mapping) -> str:
    """The hex key of ``stage`` run on ``inputs`` (JSON values only)."""
    return digest({"format": FORMAT_VERSION, "stage": stage, "inputs": inputs})[:24]


def cached(root: Location, stage: str, inputs: Mapping,
           write: Callable[[Path], object]) -> CacheEntry:
    """The entry of ``stage`` on ``inputs`` under ``root``: reused when it
    verifies, else built by ``write(folder)`` (see :func:`build`). Says
    which on stdout, one line."""
    return reuse(root, stage, inputs) or build(root, stage, inputs, write)


def reuse(root: Location, stage: str, inputs: Mapping) -> CacheEntry | None:
    """:func:`lookup`, saying on stdout when the entry is reused."""
    entry = lookup(root, stage, inputs)
    if entry is not None:
        print(f"reusing cached {stage} output {entry.location.uri}", flush=True)
    return entry


def lookup(root: Location, stage: str, inputs: Mapping) -> CacheEntry | None:
    """The entry of ``stage`` on ``inputs`` if there is one and every file
    matches its manifest; an entry that does not is removed, with one line
    saying why, and ``None`` is returned. (In object storage the files'
    sizes are checked here, their sha256 when a node copies them.)"""
    folder = root / f"{stage}-{cache_key(stage, inputs)}"
    if not folder.is_local:
        return _lookup_remote(folder, stage, inputs)
    path = folder.local_path()
    try:
        identity = _identity(path)
    except FileNotFoundError:
        return None
    problem, manifest = verify(path)
    if problem is None and same_inputs(manifest, inputs):
        return CacheEntry(folder, manifest)
    problem = problem or "its manifest names other inputs"
    print(f"cached {stage} output {path} is not trusted ({problem}); removing it", flush=True)
    _discard(path, identity)
    return None


def build(root: Location, stage: str, inputs: Mapping,
          write: Callable[[Path], object]) -> CacheEntry:
    """Runs ``write(folder)`` in a scratch folder, writes its manifest and
    publishes it as the entry. If another process published its copy
    first, this one is discarded and that entry returned; if ``write``
    raises, nothing is left."""
    folder = root / f"{stage}-{cache_key(stage, inputs)}"
    print(f"building {stage} output {folder.uri}", flush=True)
    if not folder.is_local:
        return _build_remote(folder, stage, inputs, write)
    path = folder.local_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_scratch(path)
    manifest = {}

    def write_entry(scratch: Path) -> None:
        write(scratch)
        manifest.update(new_manifest(stage, path.name, inputs, scratch))
        write_manifest(scratch / MANIFEST, manifest)

    if not publish(path, write_entry, complete=lambda entry: (entry / MANIFEST).is_file()):
        print(f"reusing cached {stage} output {path} (another builder finished first)",
              flush=True)
        return CacheEntry(folder, json.loads((path / MANIFEST).read_text()))
    return CacheEntry(folder, manifest)


def local_entry(folder: Location) -> Path:
    """The entry at ``folder`` as a local folder: itself when local;
    for one in object storage, this node's copy of it (see
    :func:`components.storage.location.node_scratch_dir`), made once per content,
    every file checked against its sha256. A builder replacing the entry
    meanwhile is met by reading its manifest again, once."""
    if folder.is_local:
        return folder.local_path()
    for attempt in (1, 2):
        manifest = read_manifest(folder)
        if manifest is None:
            raise PLNLPError(f"{folder.uri} holds no stage output ({MANIFEST} is missing); "
                             "run the pipeline again to rebuild it.")
        copy = node_scratch_dir() / "entries" / f"{folder.name}-{files_digest(manifest)[:16]}"
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
    files_location(folder, manifest).download(scratch)
    write_manifest(scratch / MANIFEST, manifest)
    problem, _ = verify(scratch)
    if problem is not None:
        raise _Mismatch(problem)


def _lookup_remote(folder: Location, stage: str, inputs: Mapping) -> CacheEntry | None:
    manifest = read_manifest(folder)
    if manifest is None:
        return None
    problem = remote_problem(folder, manifest) or (
        None if same_inputs(manifest, inputs) else "its manifest names other inputs")
    if problem is None:
        return CacheEntry(folder, manifest)
    print(f"cached {stage} output {folder.uri} is not trusted ({problem}); removing it",
          flush=True)
    if read_manifest(folder) == manifest:  # not replaced by a builder meanwhile
        folder.filesystem.delete_file((folder / MANIFEST).path)
        if manifest.get(FILES_IN):
            (folder / manifest[FILES_IN]).remove()
    return None


def _build_remote(folder: Location, stage: str, inputs: Mapping,
                  write: Callable[[Path], object]) -> CacheEntry:
    attempt = f"attempt-{owner_id()}"
    with tempfile.TemporaryDirectory(prefix="plnlp-build-", dir=node_scratch_dir()) as scratch:
        write(Path(scratch))
        manifest = {**new_manifest(stage, folder.name, inputs, Path(scratch)), FILES_IN: attempt}
        (folder / attempt).upload(Path(scratch))
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
    kept = read_manifest(folder)
    if kept and kept.get(FILES_IN) != attempt:  # another builder's manifest came after
        (folder / attempt).remove()
        print(f"reusing cached {stage} output {folder.uri} (another builder finished first)",
              flush=True)
        return CacheEntry(folder, kept)
    return CacheEntry(folder, manifest)


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
