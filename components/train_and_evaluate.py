"""One config's augment -> train -> evaluate, as the main job runs each seed
and a sweep each trial, recorded in the active MLflow run."""
import threading
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager

import ray
import ray.train

from components.artifacts import DatasetArtifact, HeartArtifact, TrainArtifact, WalkArtifact
from components.augment import augment
from components.evaluate import log_final
from components.heart import heart_stage
from components.recording.dataset_inputs import log_dataset_inputs
from components.recording.reads import active_run_info, tracking_uri
from components.recording.run_lifecycle import tag_run, untag_run
from components.recording.run_records import log_metrics, log_training
from components.recording.tags import CHECKPOINTS_TAG
from components.storage.location import Location
from components.storage.split_inputs import split_inputs
from components.train.stage import train
from components.train.startup import COMMAND, DRIVER_MARKS, startup_phases
from components.train.worker_group import WorkerGroup
from plnlp_core.config import PLNLPConfig


def train_and_evaluate(
    dataset: DatasetArtifact, config: PLNLPConfig, workers: WorkerGroup,
    checkpoints: Location,
    max_failures: int = 3, callbacks: list[ray.train.UserCallback] = (),
    decision_epochs: Collection[int] = (), stop: threading.Event | None = None,
    heart: HeartArtifact | None = None, label: str | None = None,
) -> dict[str, float]:
    """One seed of one config in the active MLflow run: its random walks
    (when it uses them) and HeaRT's negatives (when it is scored on them:
    ``heart``, which the caller built once for all its seeds or trials,
    else :func:`components.heart.heart_stage`), :func:`train_in_run`, then
    the best model's ``final_*`` metrics, logged and returned, and the best
    model as the run's MLflow ``model``. The training worker writes both
    where it trained, on its GPU or CPU threads, before it ends, and the
    driver logs them (see :mod:`components.evaluate`). The training
    checkpoints are removed once MLflow holds the best model. ``stop`` and ``label``: see
    :func:`train_in_run`."""
    config.validate_graph(dataset.meta.num_nodes, dataset.meta.categories)
    cache_root = dataset.directory.parent  # walks are cached beside their splits
    walks = augment(dataset, config, cache_root) if config.uses_random_walk else None
    if heart is None or (heart.num_negatives, heart.mode) != (config.heart_negatives,
                                                               config.heart_mode):
        heart = heart_stage(dataset, config, workers.cpus_per_worker)
    with run_checkpoints(checkpoints) as storage:
        train_in_run(dataset, walks, config, workers, storage, max_failures, callbacks,
                     decision_epochs, export=True, stop=stop, heart=heart, label=label)
        return log_final(storage)


@contextmanager
def run_checkpoints(checkpoints: Location) -> Iterator[Location]:
    """The active MLflow run's training checkpoints, ``checkpoints/<run
    id>`` (its ``plnlp.checkpoints`` tag), removed with the tag when the
    block ends without an error, once MLflow holds the best model; a failed
    or interrupted run keeps them, so that ``--resume`` can go on from them."""
    storage = checkpoints / active_run_info().run_id
    tag_run(CHECKPOINTS_TAG, storage.uri)
    yield storage
    storage.remove()
    untag_run(CHECKPOINTS_TAG)  # it would name a folder that is gone


def train_in_run(
    dataset: DatasetArtifact, walks: WalkArtifact | None, config: PLNLPConfig,
    workers: WorkerGroup, storage: Location, max_failures: int = 3,
    callbacks: list[ray.train.UserCallback] = (), decision_epochs: Collection[int] = (),
    export: bool = False, stop: threading.Event | None = None,
    heart: HeartArtifact | None = None, label: str | None = None,
) -> TrainArtifact:
    """Trains ``config`` in the active MLflow run, which records its
    splits as dataset inputs (see :mod:`components.recording.dataset_inputs`),
    every epoch, the best epoch, the timings, the best checkpoint and the
    learning curve. Training checkpoints go to ``storage`` (see
    :func:`run_checkpoints`); with ``export``, the final metrics and the
    scorer too (see :func:`components.evaluate.log_final`), scored on
    ``heart``'s negatives too.
    ``callbacks`` see Train's reports (a sweep trial's
    :class:`components.sweep.reporter.SweepReporter`, with its scheduler's
    ``decision_epochs``). The first training of this process also logs
    where its start-up went (``startup_*_s``, see
    :mod:`components.train.startup`). With ``stop`` (a sweep trial of
    one worker), it trains in this process, without a Train worker group
    (see :func:`components.train.stage.train`). ``label`` (a sweep's trial) heads
    each epoch's console line. The caller has checked ``config`` against the
    graph (``validate_graph``)."""
    run = active_run_info()
    log_dataset_inputs(split_inputs(dataset.directory, dataset.meta))
    start = time.perf_counter()
    trained = train(dataset, walks, config, storage, workers, tracking_uri(), run.run_id,
                    max_failures, callbacks, decision_epochs, export, stop, heart, label)
    log_metrics({"best_epoch": trained.best_epoch,
                 "train_stage_seconds": time.perf_counter() - start,
                 "fit_seconds": trained.fit_seconds, **first_startup(trained)})
    log_training(trained, dataset.meta.metric.replace("@", "_"), run.run_name)
    return trained


def first_startup(trained: TrainArtifact) -> dict[str, float]:
    """The start-up phases of this process's first training (later seeds
    of a run start from a warm Ray and say nothing, and so does a
    ``--resume`` that found nothing left to train: the marks it read back
    from the newest checkpoint are the earlier command's)."""
    first_epoch = trained.startup.get("first_epoch")
    if "first_epoch" in DRIVER_MARKS or first_epoch is None \
            or first_epoch < DRIVER_MARKS.get(COMMAND, first_epoch):
        return {}
    marks = {**DRIVER_MARKS, **trained.startup}
    DRIVER_MARKS["first_epoch"] = marks["first_epoch"]
    return startup_phases(marks)
