"""A run of one worker: trained in one Ray actor of its own instead of a
Ray Train controller and worker group (seven processes, about 9 s on 2
cores before the first epoch, for what needs one).

It keeps what the worker group gives a run: checkpoints in the run's
storage folder (where Ray Train would write them, so ``--resume`` finds
them either way), a dead actor (a killed process, a lost node) replaced up
to ``max_failures`` times by one that goes on from the newest complete
checkpoint, every epoch logged once (the driver runs the callbacks on the
actor's reports, :mod:`components.train.report_relay`, as Train's
controller does, and :class:`~components.recording.epoch_logger.EpochLogger`
skips the epochs MLflow holds), and an interrupt of the driver stopping the
actor's training and ending the actor, once the epochs it printed are in MLflow.

The actor's process spends most of its start importing torch, PyG and the
training code (9 s of 12 on a slow 2-core day, against half a second for
an empty actor): :func:`training_actor_started` lets a run start it first,
so that those imports go on while the driver opens the MLflow run and
runs the stages before training. On one node, where the actor holds no CPUs
between trainings, one that trained well is kept for this driver's next
training of the same worker group (the next seed of ``--runs``, a
notebook's next :func:`~pipelines.run.run_job`), which then starts at once
(:func:`kept_for_the_next_training`)."""
import functools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import ray
import ray.train
from ray.util.placement_group import placement_group, remove_placement_group

from components.ray_cleanup import UNDELIVERED_NOTE, cleaned_up, ray_answers
from components.recording.epoch_logger import EpochLogger
from components.storage.location import Location
from components.train.report_relay import Report, ReportQueue, ReportRelay
from components.train.session import TrialStopped
from components.train.trial_training import train_in_trial
from components.train.worker_group import WorkerGroup
from plnlp_core.choices import PART_KINDS
from plnlp_core.parts.import_path import is_import_path

_STARTED: dict[WorkerGroup, tuple[ray.actor.ActorHandle, bool]] = {}
"""Actors started ahead of their training, by the worker group they are
for, and whether their CPUs are still to be reserved (:func:`cpus_reserved`)."""

_KEPT: list[tuple[WorkerGroup, ray.actor.ActorHandle, tuple[str, str]]] = []
"""At most one actor that trained well and holds no CPUs, with the worker
group it trained for and its Ray job (see :func:`kept_for_the_next_training`)."""


INTERRUPT_DELIVERY_S = 15.0
"""Seconds an interrupted driver gives the epochs its actor reported to
reach MLflow (well within the 30 s a Kubernetes pod gets between SIGTERM and
SIGKILL)."""

ACTOR_ANSWER_S = 2.0
"""Seconds an interrupted driver waits for its actor's last reports: a live
actor answers at once; one that ended with the driver's process group never does."""


# The driver starts a new one, from the newest checkpoint; two threads, so
# that ``reports_after`` answers while ``train`` runs.
@ray.remote(max_restarts=0, max_concurrency=2)
class TrainingActor:
    """The process one worker's training runs in; its reports wait for the
    driver in a :class:`~components.train.report_relay.ReportQueue`."""

    def __init__(self) -> None:
        self.reports = ReportQueue()

    def next_training(self) -> None:
        """Readies a kept actor for another training: its reports start anew."""
        self.reports = ReportQueue()

    def train(self, loop_config: dict, folder: Location, cpus: int,
              use_gpu: bool) -> str | None:
        """:func:`~components.train.trial_training.train_in_trial`, stopped
        early only by the driver's :meth:`last_reports` (then ``None``)."""
        reports = self.reports
        try:
            return train_in_trial(loop_config, folder, [reports], cpus, use_gpu,
                                  threading.Event())
        except TrialStopped:  # an interrupted driver took its last reports
            return None
        finally:
            reports.close()

    def reports_after(self, count: int, timeout: float) -> tuple[list[Report], bool]:
        """:meth:`~components.train.report_relay.ReportQueue.after`."""
        return self.reports.after(count, timeout)

    def last_reports(self, count: int) -> list[Report]:
        """:meth:`~components.train.report_relay.ReportQueue.last`."""
        return self.reports.last(count)


def fit_training_actor(loop_config: dict, workers: WorkerGroup, folder: Location,
                       max_failures: int, callbacks: list[ray.train.UserCallback]) -> str:
    """Trains as one worker of ``workers`` in a :class:`TrainingActor`
    holding its CPUs and GPU share, checkpointing into ``folder``, and
    hands its reports to ``callbacks`` here; returns the path of the newest
    checkpoint. An actor that dies is replaced up to ``max_failures``
    times; an error the training raises ends the run at once, as its cause
    (it would happen again). An interrupt first delivers the reports the
    actor holds and stops its training (:func:`delivered_before_the_end`),
    then ends the actor
    within :data:`~components.ray_cleanup.CLEANUP_CALL_S`. An actor that
    trained well is ended too, or kept for the next training (:func:`keepable`)."""
    restarts = 0
    while True:
        actor, unreserved = _STARTED.pop(workers, None) or waiting_actor(workers)
        relay, interrupted, trained = ReportRelay(actor, callbacks), False, False
        try:
            with cpus_reserved(workers.cpus_per_worker if unreserved else 0):
                checkpoint = relay.follow(actor.train.remote(
                    loop_config, folder, workers.cpus_per_worker, workers.use_gpu))
            trained = True
            return checkpoint
        except ray.exceptions.RayActorError as error:
            if restarts == max_failures:
                raise
            restarts += 1
            print(f"The training actor died ({error.__class__.__name__}); starting a new one "
                  f"from the newest checkpoint ({restarts} of {max_failures} restarts).",
                  flush=True)
        except ray.exceptions.RayTaskError as error:
            raise remote_cause(error) from None
        except KeyboardInterrupt as interrupt:
            interrupted = True
            delivered_before_the_end(relay, callbacks, interrupt)
            raise
        finally:
            if trained and keepable(workers, unreserved, loop_config):
                keep(workers, actor)
            else:
                ended = functools.partial(ray.kill, actor, no_restart=True)
                cleaned_up(ended) if interrupted else ended()


def delivered_before_the_end(relay: ReportRelay, callbacks: list[ray.train.UserCallback],
                             interrupt: KeyboardInterrupt) -> None:
    """Stops an interrupted run's training at its next report (before that
    epoch is printed) and gives the run :data:`INTERRUPT_DELIVERY_S` to put
    the epochs its actor printed into MLflow before the actor is ended. An
    actor that cannot be reached within :data:`ACTOR_ANSWER_S` (Ray ended
    with the driver, or an earlier clean-up call went unanswered) is named
    on ``interrupt``, as a note for the command's closing line."""
    deadline = time.monotonic() + INTERRUPT_DELIVERY_S
    if not (ray_answers() and relay.last_flush(ACTOR_ANSWER_S)):
        interrupt.add_note(UNDELIVERED_NOTE)
    for logger in callbacks:
        if isinstance(logger, EpochLogger):
            logger.wait(max(0.0, deadline - time.monotonic()))


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
    the run's first training to take, so that its imports go on beside the
    stages before training; ends it at the end if no training took it.

    On a cluster of one node (the local Ray, whose CPUs a worker holds all
    of, or one machine's ``ray start --head``) it holds no CPUs until its
    training starts (:func:`cpus_reserved`), and the actor
    :func:`kept_for_the_next_training` is taken when there is one: two
    runs started at once on a 2-CPU node each found a CPU for its actor and
    one for a stage free, and their actors then held both while the stages
    waited for one, for good. On several nodes it holds the worker's CPUs
    when the cluster can hold them beside the one-CPU tasks of those stages
    (else they would wait for it), so that it starts on a node that has them."""
    if workers.num_workers == 1 and on_one_node():
        _STARTED[workers] = (kept_for_the_next_training(workers)
                             or new_actor(workers, cpus=0), True)
    elif workers.num_workers == 1 and fits_beside_a_stage(workers):
        ended_kept_actor()
        _STARTED[workers] = (new_actor(workers), False)
    else:
        ended_kept_actor()
    try:
        yield
    except KeyboardInterrupt:
        if (unused := _STARTED.pop(workers, None)) is not None:
            cleaned_up(functools.partial(ray.kill, unused[0], no_restart=True))
        raise
    if (unused := _STARTED.pop(workers, None)) is not None:
        ray.kill(unused[0], no_restart=True)


def on_one_node() -> bool:
    """Whether the cluster has one node alive, where an actor holding no
    CPUs runs beside the CPUs its training reserves."""
    return sum(node["Alive"] for node in ray.nodes()) == 1


def keepable(workers: WorkerGroup, unreserved: bool, loop_config: dict) -> bool:
    """Whether an actor that trained well may wait for the next training:
    it holds no CPUs (``unreserved``) nor a GPU, and its config names no
    part of one's own, whose module a user may edit before the next run (a
    kept actor would train the version it imported)."""
    return unreserved and not workers.use_gpu \
        and not any(is_import_path(loop_config["config"].get(kind)) for kind in PART_KINDS)


def keep(workers: WorkerGroup, actor: ray.actor.ActorHandle) -> None:
    """Keeps ``actor``, which trained well for ``workers`` and holds no
    CPUs, for this driver's next training (ending one kept before)."""
    ended_kept_actor()
    _KEPT.append((workers, actor, this_ray_job()))


def kept_for_the_next_training(workers: WorkerGroup) -> ray.actor.ActorHandle | None:
    """The kept actor, readied for a training of ``workers``, if it was
    kept for that worker group by this Ray job and still answers; any
    other kept actor is ended (a run that trains otherwise, or in another
    actor, leaves no idle one beside it)."""
    if not _KEPT or _KEPT[0][0] != workers or _KEPT[0][2] != this_ray_job():
        ended_kept_actor()
        return None
    _, actor, _ = _KEPT.pop()
    try:
        ray.get(actor.next_training.remote(), timeout=ACTOR_ANSWER_S)
    except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
        ray.kill(actor, no_restart=True)
        return None
    return actor


def ended_kept_actor() -> None:
    """Ends the kept actor, if any (one of an earlier Ray job is gone already)."""
    while _KEPT:
        _, actor, job = _KEPT.pop()
        if job == this_ray_job():
            ray.kill(actor, no_restart=True)


def this_ray_job() -> tuple[str, str]:
    """This driver's node and job: a Ray started again in the same process
    may number its job as the last one did."""
    context = ray.get_runtime_context()
    return context.get_node_id(), context.get_job_id()


def waiting_actor(workers: WorkerGroup) -> tuple[ray.actor.ActorHandle, bool]:
    """The actor :func:`kept_for_the_next_training` (holding no CPUs until
    its training reserves them), else a new one holding its CPUs; and
    whether its CPUs are still to be reserved."""
    kept = kept_for_the_next_training(workers)
    return (kept, True) if kept is not None else (new_actor(workers), False)


def fits_beside_a_stage(workers: WorkerGroup) -> bool:
    """Whether the cluster has the worker's CPUs and GPU share free, and one CPU more."""
    free = ray.available_resources()
    wanted = {**workers.per_worker(), "CPU": workers.cpus_per_worker + 1}
    return all(free.get(name, 0) >= amount for name, amount in wanted.items())


@contextmanager
def cpus_reserved(count: int) -> Iterator[None]:
    """Holds ``count`` CPUs of the cluster while the block runs (a placement
    group): those of an actor started on the cluster's one node without them."""
    if not count:
        yield
        return
    group = placement_group([{"CPU": count}])
    try:
        ray.get(group.ready())  # the stages before training have ended: at once
        yield
    except KeyboardInterrupt:
        cleaned_up(functools.partial(remove_placement_group, group))
        raise
    except BaseException:
        remove_placement_group(group)
        raise
    remove_placement_group(group)


def new_actor(workers: WorkerGroup, cpus: int | None = None) -> ray.actor.ActorHandle:
    """A :class:`TrainingActor` holding one worker's GPU share and its CPUs
    (or ``cpus`` of them)."""
    resources = actor_resources(workers)
    if cpus is not None:
        resources["num_cpus"] = cpus
    return TrainingActor.options(**resources).remote()


def actor_resources(workers: WorkerGroup) -> dict[str, float]:
    """``num_cpus`` and ``num_gpus`` of one worker of ``workers``."""
    held = workers.per_worker()
    return {"num_cpus": held["CPU"], "num_gpus": held.get("GPU", 0)}
