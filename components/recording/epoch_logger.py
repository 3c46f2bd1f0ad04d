"""Train -> MLflow: every epoch of a training run, logged as its reports
reach Ray Train's controller, the driver of a run's training actor, or a
sweep trial's actor."""
import time
from collections import deque

import ray.train

from components.recording.metric_delivery import MetricSender
from components.recording.tags import EPOCHS, FINAL, RESTORED_FROM, WALL_TIME

MLFLOW_BATCH = 1000  # metrics MLflow takes in one log_batch
Report = tuple[list[dict], int | None, int]
"""A report's epoch rows, the epoch a restart went on from, and when (ms)."""


class EpochLogger(ray.train.UserCallback):
    """Logs each epoch to an MLflow run once the report that carries it has
    reached the callbacks (Ray Train's controller, the driver that relays a
    run's training actor's reports, or a sweep trial's own actor), stamped
    with the time the epoch ended. A report lost with a dying worker is
    never logged: the restarted worker reports again the
    epochs after the checkpoint the controller holds, those of the
    checkpoint it goes on from and those it trains again. Epochs MLflow
    already holds (a run that goes on with ``--resume``, or epochs reported
    after the checkpoint a restart went back to) are not logged twice.

    The logging itself runs beside the training (a
    :class:`~components.recording.metric_delivery.MetricSender`), so a slow
    or absent tracking server never holds an epoch up; the run's last
    report waits for every epoch to be logged (:meth:`deliver`).

    Args:
        tracking_uri (str): The MLflow tracking URI.
        run_id (str): The run to log to.
    """

    def __init__(self, tracking_uri: str, run_id: str) -> None:
        self.tracking_uri = tracking_uri
        self.run_id = run_id
        self.logged_through: int | None = None
        self._unlogged: deque[Report] = deque()  # appended here, emptied by the sender's thread
        self._sender: MetricSender | None = None  # made where it runs: a thread does not pickle

    def after_report(
        self, run_context: object, metrics: list[dict], checkpoint: ray.train.Checkpoint | None,
    ) -> None:
        report = metrics[0]  # rank 0's: the only one that carries epochs
        rows = list(report.get(EPOCHS, []))
        restored = None if RESTORED_FROM not in report else int(report[RESTORED_FROM])
        self._unlogged.append((rows, restored, int(time.time() * 1000)))
        self.sender().send(self._log_unlogged)
        if report.get(FINAL):
            self.deliver()

    def deliver(self) -> None:
        """Returns once every epoch reported so far is in MLflow; raises
        :class:`~components.recording.metric_delivery.MetricsUndelivered`
        when the server stays away too long."""
        if self._sender is not None:
            self._sender.deliver()

    def wait(self, timeout: float) -> bool:
        """Waits at most ``timeout`` seconds for every epoch reported so far
        to be in MLflow; whether they are."""
        return self._sender is None or self._sender.wait(timeout)

    def sender(self) -> MetricSender:
        if self._sender is None:
            self._sender = MetricSender(self.tracking_uri, self.run_id)
        return self._sender

    def _log_unlogged(self, client: object) -> None:
        """Logs the epochs of every report not logged yet that MLflow does
        not hold, and the epochs restarts went on from, in batches; safe to
        repeat. Reports that came while the server was away go together."""
        # MLflow loads here, not with the module: Ray Train's controller
        # unpickles this callback before it starts the workers, and importing
        # MLflow there would delay them by a second and a half.
        from mlflow.entities import Metric

        reports = list(self._unlogged)
        if not reports:
            return  # an earlier delivery took them
        if self.logged_through is None:
            logged = client.get_metric_history(self.run_id, "train_loss")
            self.logged_through = max((m.step for m in logged), default=0)
        rows = {int(row["epoch"]): row for rows, _, _ in reports for row in rows
                if row["epoch"] > self.logged_through}
        logged = [Metric(key, float(value), int(row[WALL_TIME] * 1000), epoch)
                  for epoch, row in rows.items() for key, value in row.items()
                  if key not in ("epoch", WALL_TIME)]
        logged += [Metric(RESTORED_FROM, restored, at, restored)
                   for _, restored, at in reports if restored is not None]
        for start in range(0, len(logged), MLFLOW_BATCH):
            client.log_batch(self.run_id, metrics=logged[start:start + MLFLOW_BATCH])
        self.logged_through = max([self.logged_through, *rows])
        for _ in reports:
            self._unlogged.popleft()
