"""The stages as the main job and the sweep's trials run them: ``load`` once,
then augment -> train -> evaluate for each config, recorded in the active
MLflow run."""
import argparse
import shutil
import time
from pathlib import Path

import mlflow
import ray

from components.artifacts import DatasetArtifact
from components.augment import augment
from components.evaluate import evaluate_checkpoint
from components.load import OwnGraphOptions, load_dataset, load_own_dataset
from components.stage_cache import stage_cache_root
from components.tracking import log_training
from components.train import CHECKPOINTS_TAG, train
from components.workers import WorkerGroup
from pipelines.cli import GraphSource
from plnlp_core.config import PLNLPConfig
from plnlp_core.datasets import resolve_data_root


def load(args: argparse.Namespace, source: GraphSource) -> DatasetArtifact:
    """The ``load`` stage of ``source``: an OGB dataset under ``--data-root``,
    or a graph of one's own read as the ``--split`` and graph flags say."""
    cache = str(stage_cache_root(args.work_dir))
    if source.path is None:
        data_root = str(resolve_data_root(args.data_root).resolve())
        return ray.get(load_dataset.remote(source.info.name, data_root, cache))
    features = str(Path(args.node_features).resolve()) if args.node_features else None
    options = OwnGraphOptions(args.split, args.split_seed, args.directed, features,
                              source.info.hits_k)
    return ray.get(load_own_dataset.remote(str(source.path.resolve()), options, cache))


def train_and_evaluate(
    dataset: DatasetArtifact, config: PLNLPConfig, workers: WorkerGroup, checkpoints: Path,
    max_failures: int = 3,
) -> dict[str, float]:
    """One seed of one config in the active MLflow run; returns its
    ``final_*`` metrics. Training checkpoints go to ``checkpoints/<run id>``
    (the run's ``plnlp.checkpoints`` tag), kept until the run finishes so
    that ``--resume`` can go on from them."""
    config.validate_graph(dataset.meta.num_nodes)
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
