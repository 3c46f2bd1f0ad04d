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
half-copied by them
(:func:`components.train.checkpoint_reader.stored_checkpoints`).

Epoch ``e``'s checkpoint is the folder
:func:`~components.train.checkpoint_reader.checkpoint_name` names in the
run's Ray Train storage folder, whether or not its report has reached Train's
controller."""
import json
from pathlib import Path

import torch

from components.artifacts import CHECKPOINT_FILE
from components.storage.location import Location
from components.train.checkpoint_reader import MANIFEST_FILE
from plnlp_core.data.datasets import cache_dir
from plnlp_core.training.fit_state import FitState

BEST_FILE = "best.json"
BEST_DIR = "best"
HISTORY_FILE = "history.json"
SHAPES_FILE = "shapes.json"
TIMING_FILE = "timing.json"


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
