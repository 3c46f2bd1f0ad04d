"""The stages after ``load`` for one config, shared by the main job and the
sweep's trials: augment -> train -> evaluate, recorded in the active MLflow run."""
import shutil
import time
from pathlib import Path

import mlflow
import ray

from components.artifacts import DatasetArtifact
from components.augment import augment
from components.evaluate import evaluate_checkpoint
from components.tracking import log_training
from components.train import CHECKPOINTS_TAG, WorkerGroup, train
from plnlp_core.config import PLNLPConfig


def train_and_evaluate(
    dataset: DatasetArtifact, config: PLNLPConfig, workers: WorkerGroup, checkpoints: Path,
    max_failures: int = 3,
) -> dict[str, float]:
    """One seed of one config in the active MLflow run; returns its
    ``final_*`` metrics. Training checkpoints go to ``checkpoints/<run id>``
    (the run's ``plnlp.checkpoints`` tag), kept until the run finishes so
    that ``--resume`` can go on from them."""
    cache_root = str(Path(dataset.directory).parent)  # walks are cached beside their splits
    walks = augment(dataset, config, cache_root) if config.uses_random_walk else None
    run_id = mlflow.active_run().info.run_id
    storage = checkpoints / run_id
    mlflow.set_tag(CHECKPOINTS_TAG, str(storage))
    start = time.perf_counter()
    trained = train(dataset, walks, config, str(storage), workers, mlflow.get_tracking_uri(),
                    run_id, max_failures)
    train_seconds = time.perf_counter() - start
    final = ray.get(evaluate_checkpoint.remote(dataset, trained, config))
    mlflow.log_metrics({**final, "best_epoch": trained.best_epoch,
                        "train_stage_seconds": train_seconds,
                        "fit_seconds": trained.fit_seconds})
    log_training(trained, dataset.meta.metric.replace("@", "_"),
                 mlflow.active_run().info.run_name)
    shutil.rmtree(storage, ignore_errors=True)  # MLflow holds the best model now
    return final
