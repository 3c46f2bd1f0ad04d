"""The Kubeflow pipeline's steps as kfp components: load, augment, train,
evaluate and the optional sweep, each a shell with typed inputs and outputs
around its work in :mod:`pipelines.runtime.kubeflow.steps`.

kfp ships each body to its container as source, without this module, so each
body imports what it uses itself (the repository is on the container's
``PYTHONPATH``: the image's, or :func:`~pipelines.runtime.kubeflow.local_run.run_local`'s).
"""
from typing import NamedTuple

from kfp import dsl
from kfp.dsl import Dataset, Input, Metrics, Model, Output

from pipelines.runtime.kubeflow.cluster import BASE_IMAGE


@dsl.component(base_image=BASE_IMAGE, install_kfp_package=False)
def load(dataset: str, data_root: str, work_dir: str, splits: Output[Dataset]) -> None:
    """Stage ``load``: the graph's canonical Parquet splits and ``meta.json``."""
    from pipelines.runtime.kubeflow.steps import load_step

    load_step(dataset, data_root, work_dir, splits.path)


@dsl.component(base_image=BASE_IMAGE, install_kfp_package=False)
def augment(
    splits: Input[Dataset], dataset: str, preset: str, overrides: list[str], work_dir: str,
    yes: bool, walks: Output[Dataset],
) -> None:
    """Stage ``augment``: the random-walk pairs (Parquet, a folder per round),
    or, when the config walks not, an empty folder; ``num_pairs`` and
    ``rounds`` in its metadata."""
    from pipelines.runtime.kubeflow.step_request import step_request
    from pipelines.runtime.kubeflow.steps import augment_step

    request = step_request(dataset, preset, overrides, work_dir=work_dir, yes=yes)
    walked = augment_step(splits.path, request, walks.path)
    walks.metadata.update({"num_pairs": walked.num_pairs, "rounds": walked.rounds})


@dsl.component(base_image=BASE_IMAGE, install_kfp_package=False)
def train(
    splits: Input[Dataset], walks: Input[Dataset], dataset: str, preset: str,
    overrides: list[str], work_dir: str, num_workers: int, cpus_per_worker: int, gpus: int,
    max_failures: int, experiment: str, yes: bool, model: Output[Model],
    metrics: Output[Metrics],
) -> NamedTuple("TrainOutputs", [("mlflow_run_id", str)]):
    """Stage ``train``: Ray Train's DDP workers (a GPU each when ``gpus`` > 0)
    in a new MLflow run that logs every epoch; ``model`` holds the best
    validation epoch's ``model.pt`` and the run's ``config.yaml``,
    ``metrics`` that epoch's validation metrics."""
    from components.artifacts import WalkArtifact
    from components.storage.location import Location
    from pipelines.runtime.kubeflow.step_request import step_request
    from pipelines.runtime.kubeflow.steps import train_step

    request = step_request(dataset, preset, overrides, num_workers, cpus_per_worker, gpus,
                           work_dir=work_dir, max_failures=max_failures, experiment=experiment,
                           yes=yes)
    counts = [int(walks.metadata[key]) for key in ("num_pairs", "rounds")]  # stored as floats
    walked = WalkArtifact(Location(walks.path), *counts)
    run_id, trained = train_step(splits.path, walked, request, model.path)
    model.metadata.update({"best_epoch": trained.best_epoch, "mlflow_run_id": run_id})
    metrics.log_metric("best_epoch", trained.best_epoch)
    for key, value in trained.best_metrics.items():
        metrics.log_metric(f"best_{key}", value)
    return (run_id,)


@dsl.component(base_image=BASE_IMAGE, install_kfp_package=False)
def evaluate(
    splits: Input[Dataset], model: Input[Model], mlflow_run_id: str, experiment: str,
    metrics: Output[Metrics],
) -> None:
    """Stage ``evaluate``: OGB's Evaluator on the best checkpoint; the
    ``final_*`` metrics go to ``metrics`` and to the train step's MLflow run,
    which ends FINISHED."""
    from pipelines.runtime.kubeflow.steps import evaluate_step

    for key, value in evaluate_step(splits.path, model.path, mlflow_run_id, experiment).items():
        metrics.log_metric(key, value)


@dsl.component(base_image=BASE_IMAGE, install_kfp_package=False)
def sweep(
    dataset: str, space: str, overrides: list[str], data_root: str, work_dir: str,
    num_samples: int, gpus: int,
) -> None:
    """The sweep: ``python pipelines/tune.py --dataset DATASET --space SPACE``
    (a path in the image, relative to the repository), ``overrides`` fixed
    for every trial; ``num_samples`` 0 takes the space's, ``gpus`` > 0 gives
    each trial's worker a GPU (the space's resources otherwise)."""
    from pathlib import Path

    from pipelines.planning.request import SweepRequest
    from pipelines.runtime.kubeflow.steps import sweep_step

    sweep_step(SweepRequest(dataset, Path(space), overrides=tuple(overrides),
                            num_samples=num_samples or None, data_root=data_root or None,
                            work_dir=work_dir or None, gpus_per_worker=1 if gpus > 0 else None))
