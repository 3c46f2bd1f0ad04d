"""A run of one worker: trained in one Ray actor of its own instead of a
Ray Train controller and worker group (seven processes, about 9 s on 2
cores before the first epoch, for what needs one).

It keeps what the worker group gives a run: checkpoints in the run's
storage folder (where Ray Train would write them, so ``--resume`` finds
them either way), a dead actor (a killed process, a lost node) replaced up
to ``max_failures`` times by one that goes on from the newest complete
checkpoint, every epoch logged once (the callbacks run in the actor, and
:class:`~components.recording.epoch_logger.EpochLogger` skips the epochs
MLflow holds), and an interrupt of the driver ending the actor, once the
epochs it printed are in MLflow.

The actor's process spends most of its start importing torch, PyG and the
training code (9 s of 12 on a slow 2-core day, against half a second for
an empty actor): :func:`training_actor_started` lets a run start it first,
so that those imports go on while the driver opens the MLflow run and
runs the stages before training."""
import importlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import ray
import ray.train

from components.recording.epoch_logger import EpochLogger
from components.storage.location import Location
from components.train.trial_training import train_in_trial
from components.train.workers import WorkerGroup

_STARTED: dict[WorkerGroup, ray.actor.ActorHandle] = {}
"""Actors started ahead of their training, by the worker group they are for."""


INTERRUPT_DELIVERY_S = 15.0
"""Seconds an interrupted driver gives its actor to log the epochs it has
reported (well within the 30 s a Kubernetes pod gets between SIGTERM and
SIGKILL)."""


# The driver starts a new one, from the newest checkpoint; two threads, so
# that ``deliver`` answers while ``train`` runs.
@ray.remote(max_restarts=0, max_concurrency=2)
class TrainingActor:
    """The process one worker's training runs in."""

    def __init__(self) -> None:
        # MLflow, which the run's EpochLogger imports at the first report,
        # loads beside the training's start instead of after its first epoch.
        threading.Thread(target=importlib.import_module, args=("mlflow.tracking",),
                         daemon=True).start()
        self.loggers: list[EpochLogger] = []

    def train(self, loop_config: dict, folder: Location,
              callbacks: list[ray.train.UserCallback], cpus: int, use_gpu: bool) -> str:
        """:func:`~components.train.trial_training.train_in_trial`, never stopped early."""
        self.loggers = [callback for callback in callbacks if isinstance(callback, EpochLogger)]
        return train_in_trial(loop_config, folder, callbacks, cpus, use_gpu, threading.Event())

    def deliver(self, timeout: float) -> None:
        """Waits at most ``timeout`` seconds for every epoch reported so far
        to be in MLflow."""
        deadline = time.monotonic() + timeout
        for logger in self.loggers:
            logger.wait(max(0.0, deadline - time.monotonic()))


def fit_training_actor(loop_config: dict, workers: WorkerGroup, folder: Location,
                       max_failures: int, callbacks: list[ray.train.UserCallback]) -> str:
    """Trains as one worker of ``workers`` in a :class:`TrainingActor`
    holding its CPUs and GPU share, checkpointing into ``folder``; returns
    the path of the newest checkpoint. An actor that dies is replaced up to
    ``max_failures`` times; an error the training raises ends the run at
    once, as its cause (it would happen again)."""
    restarts = 0
    while True:
        actor = _STARTED.pop(workers, None) or new_actor(workers)
        try:
            return ray.get(actor.train.remote(loop_config, folder, callbacks,
                                              workers.cpus_per_worker, workers.use_gpu))
        except ray.exceptions.RayActorError as error:
            if restarts == max_failures:
                raise
            restarts += 1
            print(f"The training actor died ({error.__class__.__name__}); starting a new one "
                  f"from the newest checkpoint ({restarts} of {max_failures} restarts).",
                  flush=True)
        except ray.exceptions.RayTaskError as error:
            raise remote_cause(error) from None
        except KeyboardInterrupt:
            delivered_before_the_end(actor)
            raise
        finally:
            ray.kill(actor, no_restart=True)


def delivered_before_the_end(actor: ray.actor.ActorHandle) -> None:
    """Gives an interrupted run's ``actor`` :data:`INTERRUPT_DELIVERY_S`
    to put the epochs it printed into MLflow before it is killed."""
    try:
        ray.get(actor.deliver.remote(INTERRUPT_DELIVERY_S), timeout=INTERRUPT_DELIVERY_S + 5)
    except ray.exceptions.RayError:  # it died, or did not answer: nothing more to wait for
        pass


def remote_cause(error: ray.exceptions.RayTaskError) -> BaseException:
    """The exception the actor raised, as the run reports a failure (one
    sentence), carrying the actor's traceback as a note for ``--verbose``."""
    if error.cause is None:
        return error
    error.cause.add_note(str(error))
    return error.cause



@contextmanager
def training_actor_started(workers: WorkerGroup) -> Iterator[None]:
    """Starts the :class:`TrainingActor` of a run of one worker now, for
    the run's first training to take, when the cluster can hold it beside
    the one-CPU tasks of the stages before training (else those would wait
    for it); ends it at the end if no training took it."""
    if workers.num_workers == 1 and fits_beside_a_stage(workers):
        _STARTED[workers] = new_actor(workers)
    try:
        yield
    finally:
        unused = _STARTED.pop(workers, None)
        if unused is not None:
            ray.kill(unused, no_restart=True)


def fits_beside_a_stage(workers: WorkerGroup) -> bool:
    """Whether the cluster has the worker's CPUs and GPU share free, and one CPU more."""
    free = ray.available_resources()
    wanted = {**workers.per_worker(), "CPU": workers.cpus_per_worker + 1}
    return all(free.get(name, 0) >= amount for name, amount in wanted.items())


def new_actor(workers: WorkerGroup) -> ray.actor.ActorHandle:
    """A :class:`TrainingActor` holding one worker's CPUs and GPU share."""
    return TrainingActor.options(**actor_resources(workers)).remote()


def actor_resources(workers: WorkerGroup) -> dict[str, float]:
    """``num_cpus`` and ``num_gpus`` of one worker of ``workers``."""
    held = workers.per_worker()
    return {"num_cpus": held["CPU"], "num_gpus": held.get("GPU", 0)}
