"""Helpers to record MLflow runs as the pipeline would, for the --resume
refusals of ``tests/pipelines/test_errors.py``."""
import json
from pathlib import Path

import mlflow
import yaml

from components.recording.tags import CHECKPOINTS_TAG
from components.train.checkpoint_writer import SHAPES_FILE
from plnlp_core.assembly import build_model
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS

CONFIG = PLNLPConfig(embedding_dim=8, hidden_channels=8, predictor_hidden=8)


def recorded_run(config: PLNLPConfig, status: str = "FAILED", checkpoint: Path | None = None
                 ) -> str:
    """A run as the pipeline records one, optionally with checkpoints."""
    mlflow.set_experiment("plnlp-ddi")
    with mlflow.start_run() as run:
        mlflow.log_params({"dataset": config.dataset, "runs": 1})
        mlflow.log_text(yaml.safe_dump(config.to_dict()), "config.yaml")
        if checkpoint is not None:
            mlflow.set_tag(CHECKPOINTS_TAG, str(checkpoint))
    mlflow.MlflowClient().set_terminated(run.info.run_id, status)
    return run.info.run_id


def shapes_checkpoint(tmp_path: Path, config: PLNLPConfig) -> Path:
    """A run's checkpoint folder holding the parameter shapes of ``config``'s model."""
    storage = tmp_path / "runs" / "some-run"
    checkpoint = storage / "checkpoint_1"
    checkpoint.mkdir(parents=True)
    model = build_model(config, DATASETS.get("ddi"), 50)
    shapes = {name: list(v.shape) for name, v in model.state_dict().items()}
    (checkpoint / SHAPES_FILE).write_text(json.dumps({"num_nodes": 50, "shapes": shapes}))
    return storage
