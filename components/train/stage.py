"""Stage ``train``: Ray Train runs PLNLP on N workers (DDP, under a
``TorchTrainer``); each worker ranks its share of the positive pairs (see
:func:`components.train.worker.train_worker`). One worker trains in a Ray
actor of its own (:mod:`components.train.training_actor`)."""
import json
import threading
from collections.abc import Collection

import ray.train
import ray.train.torch
from ray.exceptions import RayActorError

from components.artifacts import DatasetArtifact, HeartArtifact, TrainArtifact, WalkArtifact
from components.recording.epoch_logger import EpochLogger
from components.storage.location import Location
from components.train.checkpoint_reader import newest_checkpoint
from components.train.checkpoint_writer import BEST_DIR, BEST_FILE, HISTORY_FILE, TIMING_FILE
from components.train.startup import mark
from components.train.training_actor import fit_training_actor
from components.train.trial_training import train_in_trial
from components.train.worker import train_worker
from components.train.worker_group import WorkerGroup
from plnlp_core.config import PLNLPConfig


def train(
    dataset: DatasetArtifact, walks: WalkArtifact | None, config: PLNLPConfig,
    storage: Location, workers: WorkerGroup | None = None,
    tracking_uri: str | None = None, run_id: str | None = None, max_failures: int = 3,
    callbacks: list[ray.train.UserCallback] = (), decision_epochs: Collection[int] = (),
    export: bool = False, stop: threading.Event | None = None,
    heart: HeartArtifact | None = None, label: str | None = None,
) -> TrainArtifact:
    """Trains with the DDP ``workers`` and returns the checkpoint of the best
    validation epoch. With ``run_id``, every epoch's metrics are logged to
    that MLflow run. ``decision_epochs`` are the epochs at which a sweep's
    scheduler decides: their evaluations are reported at once.

    Every ``config.checkpoint_every`` epochs (and after the last) the whole
    training state is checkpointed under ``storage``. When a worker or the
    worker group dies, Ray Train starts a new group up to ``max_failures``
    times, and training goes on from the latest checkpoint; a new call with
    the same ``storage`` and ``run_id`` (``--resume``) does the same.
    ``callbacks`` see every report after the MLflow logger has. With
    ``export``, rank 0 ends by writing the final metrics and the best
    model's scorer into ``storage``, in place of an earlier attempt's (see
    :mod:`components.evaluate`), its metrics with HeaRT's on ``heart``.

    With ``stop`` (a sweep trial of one worker), trains in this process,
    with no Train worker group (see
    :mod:`components.train.trial_training`); Tune restarts the trial
    after a failure, and it goes on from its newest checkpoint. Any other
    run of one worker trains in an actor of its own, with no Train worker
    group either (see :mod:`components.train.training_actor`). ``label``
    (a sweep's trial) heads each epoch's console line."""
    workers = workers or WorkerGroup()
    loop_config = {
        "config": config.to_dict(), "dataset_dir": dataset.directory, "walks": walks,
        "decision_epochs": sorted(decision_epochs),
        "export_dir": storage if export else None, "heart": heart,
        "label": label,
    }
    name = f"plnlp-{config.dataset}-{run_id or 'run'}"
    callbacks = [*([EpochLogger(tracking_uri, run_id)] if run_id else []), *callbacks]
    mark("augment")  # the walks, if any, are at hand
    if stop is not None:
        newest = train_in_trial(loop_config, storage / name, callbacks,
                                workers.cpus_per_worker, workers.use_gpu, stop)
    elif workers.num_workers == 1:
        newest = fit_training_actor(loop_config, workers, storage / name, max_failures,
                                    callbacks)
    else:
        newest = fit_worker_group(loop_config, workers, storage, name, max_failures,
                                  callbacks)
    checkpoint = storage.relative(newest)
    best = json.loads((checkpoint / BEST_DIR / BEST_FILE).read_text())
    history = json.loads((checkpoint / HISTORY_FILE).read_text())
    timing = json.loads((checkpoint / TIMING_FILE).read_text())
    return TrainArtifact(checkpoint / BEST_DIR, best["epoch"], best["metrics"], history,
                         timing["fit_seconds"], timing.get("startup", {}))


def fit_worker_group(loop_config: dict, workers: WorkerGroup, storage: Location, name: str,
                     max_failures: int, callbacks: list[ray.train.UserCallback]) -> str:
    """Trains with Ray Train's DDP worker group; returns the path of the newest
    checkpoint (the one a ``--resume`` that found nothing left to train
    went on from, when Train reported none).

    A worker that dies while Train starts its group (after the group's
    placement, before the training function runs) ends Ray Train 2.60's
    run with a :class:`~ray.train.ControllerError` its failure policy does
    not retry; such a run is fitted again under the same name, so that it
    goes on from its newest checkpoint, as a worker lost later does, up to
    ``max_failures`` more times."""
    storage_path, storage_filesystem = storage.ray_storage()
    run_config = ray.train.RunConfig(
        name=name, storage_path=storage_path, storage_filesystem=storage_filesystem,
        checkpoint_config=ray.train.CheckpointConfig(num_to_keep=1),
        failure_config=ray.train.FailureConfig(max_failures=max_failures),
        callbacks=callbacks, logging_config=ray.train.LoggingConfig(log_level="WARNING"),
    )
    for attempt in range(max_failures + 1):
        trainer = ray.train.torch.TorchTrainer(train_worker, train_loop_config=loop_config,
                                               scaling_config=workers.scaling_config(),
                                               run_config=run_config)
        try:
            result = trainer.fit()
            break
        except ray.train.ControllerError as error:
            if not isinstance(error.controller_failure, RayActorError) or attempt == max_failures:
                raise
            print(f"A Train worker died while its group was starting ({error.controller_failure}"
                  f"); starting a new group from the newest checkpoint ({attempt + 1} of "
                  f"{max_failures} restarts).", flush=True)
    if result.checkpoint is None:
        return newest_checkpoint(storage / name, workers.num_workers)
    return result.checkpoint.path

