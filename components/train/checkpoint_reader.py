"""The checkpoints a run's storage holds, as a reader finds them: which
epochs, and which of them every worker finished copying (each worker's
``files-<rank>.json`` lists the size of every file it wrote; the layout
is :mod:`components.train.checkpoint_writer`'). Reading needs no torch, so that
an interrupt's record and ``--resume`` read them before torch is loaded."""
import json
import re
from dataclasses import dataclass

import pyarrow.fs as pafs

from components.storage.location import Location

MANIFEST_FILE = "files-{rank}.json"
CHECKPOINT_PREFIX = "checkpoint_epoch_"


def checkpoint_name(epoch: int) -> str:
    """``checkpoint_epoch_000012``: the folder of epoch 12's checkpoint."""
    return f"{CHECKPOINT_PREFIX}{epoch:06d}"


def checkpoint_epoch(path: str) -> int | None:
    """The epoch of the checkpoint folder at ``path`` (its last part), or
    ``None`` for a folder :func:`checkpoint_name` did not name."""
    found = re.fullmatch(rf"{CHECKPOINT_PREFIX}(\d+)", path.rstrip("/").rsplit("/", 1)[-1])
    return int(found.group(1)) if found else None


@dataclass(frozen=True)
class StoredCheckpoint:
    """A checkpoint folder in storage.

    Attributes:
        epoch (int): The epoch it holds.
        path (str): Its path in the file system it was listed in.
        complete (bool): Whether every worker finished copying its part:
            each ``files-<rank>.json`` is there and every file it lists has
            the size it lists.
    """

    epoch: int
    path: str
    complete: bool


def stored_checkpoints(filesystem: pafs.FileSystem, folder: str,
                       world_size: int) -> list[StoredCheckpoint]:
    """The checkpoints of ``world_size`` workers under ``folder`` (a run's
    Ray Train storage folder), newest first. One listing, and the manifests
    of each folder; a folder is complete only if its manifests say so."""
    selector = pafs.FileSelector(folder, recursive=True, allow_not_found=True)
    sizes: dict[str, dict[str, int]] = {}
    base = folder.rstrip("/") + "/"
    for info in filesystem.get_file_info(selector):
        name, _, inner = info.path[len(base):].partition("/")
        if checkpoint_epoch(name) is None:
            continue
        files = sizes.setdefault(name, {})
        if info.type == pafs.FileType.File and inner:
            files[inner] = info.size
    return [StoredCheckpoint(checkpoint_epoch(name), base + name,
                             _complete(filesystem, base + name, files, world_size))
            for name, files in sorted(sizes.items(), reverse=True)]


def _complete(filesystem: pafs.FileSystem, path: str, sizes: dict[str, int],
              world_size: int) -> bool:
    for rank in range(world_size):
        manifest = MANIFEST_FILE.format(rank=rank)
        if manifest not in sizes:
            return False
        try:
            with filesystem.open_input_stream(f"{path}/{manifest}") as stream:
                listed = json.loads(stream.read())
        except (OSError, ValueError):  # gone, or cut short
            return False
        if any(sizes.get(name) != size for name, size in listed.items()):
            return False
    return True


def newest_complete(stored: list[StoredCheckpoint]) -> StoredCheckpoint | None:
    """The newest of ``stored`` (as :func:`stored_checkpoints` lists them,
    newest first) that every worker finished writing."""
    return next((found for found in stored if found.complete), None)


def resumable_epoch(storage: Location, world_size: int) -> int:
    """The epoch ``--resume`` goes on after: that of the newest checkpoint
    every worker finished writing in a run's checkpoints folder ``storage``
    (its ``plnlp.checkpoints`` tag; Ray Train's folder of the run lies
    inside), as a restarted worker chooses it; 0 if there is none."""
    filesystem = storage.filesystem
    selector = pafs.FileSelector(storage.path, allow_not_found=True)
    newest = [newest_complete(stored_checkpoints(filesystem, info.path, world_size))
              for info in filesystem.get_file_info(selector)
              if info.type == pafs.FileType.Directory]
    return max((found.epoch for found in newest if found is not None), default=0)


def newest_checkpoint(folder: Location, world_size: int) -> str:
    """The path of the newest checkpoint every worker finished writing under
    ``folder`` (a run's Ray Train storage folder); one must be there."""
    return newest_complete(stored_checkpoints(folder.filesystem, folder.path, world_size)).path
