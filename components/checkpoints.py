"""The layout of a training run's checkpoints, read by the ``train`` stage
(which writes them), the ``evaluate`` stage and ``--resume``.

A checkpoint folder holds each worker's :class:`plnlp_core.fit_state.FitState`,
``history.json`` (every epoch's metrics so far), ``shapes.json`` (the
model's parameter shapes), ``timing.json`` (``fit_seconds`` and the
worker's start-up marks) and, once validation has improved, ``best/``
with ``model.pt`` (a ``state_dict``) and ``best.json`` (its epoch and
metrics)."""
import json
from pathlib import Path

import torch

from components.storage import Location, location
from plnlp_core.datasets import cache_dir
from plnlp_core.fit_state import FitState

CHECKPOINT_FILE = "model.pt"
BEST_FILE = "best.json"
BEST_DIR = "best"
HISTORY_FILE = "history.json"
SHAPES_FILE = "shapes.json"
TIMING_FILE = "timing.json"
CHECKPOINTS_TAG = "plnlp.checkpoints"


def checkpoint_root(work_dir: str | None) -> Location:
    """Where runs keep their training checkpoints: ``<work_dir>/runs`` (on a
    cluster, storage every node sees: a shared folder or object storage),
    else ``$PLNLP_CACHE_DIR/runs``."""
    return location(work_dir or cache_dir()) / "runs"


def model_shapes(state: dict[str, torch.Tensor]) -> dict[str, object]:
    """The parameter shapes of a model state, and its number of nodes."""
    shapes = {name: list(value.shape) for name, value in state.items()}
    return {"num_nodes": shapes["node_input.embedding.weight"][0]
            if "node_input.embedding.weight" in shapes else None, "shapes": shapes}


def write_checkpoint(directory: Path, state: FitState, rank: int,
                     history: list[dict[str, float]], timing: dict[str, object]) -> None:
    """Writes worker ``rank``'s training state into ``directory``; rank 0
    adds the history, shapes, timing and best model of the layout above."""
    state.save(directory, rank)
    if rank != 0:
        return
    (directory / HISTORY_FILE).write_text(json.dumps(history))
    (directory / SHAPES_FILE).write_text(json.dumps(model_shapes(state.model)))
    (directory / TIMING_FILE).write_text(json.dumps(timing))
    if state.best_state is not None:
        (directory / BEST_DIR).mkdir()
        torch.save(state.best_state, directory / BEST_DIR / CHECKPOINT_FILE)
        best = {"epoch": state.best_epoch, "metrics": state.best_metrics}
        (directory / BEST_DIR / BEST_FILE).write_text(json.dumps(best))
