"""The layout of a training run's checkpoints, read by the ``train`` stage
(which writes them), the ``evaluate`` stage and ``--resume``.

A checkpoint folder holds each worker's :class:`plnlp_core.training.fit_state.FitState`,
``history.json`` (every epoch's metrics so far), ``shapes.json`` (the
model's parameter shapes), ``timing.json`` (``fit_seconds``, the worker's
start-up marks and ``epoch_ends``, when each epoch ended) and, once
validation has improved, ``best/`` with ``model.pt`` (a ``state_dict``) and
``best.json`` (its epoch and metrics). Each worker adds ``files-<rank>.json``,
the size of every file it wrote: a copy into storage is not atomic, and a
reader tells a checkpoint every worker finished from one a dying worker left
half-copied by them (:func:`stored_checkpoints`).

Epoch ``e``'s checkpoint is the folder :func:`checkpoint_name` names in the
run's Ray Train storage folder, whether or not its report has reached Train's
controller."""
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs
import torch

from components.artifacts import CHECKPOINT_FILE
from components.storage.location import Location
from plnlp_core.data.datasets import cache_dir
from plnlp_core.training.fit_state import FitState

BEST_FILE = "best.json"
BEST_DIR = "best"
HISTORY_FILE = "history.json"
SHAPES_FILE = "shapes.json"
TIMING_FILE = "timing.json"
MANIFEST_FILE = "files-{rank}.json"
CHECKPOINT_PREFIX = "checkpoint_epoch_"


def checkpoint_root(work_dir: Location | None) -> Location:
    """Where runs keep their training checkpoints: ``<work_dir>/runs`` (on a
    cluster, storage every node sees: a shared folder or object storage),
    else ``$PLNLP_CACHE_DIR/runs``."""
    return (work_dir or Location(cache_dir())) / "runs"


def model_shapes(state: dict[str, torch.Tensor]) -> dict[str, object]:
    """The parameter shapes of a model state, and its number of nodes."""
    shapes = {name: list(value.shape) for name, value in state.items()}
    return {"num_nodes": shapes["node_input.embedding.weight"][0]
            if "node_input.embedding.weight" in shapes else None, "shapes": shapes}


def write_checkpoint(directory: Path, state: FitState, rank: int,
                     history: list[dict[str, float]], timing: dict[str, object]) -> None:
    """Writes worker ``rank``'s training state into ``directory``; rank 0
    adds the history, shapes, timing and best model of the layout above;
    each rank ends with its manifest."""
    state.save(directory, rank)
    if rank == 0:
        (directory / HISTORY_FILE).write_text(json.dumps(history))
        (directory / SHAPES_FILE).write_text(json.dumps(model_shapes(state.model)))
        (directory / TIMING_FILE).write_text(json.dumps(timing))
        if state.best_state is not None:
            (directory / BEST_DIR).mkdir()
            torch.save(state.best_state, directory / BEST_DIR / CHECKPOINT_FILE)
            best = {"epoch": state.best_epoch, "metrics": state.best_metrics}
            (directory / BEST_DIR / BEST_FILE).write_text(json.dumps(best))
    _write_manifest(directory, rank)


def _write_manifest(directory: Path, rank: int) -> None:
    """``files-<rank>.json``: the size of every file in ``directory``
    (worker ``rank``'s part of a checkpoint)."""
    sizes = {path.relative_to(directory).as_posix(): path.stat().st_size
             for path in sorted(directory.rglob("*")) if path.is_file()}
    (directory / MANIFEST_FILE.format(rank=rank)).write_text(json.dumps(sizes))


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
