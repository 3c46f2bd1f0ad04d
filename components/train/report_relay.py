"""A training actor's reports, relayed to the run's callbacks in the driver.

A run of one worker trains in a :class:`~components.train.training_actor.TrainingActor`;
its reports wait there in a :class:`ReportQueue` until the driver takes
them (:class:`ReportRelay`) and hands each to the run's callbacks, as Ray
Train's controller hands its workers' reports to its own. So the training
process never loads MLflow nor opens its store: the driver has both open
already, and its core is idle while the actor trains (on 2 CPU cores,
MLflow's import and store cost the actor's first epoch 0.7 s and every
later epoch a share of 1.2 s more).

An interrupted driver takes the reports one last time
(:meth:`ReportRelay.last_flush`), and the training stops at its next report,
before that epoch is printed: so every epoch a run printed reaches MLflow."""
import threading

import ray

from components.train.session import TrialStopped

REPORT_WAIT_S = 1.0
"""Longest a driver's request for reports waits in the actor for a new one."""
Report = tuple[dict, object]
"""One report: rank 0's metrics and its checkpoint (a ``ray.train.Checkpoint``, or ``None``)."""


class ReportQueue:
    """The reports of a training in this process, kept until the driver has
    taken them; a callback of :class:`~components.train.session.TrialSession`."""

    def __init__(self) -> None:
        self._reports: list[Report] = []
        self._taken = 0  # reports before self._reports[0], taken by the driver
        self._closed = False
        self._last_taken = False
        self._changed = threading.Condition()

    def after_report(self, run_context: object, metrics: list[dict], checkpoint: object) -> None:
        with self._changed:
            if self._last_taken:  # the driver was interrupted: not printed, not reported
                raise TrialStopped
            self._reports.append((metrics[0], checkpoint))
            self._changed.notify_all()

    def close(self) -> None:
        """The training ended: no report follows."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def after(self, count: int, timeout: float) -> tuple[list[Report], bool]:
        """The reports after the first ``count``, waiting up to ``timeout``
        seconds for one when there are none, and whether the training has
        ended (every report is then among them); forgets the first ``count``."""
        with self._changed:
            self._changed.wait_for(lambda: self._closed or self._taken + len(self._reports) > count,
                                   timeout)
            if count > self._taken:  # a request never asks again for what it was given
                del self._reports[:count - self._taken]
                self._taken = count
            return list(self._reports), self._closed

    def last(self, count: int) -> list[Report]:
        """The reports after the first ``count``, taken for the last time:
        the training raises :class:`~components.train.session.TrialStopped`
        at its next report, before its epoch is printed, so that each epoch
        it prints is among the reports the driver took."""
        with self._changed:
            self._last_taken = True
            return self.after(count, 0.0)[0]


class ReportRelay:
    """Takes ``actor``'s reports (its ``reports_after`` and ``last_reports``
    methods answer :meth:`ReportQueue.after` and :meth:`ReportQueue.last`)
    and hands each to ``callbacks``, called as Ray Train's controller calls
    them, in the order they were made.

    Args:
        actor (ray.actor.ActorHandle): The training actor.
        callbacks (list): ``ray.train.UserCallback``\\ s (the run's
            :class:`~components.recording.epoch_logger.EpochLogger`).
    """

    def __init__(self, actor: ray.actor.ActorHandle, callbacks: list) -> None:
        self.actor, self.callbacks = actor, callbacks
        self.relayed = 0

    def follow(self, training: ray.ObjectRef) -> object:
        """Relays the reports until the training ends; returns what it
        returned, or raises what it raised (after relaying the reports it
        made before)."""
        ended = False
        while not ended:
            reports, ended = ray.get(self.actor.reports_after.remote(self.relayed, REPORT_WAIT_S))
            self._pass_on(reports)
        return ray.get(training)

    def last_flush(self, timeout: float) -> bool:
        """Relays the reports made so far and stops the training at its
        next (:meth:`ReportQueue.last`), waiting at most ``timeout`` seconds
        for the actor to answer (an interrupted run's, before the actor is
        ended); whether it answered."""
        try:
            reports = ray.get(self.actor.last_reports.remote(self.relayed), timeout=timeout)
        except ray.exceptions.RayError:  # it died, or did not answer: nothing more to relay
            return False
        self._pass_on(reports)
        return True

    def _pass_on(self, reports: list[Report]) -> None:
        for metrics, checkpoint in reports:
            for callback in self.callbacks:
                callback.after_report(None, [metrics], checkpoint)
            self.relayed += 1
