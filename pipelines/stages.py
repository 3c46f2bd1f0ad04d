"""The stages after ``load`` for one config, shared by the main job and the
sweep's trials: augment -> train -> evaluate, recorded in the active MLflow run."""
from pathlib import Path

import mlflow
import ray

from components.artifacts import DatasetArtifact
from components.augment import augment
from components.evaluate import evaluate_checkpoint
from components.tracking import log_training
from components.train import WorkerGroup, train
from plnlp_core.config import PLNLPConfig


def train_and_evaluate(
    dataset: DatasetArtifact, config: PLNLPConfig, workers: WorkerGroup, work: Path,
) -> dict[str, float]:
    """One seed of one config; returns its ``final_*`` metrics."""
    walks = augment(dataset, config, str(work / "walks")) if config.uses_random_walk else None
    trained = train(dataset, walks, config, str(work), workers,
                    mlflow.get_tracking_uri(), mlflow.active_run().info.run_id)
    final = ray.get(evaluate_checkpoint.remote(dataset, trained, config))
    mlflow.log_metrics({**final, "best_epoch": trained.best_epoch})
    log_training(trained, dataset.meta.metric.replace("@", "_"))
    return final
