"""Train -> Tune: a sweep trial's evaluations, passed on from its Ray Train
run to the Tune trial that started it, so that a scheduler can stop it."""
import queue

import ray
import ray.train
from ray.util.queue import Queue

from components.recording.tags import EPOCH, EPOCHS

CONTROLLER = "controller"


class SweepReporter(ray.train.UserCallback):
    """Puts each evaluated epoch a report carries (one report may carry
    several: see :class:`components.train.epoch_reporter.EpochReporter`) on
    ``reports`` as flat metrics: the epoch (the scheduler's time), the
    training loss and the validation metrics. Test metrics stay out, so the
    test set never steers a sweep; epochs without evaluation, and the last
    epoch (the trial reports it with its final metrics), pass nothing. With
    ``announce``, the first report also puts ``{"controller": <the Train
    controller's handle>}``, with which the trial aborts its training when
    Tune stops it.

    Built inside the Tune trial, run by Ray Train's controller, or by the
    trial itself when it trains alone (see
    :mod:`components.train.trial_training`).

    Args:
        reports (Queue): The trial's queue.
        metric (str): The validation metric the sweep compares, e.g.
            ``valid_hits_20``; a report without it is not passed on.
        epochs (int): The trial's last epoch.
        announce (bool): Pass on the controller's handle first.
    """

    def __init__(self, reports: "Queue | queue.Queue", metric: str, epochs: int,
                 announce: bool = True) -> None:
        self.reports = reports
        self.metric = metric
        self.epochs = epochs
        self.announced = not announce

    def after_report(self, run_context: object, metrics: list[dict],
                     checkpoint: ray.train.Checkpoint | None) -> None:
        if not self.announced:
            self.reports.put({CONTROLLER: ray.get_runtime_context().current_actor})
            self.announced = True
        for row in metrics[0].get(EPOCHS, []):  # rank 0's: the only one that evaluates
            if self.metric not in row or int(row[EPOCH]) >= self.epochs:
                continue
            passed = {key: float(value) for key, value in row.items()
                      if key.startswith("valid_") or key in ("train_loss", "train_score_gap")}
            self.reports.put({**passed, EPOCH: int(row[EPOCH])})
