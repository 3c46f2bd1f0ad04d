"""The layout of a training run's checkpoints, read by the ``train`` stage
(which writes them), the ``evaluate`` stage and ``--resume``.

A checkpoint folder holds each worker's :class:`plnlp_core.fit_state.FitState`,
``history.json`` (every epoch's metrics so far), ``shapes.json`` (the
model's parameter shapes), ``timing.json`` (``fit_seconds`` and the
worker's start-up marks) and, once validation has improved, ``best/``
with ``model.pt`` (a ``state_dict``) and ``best.json`` (its epoch and
metrics)."""
from pathlib import Path

import torch

from plnlp_core.datasets import cache_dir

CHECKPOINT_FILE = "model.pt"
BEST_FILE = "best.json"
BEST_DIR = "best"
HISTORY_FILE = "history.json"
SHAPES_FILE = "shapes.json"
TIMING_FILE = "timing.json"
CHECKPOINTS_TAG = "plnlp.checkpoints"


def checkpoint_root(work_dir: str | None) -> Path:
    """Where runs keep their training checkpoints: ``<work_dir>/runs`` (on a
    cluster, storage every node sees), else ``$PLNLP_CACHE_DIR/runs``."""
    return (Path(work_dir) if work_dir else cache_dir()) / "runs"


def model_shapes(state: dict[str, torch.Tensor]) -> dict[str, object]:
    """The parameter shapes of a model state, and its number of nodes."""
    shapes = {name: list(value.shape) for name, value in state.items()}
    return {"num_nodes": shapes["node_input.embedding.weight"][0]
            if "node_input.embedding.weight" in shapes else None, "shapes": shapes}
